"""The orders contract on the source article's tables: ``order_records`` keyed by ``order_id``.

Body: ``{"event_id": "<producer id>", "order": {"order_id": "<id>", ...}}``, as
``handlers.orders``; the notification is the same.

* The row is keyed by the ORDER (``order_id``, the table's hash key), as most teams' business
  tables are, and holds the order's fields plus ``source_event_id`` and ``recorded_at``; it is
  written with ``attribute_not_exists(order_id)``: one row per order.
* The effect is declared ``DomainKeyedCreate(key=("order_id",))``: the claim is an item of the
  state table keyed by the event (the article's ``processed_events``), the row is written
  after it, recording the event id (``applied_event_id``), with no transaction on a standard
  queue. A fresh message costs 2 write units (claim INSERT + row INSERT) and its share of the
  batch's publication receipt (docs/runtime.md, "Domain-keyed creates").
* A re-send of the same event id with the same content is a duplicate (skipped, or its
  notification published again if the first delivery died before publishing); with other
  content (another ``order_id``, another amount) a ``conflicting_duplicate`` that never
  reaches the row write. A DIFFERENT event id for an ``order_id`` already recorded is a
  business conflict: ``semantic``, to the DLQ with its reason, the first row untouched.
* Deployed by ``handlers.orders_by_order.handler``; the component's business table is keyed
  ``order_id`` (``BusinessTableArgs(name="order_records", hash_key="order_id")``).
"""

from __future__ import annotations

from typing import Any

from boto3.dynamodb.types import TypeSerializer

from handlers.orders import order_notification
from idempotent_messaging.runtime import (
    Consumer,
    DomainKeyedCreate,
    SchemaError,
    WriteContext,
    lambda_handler,
)

ORDER_KEY = "order_id"
"""The ``order_records`` hash key: the row is keyed by its order, as in the source article."""
RESERVED_FIELDS = frozenset({"source_event_id", "recorded_at"})
_serializer = TypeSerializer()


def order_writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    order = message.get("order") if isinstance(message, dict) else None
    if not isinstance(order, dict):
        raise SchemaError("field 'order' is missing or not an object")
    order_id = order.get(ORDER_KEY)
    if not isinstance(order_id, str) or not order_id.strip():
        raise SchemaError("field 'order.order_id' is missing or not a non-empty string")
    reserved = RESERVED_FIELDS & set(order)
    if reserved:
        raise SchemaError(f"order fields {sorted(reserved)} are reserved")
    item = {name: _serializer.serialize(value) for name, value in order.items()}
    item["source_event_id"] = {"S": ctx.event_id}
    item["recorded_at"] = {"N": str(ctx.now)}
    return [
        {
            "Put": {
                "TableName": ctx.business_table,
                "Item": item,
                "ConditionExpression": f"attribute_not_exists({ORDER_KEY})",
            }
        }
    ]


ORDERS_BY_ORDER = Consumer(
    writes=order_writes,
    notification=order_notification,
    namespace="order",
    requires_business_table=True,
    effect=DomainKeyedCreate(key=(ORDER_KEY,)),
)

# Handler string: handlers.orders_by_order.handler.
handler = lambda_handler(ORDERS_BY_ORDER)
