"""The reference stack: the seed-000 `orders` consumer and the seed-003 `monthly-charge` batch."""

from __future__ import annotations

import pulumi

from components import (
    CONSUMER_OUTPUTS,
    FANOUT_OUTPUTS,
    BusinessTableArgs,
    IdempotentQueueConsumer,
    IdempotentQueueConsumerArgs,
    MonthlyFanout,
    MonthlyFanoutArgs,
    alarms,
)
from components.stage_config import StageConfig


def build_alarm_topic(stage: StageConfig) -> pulumi.Output[str]:
    """One alarm topic for the whole stack: on-call confirms one subscription per address
    instead of one per component (each component would otherwise create its own topic)."""
    topic = alarms.create_stack_alarm_topic(
        "alarms",
        topic_name=f"{pulumi.get_project()}-{pulumi.get_stack()}-alarms",
        emails=stage.alarm_emails,
    )
    return topic.topic.arn


def build_orders(stage: StageConfig, alarm_topic_arn: pulumi.Input[str]) -> IdempotentQueueConsumer:
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
            alarm_topic_arn=alarm_topic_arn,
            log_level=stage.log_level,
            log_retention_days=stage.log_retention_days,
            tracing=stage.tracing,
            service_name="orders",
        ),
    )


def build_monthly_charge(stage: StageConfig, alarm_topic_arn: pulumi.Input[str]) -> MonthlyFanout:
    """Seed 003: the monthly charge batch, fired by cron in the stage's time zone."""
    return MonthlyFanout(
        "monthly-charge",
        MonthlyFanoutArgs(
            schedule_expression=stage.monthly_charge_cron,
            schedule_expression_timezone=stage.monthly_charge_timezone,
            alarm_topic_arn=alarm_topic_arn,
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
    alarm_topic_arn = build_alarm_topic(stage)
    pulumi.export("alarm_topic_arn", alarm_topic_arn)
    export_consumer("orders", build_orders(stage, alarm_topic_arn))
    export_fanout("monthly_charge", build_monthly_charge(stage, alarm_topic_arn))


main()
