"""Monthly charge consumer: ``handlers.charges.handler`` on the FIFO work queue.

Body (written by handlers.dispatch, see handlers/dispatch/keys.py)::

    {"event_id": "<tenant>:<employee>:<YYYY-MM>", "idempotency_key": "<same>",
     "tenant_id": "...", "employee_id": "...", "month": "YYYY-MM",
     "amount": <int minor units>, "currency": "JPY"}

Effect, in ONE transaction (the runtime library's):
* the claim, tenant layout: pk = tenant id, sk = ``charge#<idempotency key>``,
  ttl = now + 90 days (STATE_KEY_LAYOUT=tenant, CLAIM_TTL_SECONDS);
* one ledger row per (tenant, employee, month): ``tenant_id`` + ``ledger_key`` =
  ``<employee>#<YYYY-MM>``, guarded by attribute_not_exists. Should a claim ever have expired
  (a re-run after 90 days), the ledger guard still refuses a second row: the message is
  quarantined as a semantic failure, never charged twice;
then (outside it) one notification per charge, at least once. FIFO order per message group
(``<tenant>#<YYYY-MM>``) is kept by the runtime.
"""

from __future__ import annotations

import json
from typing import Any

from handlers.dispatch import env as dispatch_env
from handlers.dispatch.keys import (
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
from handlers.runtime import (
    Consumer,
    EventIdFromBody,
    Notification,
    SchemaError,
    WriteContext,
    logger,
    metrics,
)

NAMESPACE = "charge"
LEDGER_HASH_KEY = dispatch_env.LEDGER_HASH_KEY
LEDGER_RANGE_KEY = dispatch_env.LEDGER_RANGE_KEY


def ledger_key(employee_id: str, month: str) -> str:
    return f"{employee_id}#{month}"


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
)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return CHARGES.handle(event, context)
