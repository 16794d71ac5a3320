"""Monthly charge consumer: ``handlers.charges.handler`` on the FIFO work queue.

Body (written by idempotent_messaging.dispatch, see src/idempotent_messaging/dispatch/keys.py)::

    {"event_id": "<tenant>:<employee>:<YYYY-MM>", "idempotency_key": "<same>",
     "tenant_id": "...", "employee_id": "...", "month": "YYYY-MM",
     "amount": <int minor units>, "currency": "JPY"}

Effect, in ONE conditional Put (the runtime library's, ``SingleItemEffect``): one ledger row
per (tenant, employee, month), ``tenant_id`` + ``ledger_key`` = ``<employee>#<YYYY-MM>``,
guarded by attribute_not_exists, holding the charge's claim (``claim_event_id`` = the
idempotency key, ``claim_status``, ...); the row's key derives from that key
(``ledger_key_of_event``, declared in the ``SingleItemEffect``). The claim lives as long as
the row (no TTL): a re-run of the same month, however late, meets the row and is a
duplicate, never a second charge; then (outside it) one notification per charge, at least
once. FIFO order per message group
(``<tenant>#<YYYY-MM>``) is kept by the runtime.
"""

from __future__ import annotations

import json
from typing import Any

from idempotent_messaging.dispatch import env as dispatch_env
from idempotent_messaging.dispatch.keys import (
    BODY_AMOUNT,
    BODY_CURRENCY,
    BODY_EMPLOYEE,
    BODY_IDEMPOTENCY_KEY,
    BODY_MONTH,
    BODY_TENANT,
    BillableItem,
    idempotency_key,
    validate_month,
)
from idempotent_messaging.runtime import (
    Consumer,
    EventIdFromBody,
    Notification,
    SchemaError,
    SingleItemEffect,
    WriteContext,
    logger,
    metrics,
)

NAMESPACE = "charge"
LEDGER_HASH_KEY = dispatch_env.LEDGER_HASH_KEY
LEDGER_RANGE_KEY = dispatch_env.LEDGER_RANGE_KEY


def ledger_key(employee_id: str, month: str) -> str:
    return f"{employee_id}#{month}"


def ledger_key_of_event(event_id: str) -> dict[str, str]:
    """The ledger row's key from the charge's event id (its idempotency key
    ``<tenant>:<employee>:<YYYY-MM>``; ids hold no ':' nor '#'): the claim kept in the row is
    the event's own (``SingleItemEffect``). ValueError for an id of another shape."""
    tenant_id, employee_id, month = event_id.split(":")
    return {LEDGER_HASH_KEY: tenant_id, LEDGER_RANGE_KEY: ledger_key(employee_id, month)}


def _charge(message: Any) -> tuple[BillableItem, str, str]:
    """(item, month, idempotency key) of a valid charge; SchemaError without body content."""
    if not isinstance(message, dict):
        raise SchemaError("body is not a JSON object")
    try:
        item = BillableItem.parse(
            message.get(BODY_TENANT),
            message.get(BODY_EMPLOYEE),
            message.get(BODY_AMOUNT),
            message.get(BODY_CURRENCY),
        )
        month = validate_month(message.get(BODY_MONTH))
    except ValueError as exc:
        field = str(exc).split("=", 1)[0]
        raise SchemaError(f"field {field!r} is missing or invalid") from None
    key = idempotency_key(item.tenant_id, item.employee_id, month)
    if message.get(BODY_IDEMPOTENCY_KEY) != key:
        raise SchemaError("idempotency_key does not equal '<tenant_id>:<employee_id>:<month>'")
    return item, month, key


def charge_writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    item, month, key = _charge(message)
    return [
        {
            "Put": {
                "TableName": ctx.business_table,
                "Item": {
                    LEDGER_HASH_KEY: {"S": item.tenant_id},
                    LEDGER_RANGE_KEY: {"S": ledger_key(item.employee_id, month)},
                    "employee_id": {"S": item.employee_id},
                    "month": {"S": month},
                    "amount": {"N": str(item.amount)},
                    "currency": {"S": item.currency},
                    "idempotency_key": {"S": key},
                    "message_id": {"S": ctx.message_id},
                    "recorded_at": {"N": str(ctx.now)},
                },
                "ConditionExpression": (
                    f"attribute_not_exists({LEDGER_HASH_KEY}) AND "
                    f"attribute_not_exists({LEDGER_RANGE_KEY})"
                ),
            }
        }
    ]


def charge_notification(message: Any, event_id: str) -> Notification:
    item, month, _ = _charge(message)
    return Notification(
        message=json.dumps(
            {
                "type": "charge_recorded",
                "idempotency_key": event_id,
                "tenant_id": item.tenant_id,
                "employee_id": item.employee_id,
                "month": month,
                "amount": item.amount,
                "currency": item.currency,
            },
            sort_keys=True,
        ),
        subject="charge recorded",
        attributes={"tenant_id": item.tenant_id, "month": month, "idempotency_key": event_id},
    )


def _tenant(message: Any) -> str:
    tenant = message[BODY_TENANT]
    if not isinstance(tenant, str):
        raise SchemaError("field 'tenant_id' is not a string")
    return tenant


CHARGES = Consumer(
    writes=charge_writes,
    notification=charge_notification,
    event_id=EventIdFromBody(BODY_IDEMPOTENCY_KEY),
    namespace=NAMESPACE,
    tenant=_tenant,
    requires_business_table=True,
    effect=SingleItemEffect(
        key=(LEDGER_HASH_KEY, LEDGER_RANGE_KEY), key_of_event=ledger_key_of_event
    ),
)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return CHARGES.handle(event, context)
