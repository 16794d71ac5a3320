"""The invoicing charge handler: one invoice line per (tenant, subscriber, month), exactly once.

The dispatcher sends one work message per active item of the customers table (the charge
message contract, ``idempotent_messaging.dispatch.keys``)::

    {"event_id": "<tenant>:<subscriber>:<YYYY-MM>", "idempotency_key": "<same>",
     "tenant_id": "...", "employee_id": "...", "month": "YYYY-MM",
     "amount": <int, minor units>, "currency": "EUR"}

on a FIFO queue, group ``<tenant>#<YYYY-MM>``. The effect is ONE row of the fan-out's ledger
table (``tenant_id`` + ``ledger_key`` = ``<subscriber>#<YYYY-MM>``) holding the invoice line with
its VAT, written by one conditional Put that also holds the charge's claim
(``SingleItemEffect``): a second fire of the month, a manual re-run or a redelivery finds it and
is a duplicate, never a second invoice. Then one ``invoice_issued`` notification, at least once.
"""

from __future__ import annotations

import json
from typing import Any

from idempotent_messaging.dispatch import env as dispatch_env
from idempotent_messaging.dispatch import keys
from idempotent_messaging.runtime import (
    Consumer,
    EventIdFromBody,
    Notification,
    SchemaError,
    SingleItemEffect,
    WriteContext,
    lambda_handler,
)

VAT_PERCENT = 19
LEDGER_HASH_KEY = dispatch_env.LEDGER_HASH_KEY  # tenant_id
LEDGER_RANGE_KEY = dispatch_env.LEDGER_RANGE_KEY  # ledger_key


def _line(message: Any) -> tuple[keys.BillableItem, str, str]:
    """(item, month, idempotency key) of a valid charge; SchemaError naming the field (never
    its value) otherwise."""
    if not isinstance(message, dict):
        raise SchemaError("body is not a JSON object")
    try:
        item = keys.BillableItem.parse(
            message.get(keys.BODY_TENANT),
            message.get(keys.BODY_EMPLOYEE),
            message.get(keys.BODY_AMOUNT),
            message.get(keys.BODY_CURRENCY),
        )
        month = keys.validate_month(message.get(keys.BODY_MONTH))
    except ValueError as exc:
        raise SchemaError(f"field {str(exc).split('=', 1)[0]!r} is missing or invalid") from None
    key = keys.idempotency_key(item.tenant_id, item.employee_id, month)
    if message.get(keys.BODY_IDEMPOTENCY_KEY) != key:
        raise SchemaError("idempotency_key is not '<tenant_id>:<employee_id>:<month>'")
    return item, month, key


def ledger_key_of(event_id: str) -> dict[str, str]:
    """The ledger row's key from the charge's event id ``<tenant>:<subscriber>:<YYYY-MM>``
    (ids never hold ``:``, dispatch.keys.validate_id): the event alone decides its row, which is
    what lets the claim live in it."""
    tenant, subscriber, month = event_id.split(":")
    return {LEDGER_HASH_KEY: tenant, LEDGER_RANGE_KEY: f"{subscriber}#{month}"}


def vat(net: int) -> int:
    """VAT in minor units, rounded half up."""
    return (net * VAT_PERCENT + 50) // 100


def invoice_writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    item, month, key = _line(message)
    tax = vat(item.amount)
    return [
        {
            "Put": {
                "TableName": ctx.business_table,
                "Item": {
                    **{k: {"S": v} for k, v in ledger_key_of(key).items()},
                    "invoice_key": {"S": key},
                    "subscriber": {"S": item.employee_id},
                    "month": {"S": month},
                    "net": {"N": str(item.amount)},
                    "vat": {"N": str(tax)},
                    "gross": {"N": str(item.amount + tax)},
                    "currency": {"S": item.currency},
                },
                "ConditionExpression": (
                    f"attribute_not_exists({LEDGER_HASH_KEY}) AND "
                    f"attribute_not_exists({LEDGER_RANGE_KEY})"
                ),
            }
        }
    ]


def invoice_notification(message: Any, event_id: str) -> Notification:
    item, month, _ = _line(message)
    return Notification(
        message=json.dumps(
            {
                "type": "invoice_issued",
                "invoice_key": event_id,
                "tenant_id": item.tenant_id,
                "subscriber": item.employee_id,
                "month": month,
                "gross": item.amount + vat(item.amount),
                "currency": item.currency,
            },
            sort_keys=True,
        ),
        subject="invoice issued",
        attributes={"tenant_id": item.tenant_id, "month": month},
    )


def _tenant(message: Any) -> str:
    tenant = message.get(keys.BODY_TENANT) if isinstance(message, dict) else None
    if not isinstance(tenant, str):
        raise SchemaError("field 'tenant_id' is missing or not a string")
    return tenant


INVOICES = Consumer(
    writes=invoice_writes,
    notification=invoice_notification,
    event_id=EventIdFromBody(keys.BODY_IDEMPOTENCY_KEY),
    namespace="invoice",
    tenant=_tenant,
    requires_business_table=True,
    effect=SingleItemEffect(key=(LEDGER_HASH_KEY, LEDGER_RANGE_KEY), key_of_event=ledger_key_of),
)

handler = lambda_handler(INVOICES)
