"""The reference stack: every consumer and fan-out listed in the stage config.

The reference consumer ``orders`` (event-id claims, an ``order_records`` table, a
notification topic) and the ``monthly-charge`` fan-out (tenant claims, a ledger) come from
``consumers`` / ``fanouts`` in Pulumi.yaml and each ``Pulumi.<stage>.yaml``.

The library (``idempotent_messaging``) ships no consumer code: this program deploys its own
``handlers/`` package the way any user deploys theirs (``code`` + ``handler``), and the
component adds the library's runtime to that archive.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi

from idempotent_messaging.components import (
    CONSUMER_OUTPUTS,
    FANOUT_OUTPUTS,
    BusinessTableArgs,
    IdempotentQueueConsumer,
    IdempotentQueueConsumerArgs,
    MonthlyFanout,
    MonthlyFanoutArgs,
    alarms,
)
from idempotent_messaging.stage import (
    CONSUMERS_KEY,
    FANOUTS_KEY,
    StageConfig,
    args_from_mapping,
    config_path,
)

HANDLERS_DIR = Path(__file__).resolve().parent / "handlers"
HANDLERS_CODE = pulumi.AssetArchive({"handlers": pulumi.FileArchive(str(HANDLERS_DIR))})
"""This program's Lambda code: the ``handlers/`` package under its own name, so handler strings
read ``handlers.<module>.handler``. The default code of every consumer and fan-out of the
stack; an instance's config may name its own ``codePath`` instead."""

REFERENCE_CONSUMERS: Mapping[str, Mapping[str, Any]] = {
    "orders": {
        "handler": "handlers.orders.handler",
        "business_table": BusinessTableArgs(name="order_records", hash_key="order_id"),
        "create_notification_topic": True,
        "service_name": "orders",
    },
}
"""What this repository's consumers need in every stage (their code and tables); the stage
config adds the sizes. A consumer the config names but this map does not gives its own
``handler`` (and ``businessTable``) in config."""

REFERENCE_FANOUTS: Mapping[str, Mapping[str, Any]] = {
    "monthly-charge": {"consumer_handler": "handlers.charges.handler"},
}
"""The same for the fan-outs: the charge consumer's handler (its ledger is the component's)."""


def with_default_code(args: Any, path_field: str, code_field: str) -> Any:
    """This program's handlers/ as the code, unless the instance's config names a directory."""
    if getattr(args, path_field) is None and getattr(args, code_field) is None:
        return dataclasses.replace(args, **{code_field: HANDLERS_CODE})
    return args


def build_alarm_topic(stage: StageConfig) -> pulumi.Output[str]:
    """One alarm topic for the whole stack: on-call confirms one subscription per address
    instead of one per component (each component would otherwise create its own topic)."""
    topic = alarms.create_stack_alarm_topic(
        "alarms",
        topic_name=f"{pulumi.get_project()}-{pulumi.get_stack()}-alarms",
        emails=stage.alarm_emails,
    )
    return topic.topic.arn


def stack_wide(stage: StageConfig) -> dict[str, Any]:
    """Settings every component of the stack shares (an instance's config may override them)."""
    return {
        "log_level": stage.log_level,
        "log_retention_days": stage.log_retention_days,
        "tracing": stage.tracing,
    }


def consumer_args(
    name: str, settings: Mapping[str, Any], shared: Mapping[str, Any]
) -> IdempotentQueueConsumerArgs:
    args = args_from_mapping(
        IdempotentQueueConsumerArgs,
        settings,
        f"{CONSUMERS_KEY}.{name}",
        defaults={**REFERENCE_CONSUMERS.get(name, {}), **shared},
    )
    consumer: IdempotentQueueConsumerArgs = with_default_code(args, "code_path", "code")
    return consumer


def fanout_args(
    name: str, settings: Mapping[str, Any], shared: Mapping[str, Any]
) -> MonthlyFanoutArgs:
    args = args_from_mapping(
        MonthlyFanoutArgs,
        settings,
        f"{FANOUTS_KEY}.{name}",
        defaults={**REFERENCE_FANOUTS.get(name, {}), **shared},
    )
    fanout: MonthlyFanoutArgs = with_default_code(args, "consumer_code_path", "consumer_code")
    return fanout


def export_name(name: str) -> str:
    """Stack output prefix of an instance: ``monthly-charge`` -> ``monthly_charge``."""
    return name.replace("-", "_")


def export_fanout(prefix: str, fanout: MonthlyFanout) -> None:
    for output in FANOUT_OUTPUTS:
        pulumi.export(f"{prefix}_{output}", getattr(fanout, output))
    export_consumer(f"{prefix}_consumer", fanout.consumer)


def export_consumer(prefix: str, consumer: IdempotentQueueConsumer) -> None:
    for output in CONSUMER_OUTPUTS:
        pulumi.export(f"{prefix}_{output}", getattr(consumer, output))


def with_stack_alarm_topic(args: Any, alarm_topic_arn: pulumi.Input[str]) -> Any:
    """The stack's alarm topic, unless the instance's config names its own topic or emails
    (emails subscribe to a topic the component creates for itself)."""
    if args.alarm_topic_arn is not None or args.alarm_emails:
        return args
    return dataclasses.replace(args, alarm_topic_arn=alarm_topic_arn)


def main() -> None:
    stage = StageConfig.from_pulumi_config(pulumi.Config())
    shared = stack_wide(stage)
    # Every instance's settings are type-checked before the first resource exists.
    consumers = {n: consumer_args(n, s, shared) for n, s in sorted(stage.consumers.items())}
    fanouts = {n: fanout_args(n, s, shared) for n, s in sorted(stage.fanouts.items())}

    alarm_topic_arn = build_alarm_topic(stage)
    pulumi.export("alarm_topic_arn", alarm_topic_arn)
    for name, args in consumers.items():
        with config_path(f"{CONSUMERS_KEY}.{name}"):
            consumer = IdempotentQueueConsumer(name, with_stack_alarm_topic(args, alarm_topic_arn))
        export_consumer(export_name(name), consumer)
    for name, f_args in fanouts.items():
        with config_path(f"{FANOUTS_KEY}.{name}"):
            fanout = MonthlyFanout(name, with_stack_alarm_topic(f_args, alarm_topic_arn))
        export_fanout(export_name(name), fanout)


main()
