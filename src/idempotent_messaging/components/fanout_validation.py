"""Constructor-time validation of MonthlyFanoutArgs (before any resource exists)."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from idempotent_messaging import limits
from idempotent_messaging.dispatch import env as denv

from .errors import fail
from .fanout_args import MonthlyFanoutArgs
from .function_args import DISPATCHER_MIN_TIMEOUT_SECONDS
from .validation import (
    MAX_PHYSICAL_NAME_LEN,
    check_alarm_target,
    check_choice,
    check_memory,
    check_name,
    check_range,
    validate_function_args,
)

CHILD_SUFFIX = "-charges"
"""The charge consumer child is ``<name>-charges`` (physical ``<physical>-charges``)."""
MAX_FANOUT_PHYSICAL_NAME_LEN = MAX_PHYSICAL_NAME_LEN - len(CHILD_SUFFIX)
RECURSIVE_LOOP_CHOICES = ("Allow", "Terminate")
SOURCE_CHOICES = (denv.SOURCE_DYNAMODB, denv.SOURCE_S3)
SCHEDULER_MAX_RETRY_ATTEMPTS = 185
SCHEDULER_MIN_EVENT_AGE_S = 60
SCHEDULER_MAX_EVENT_AGE_S = 86_400

_CRON_RE = re.compile(r"^cron\((\S+\s+){5}\S+\)$")
_RATE_RE = re.compile(r"^rate\(\d+ (minute|minutes|hour|hours|day|days)\)$")
_AT_RE = re.compile(r"^at\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\)$")
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def validate_fanout_args(name: str, physical: str, args: MonthlyFanoutArgs) -> None:
    """Every arg, before any resource exists; ValueError naming field, value and rule."""
    check_name("name", name, 64)
    check_name("physical_name", physical, MAX_FANOUT_PHYSICAL_NAME_LEN)
    tz = args.schedule_expression_timezone
    try:
        if not isinstance(tz, str) or not tz:
            raise ValueError
        ZoneInfo(tz)
    except (ValueError, ZoneInfoNotFoundError):
        raise fail(
            "schedule_expression_timezone", tz, "must be an IANA time zone such as 'Asia/Tokyo'"
        ) from None
    expr = args.schedule_expression
    if not isinstance(expr, str) or not (
        _CRON_RE.match(expr) or _RATE_RE.match(expr) or _AT_RE.match(expr)
    ):
        raise fail(
            "schedule_expression",
            expr,
            "must be 'cron(min hour day-of-month month day-of-week year)' (six fields), "
            "'rate(N unit)' or 'at(yyyy-mm-ddThh:mm:ss)'",
        )
    check_range(
        "retry_maximum_attempts", args.retry_maximum_attempts, 0, SCHEDULER_MAX_RETRY_ATTEMPTS
    )
    check_range(
        "retry_maximum_event_age_seconds",
        args.retry_maximum_event_age_seconds,
        SCHEDULER_MIN_EVENT_AGE_S,
        SCHEDULER_MAX_EVENT_AGE_S,
        " seconds (EventBridge Scheduler's limits)",
    )
    check_choice("item_source", args.item_source, SOURCE_CHOICES)
    _pair(
        "existing_billing_accounts_table",
        args.existing_billing_accounts_table_name,
        args.existing_billing_accounts_table_arn,
    )
    _pair("existing_runs_table", args.existing_runs_table_name, args.existing_runs_table_arn)
    if args.item_source == denv.SOURCE_S3:
        if not isinstance(args.manifest_bucket_name, str) or not _BUCKET_RE.match(
            args.manifest_bucket_name
        ):
            raise fail(
                "manifest_bucket_name",
                args.manifest_bucket_name,
                "must be an S3 bucket name when item_source is 's3'",
            )
        if args.existing_billing_accounts_table_name is not None:
            raise fail(
                "existing_billing_accounts_table_name",
                args.existing_billing_accounts_table_name,
                "is unused when item_source is 's3'; remove it",
            )
    elif args.manifest_bucket_name is not None:
        raise fail(
            "manifest_bucket_name",
            args.manifest_bucket_name,
            "is only read when item_source is 's3'",
        )
    if "{month}" not in args.manifest_key_template:
        raise fail("manifest_key_template", args.manifest_key_template, "must contain '{month}'")
    validate_function_args(args)
    check_range(
        "dispatcher_timeout_seconds",
        args.dispatcher_timeout_seconds,
        DISPATCHER_MIN_TIMEOUT_SECONDS,
        limits.LAMBDA_MAX_TIMEOUT_S,
        " seconds (a page, a checkpoint and a hand-off need at least a minute)",
    )
    check_memory("dispatcher_memory_size_mb", args.dispatcher_memory_size_mb)
    check_range(
        "consumer_function_timeout_seconds",
        args.consumer_function_timeout_seconds,
        limits.LAMBDA_MIN_TIMEOUT_S,
        limits.LAMBDA_MAX_TIMEOUT_S,
        " seconds (Lambda's limits)",
    )
    check_memory("consumer_memory_size_mb", args.consumer_memory_size_mb)
    check_range("scan_segments", args.scan_segments, 1, 1000)
    check_range("scan_page_size", args.scan_page_size, 1, 100_000)
    check_range("send_concurrency", args.send_concurrency, 1, 256)
    check_range(
        "time_reserve_seconds",
        args.time_reserve_seconds,
        1,
        args.dispatcher_timeout_seconds - 1,
        f" (below dispatcher_timeout_seconds {args.dispatcher_timeout_seconds})",
    )
    check_range("max_hops", args.max_hops, 1, 10_000)
    check_choice("recursive_loop", args.recursive_loop, RECURSIVE_LOOP_CHOICES)
    check_range("async_retry_attempts", args.async_retry_attempts, 0, 2)
    if args.reserved_concurrency is not None:
        check_range(
            "reserved_concurrency",
            args.reserved_concurrency,
            2,
            100_000,
            " (one for a schedule fire plus at least one continuation worker)",
        )
    check_alarm_target(args.alarm_emails, args.alarm_topic_arn)


def _pair(field_name: str, name: object, arn: object) -> None:
    if (name is None) != (arn is None):
        raise fail(
            f"{field_name}_name/_arn",
            (name, arn),
            "give both the name and the ARN (the grant is scoped to the ARN) or neither",
        )
