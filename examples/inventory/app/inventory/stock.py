"""Stock adjustments: ``stock_levels[(sku, warehouse)].quantity += delta``, once per event.

Body: ``{"event_id": "<producer id>", "sku": "<id>", "warehouse": "<id>", "delta": <int>}``.
The update is additive, so a second application would be visible at once; the runtime commits
it in one transaction with the event's claim, which is what makes a redelivery harmless.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from idempotent_messaging.runtime import (
    Consumer,
    Notification,
    SchemaError,
    WriteContext,
    lambda_handler,
)


def _adjustment(message: Any) -> tuple[str, str, int]:
    if not isinstance(message, Mapping):
        raise SchemaError("body is not a JSON object")
    sku, warehouse, delta = message.get("sku"), message.get("warehouse"), message.get("delta")
    if not isinstance(sku, str) or not sku:
        raise SchemaError("field 'sku' is missing or not a non-empty string")
    if not isinstance(warehouse, str) or not warehouse:
        raise SchemaError("field 'warehouse' is missing or not a non-empty string")
    if not isinstance(delta, int) or isinstance(delta, bool) or delta == 0:
        raise SchemaError("field 'delta' must be a non-zero integer")
    return sku, warehouse, delta


def stock_writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    sku, warehouse, delta = _adjustment(message)
    return [
        {
            "Update": {
                "TableName": ctx.business_table,
                "Key": {"sku": {"S": sku}, "warehouse": {"S": warehouse}},
                "UpdateExpression": "ADD quantity :delta SET last_event_id = :event",
                "ExpressionAttributeValues": {
                    ":delta": {"N": str(delta)},
                    ":event": {"S": ctx.event_id},
                },
            }
        }
    ]


def stock_notification(message: Any, event_id: str) -> Notification:
    sku, warehouse, delta = _adjustment(message)
    return Notification(
        message=json.dumps(
            {"type": "stock_adjusted", "event_id": event_id, "sku": sku, "delta": delta},
            sort_keys=True,
        ),
        subject="stock adjusted",
        attributes={"sku": sku, "warehouse": warehouse},
    )


STOCK = Consumer(
    writes=stock_writes,
    notification=stock_notification,
    namespace="stock",
    requires_business_table=True,
)

handler = lambda_handler(STOCK)
