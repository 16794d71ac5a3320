"""Warehouse stock adjustments: SQS -> Lambda, each adjustment applied to stock exactly once.

Producers send ``{"event_id", "sku", "warehouse", "delta"}`` to the queue; the consumer's own
code (app/inventory/stock.py) adds ``delta`` to the ``stock_levels`` row of (sku, warehouse)
and announces the new level on the consumer's topic.
"""

from pathlib import Path

import pulumi

from idempotent_messaging.components import (
    BusinessTableArgs,
    IdempotentQueueConsumer,
    IdempotentQueueConsumerArgs,
)

config = pulumi.Config()

stock = IdempotentQueueConsumer(
    "stock",
    IdempotentQueueConsumerArgs(
        handler="inventory.stock.handler",
        # The directory is the archive root (so `inventory.stock` imports); the component adds
        # the idempotent_messaging runtime the handler imports.
        code_path=str(Path(__file__).resolve().parent / "app"),
        business_table=BusinessTableArgs(
            name="stock_levels", hash_key="sku", range_key="warehouse"
        ),
        # app/inventory/stock.py declares no effect (its claim is a state-table item, committed
        # with the stock Update): the role gets exactly those calls.
        claim_placement="state_table",
        business_writes=["Update"],
        create_notification_topic=True,
        function_timeout_seconds=config.get_int("functionTimeoutSeconds") or 20,
        alarm_emails=[config.require("alarmEmail")],
        service_name="inventory-stock",
    ),
)

pulumi.export("stock_queue_url", stock.queue_url)
pulumi.export("stock_dlq_url", stock.dlq_url)
pulumi.export("stock_topic_arn", stock.topic_arn)
pulumi.export("stock_levels_table_name", stock.business_table_name)
pulumi.export("stock_function_name", stock.function_name)
