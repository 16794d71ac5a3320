"""Reference consumer: one ``order_records`` row per order event, one notification per event.

Body: ``{"event_id": "<producer id>", "order": {"order_id": "<id>", ...}}``.

* The row is keyed by the EVENT (``event_id``, the table's hash key) and holds the order's
  fields (``order_id`` among them, an attribute) plus ``source_event_id`` and ``recorded_at``;
  it is written with ``attribute_not_exists(event_id)``.
* The effect is that one row, declared ``SingleItemEffect.keyed_by_event_id("event_id")``: the
  event's claim lives in it (``claim_event_id``, ``claim_status``, ...), as long as the row;
  no state-table item, and a fresh message costs ONE write unit for row and claim together.
* An event id is claimed once, and never yields a second row: a re-send of the same event id
  (any messageId) with the same content (the whole body, numbers by value) is a duplicate,
  skipped; the notification is re-sent only if the first delivery died before publishing.
  With other content (another ``order_id``, another amount) it is a ``conflicting_duplicate``:
  quarantined with its reason, the first row and notification stand (docs/runtime.md,
  "Conflicts").
* A DIFFERENT event id is a different row, also for an ``order_id`` already recorded: which
  events are one business fact is the producer's to say, with the event id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from boto3.dynamodb.types import TypeSerializer

from idempotent_messaging.runtime import (
    Consumer,
    Notification,
    SchemaError,
    SingleItemEffect,
    WriteContext,
    lambda_handler,
)

ORDER_KEY = "event_id"
"""The ``order_records`` hash key: the row is keyed by its event (docs/runtime.md)."""
RESERVED_FIELDS = frozenset({ORDER_KEY, "source_event_id", "recorded_at"})
_serializer = TypeSerializer()


def _order(message: Any) -> Mapping[str, Any]:
    if not isinstance(message, Mapping):
        raise SchemaError("body is not a JSON object")
    order = message.get("order")
    if not isinstance(order, Mapping):
        raise SchemaError("field 'order' is missing or not an object")
    order_id = order.get("order_id")
    if not isinstance(order_id, str) or not order_id.strip():
        raise SchemaError("field 'order.order_id' is missing or not a non-empty string")
    reserved = RESERVED_FIELDS & set(order)
    if reserved:
        raise SchemaError(f"order fields {sorted(reserved)} are reserved")
    return order


def order_writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    order = _order(message)
    item = {name: _serializer.serialize(value) for name, value in order.items()}
    item[ORDER_KEY] = {"S": ctx.event_id}
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


def order_notification(message: Any, event_id: str) -> Notification:
    order_id = str(_order(message)["order_id"])
    return Notification(
        message=json.dumps(
            {"type": "order_recorded", "event_id": event_id, "order_id": order_id},
            sort_keys=True,
        ),
        subject="order recorded",
        attributes={"event_id": event_id, "order_id": order_id},
    )


ORDERS = Consumer(
    writes=order_writes,
    notification=order_notification,
    namespace="order",
    requires_business_table=True,
    effect=SingleItemEffect.keyed_by_event_id(ORDER_KEY),
)

# Handler string: handlers.orders.handler (Powertools Logger + Metrics around ORDERS.handle).
handler = lambda_handler(ORDERS)
