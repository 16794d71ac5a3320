"""The reference stack: the seed-000 `orders` consumer and the seed-003 `monthly-charge` batch."""

from __future__ import annotations

import pulumi

from components import (
    BusinessTableArgs,
    IdempotentQueueConsumer,
    IdempotentQueueConsumerArgs,
    MonthlyFanout,
    MonthlyFanoutArgs,
)
from components.stage_config import StageConfig

CONSUMER_OUTPUTS = (
    "queue_url", "queue_arn", "queue_name", "dlq_url", "dlq_arn", "dlq_name",
    "state_table_name", "state_table_arn", "business_table_name", "topic_arn",
    "function_name", "function_arn", "role_arn", "alarm_names", "alarm_topic_arn",
)  # fmt: skip


def build_orders(stage: StageConfig) -> IdempotentQueueConsumer:
    """Seed 000: standard queue -> orders handler; order_records keyed by order_id; SNS topic."""
    return IdempotentQueueConsumer(
        "orders",
        IdempotentQueueConsumerArgs(
            handler="handlers.orders.handler",
            function_timeout_seconds=stage.orders_function_timeout_seconds,
            memory_size_mb=stage.orders_memory_size_mb,
            batch_size=stage.orders_batch_size,
            maximum_batching_window_seconds=stage.orders_max_batching_window_seconds,
            max_receive_count=stage.orders_max_receive_count,
            reserved_concurrency=stage.orders_reserved_concurrency,
            maximum_concurrency=stage.orders_max_concurrency,
            age_alarm_threshold_seconds=stage.orders_age_alarm_threshold_seconds,
            business_table=BusinessTableArgs(name="order_records", hash_key="order_id"),
            create_notification_topic=True,
            alarm_emails=stage.alarm_emails,
            log_level=stage.log_level,
            log_retention_days=stage.log_retention_days,
            tracing=stage.tracing,
            service_name="orders",
        ),
    )


FANOUT_OUTPUTS = (
    "schedule_name", "schedule_arn", "schedule_dlq_url", "dispatcher_name", "dispatcher_arn",
    "control_queue_url", "control_dlq_url", "runs_table_name", "billing_accounts_table_name",
    "work_queue_url", "work_queue_arn", "alarm_names",
)  # fmt: skip


def build_monthly_charge(stage: StageConfig) -> MonthlyFanout:
    """Seed 003: the monthly charge batch, fired by cron in the stage's time zone."""
    return MonthlyFanout(
        "monthly-charge",
        MonthlyFanoutArgs(
            schedule_expression=stage.monthly_charge_cron,
            schedule_expression_timezone=stage.monthly_charge_timezone,
            alarm_emails=stage.alarm_emails,
            log_level=stage.log_level,
            log_retention_days=stage.log_retention_days,
            tracing=stage.tracing,
        ),
    )


def export_fanout(prefix: str, fanout: MonthlyFanout) -> None:
    for output in FANOUT_OUTPUTS:
        pulumi.export(f"{prefix}_{output}", getattr(fanout, output))
    export_consumer(f"{prefix}_consumer", fanout.consumer)


def export_consumer(prefix: str, consumer: IdempotentQueueConsumer) -> None:
    for output in CONSUMER_OUTPUTS:
        pulumi.export(f"{prefix}_{output}", getattr(consumer, output))


def main() -> None:
    stage = StageConfig.from_pulumi_config(pulumi.Config())
    export_consumer("orders", build_orders(stage))
    export_fanout("monthly_charge", build_monthly_charge(stage))


main()
