"""Fire an EventBridge Scheduler schedule in-process, as the Scheduler service would.

The target input template gets its context attributes substituted
(`<aws.scheduler.scheduled-time>` and friends) and the target function runs in-process via
local.invoke. Firing twice for the same scheduled time is exactly the "schedule fired twice"
case the monthly consumer must absorb.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from idempotent_messaging.local.invoke import InvocationResult, invoke
from idempotent_messaging.local.registry import Registry, ScheduleConfig
from idempotent_messaging.local.server import queue_url_from_arn

_CRON = re.compile(r"^cron\((?P<fields>[^)]*)\)$")


def scheduled_time_for_month(schedule: ScheduleConfig, month: str) -> datetime:
    """The UTC instant the schedule's cron fires in `month` (YYYY-MM), in its own time zone.

    Supports the fixed minute / hour / day-of-month crons monthly schedules use
    (`cron(0 3 1 * ? *)`); anything else is refused with the expression named.
    """
    if not re.fullmatch(r"\d{4}-\d{2}", month):
        raise ValueError(f"month must be YYYY-MM, got {month!r}")
    match = _CRON.match(schedule.expression.strip())
    fields = match.group("fields").split() if match else []
    if len(fields) != 6 or not all(f.isdigit() for f in fields[:3]):
        raise ValueError(
            f"schedule {schedule.name}: cannot derive a monthly fire time from "
            f"{schedule.expression!r} (expected cron(M H D * ? *))"
        )
    minute, hour, day = (int(f) for f in fields[:3])
    year, mon = (int(p) for p in month.split("-"))
    tz = ZoneInfo(schedule.timezone or "UTC")
    return datetime(year, mon, day, hour, minute, tzinfo=tz).astimezone(UTC)


def render_input(schedule: ScheduleConfig, scheduled_time: datetime, attempt: int = 1) -> Any:
    """The target input with Scheduler's context attributes substituted, parsed as JSON."""
    template = schedule.target_input if schedule.target_input is not None else "{}"
    values = {
        "<aws.scheduler.scheduled-time>": scheduled_time.astimezone(UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        ),
        "<aws.scheduler.execution-id>": str(uuid.uuid4()),
        "<aws.scheduler.schedule-arn>": schedule.arn,
        "<aws.scheduler.attempt-number>": str(attempt),
    }
    for placeholder, value in values.items():
        template = template.replace(placeholder, value)
    try:
        return json.loads(template)
    except json.JSONDecodeError:
        return template  # Scheduler passes a non-JSON input through as a string


def fire(
    registry: Registry,
    schedule_name: str,
    scheduled_time: datetime,
    *,
    endpoint_url: str,
    attempt: int = 1,
    sqs: Any | None = None,
) -> InvocationResult:
    """Deliver one schedule event to its target function, as an asynchronous invoke.

    Scheduler hands the event to Lambda asynchronously, so a function error is retried by
    Lambda (the function's async retry setting, default 2), and after the last attempt the
    event goes to the function's on-failure destination when one is configured (an SQS
    queue; `sqs` is the client used to send it). Returns the last attempt's result.
    """
    try:
        schedule = registry.schedules[schedule_name]
    except KeyError:
        known = ", ".join(sorted(registry.schedules)) or "none"
        raise KeyError(f"no schedule {schedule_name!r} (known: {known})") from None
    fn = registry.function(schedule.target_arn)
    event = render_input(schedule, scheduled_time, attempt)
    result = invoke(fn, event, region=registry.region, endpoint_url=endpoint_url)
    attempts = 1
    while not result.ok and attempts <= fn.async_max_retries:
        result = invoke(fn, event, region=registry.region, endpoint_url=endpoint_url)
        attempts += 1
    if not result.ok and fn.async_on_failure and sqs is not None:
        _send_to_destination(
            sqs, endpoint_url, fn.async_on_failure, fn.arn, event, result, attempts
        )
    return result


def _send_to_destination(
    sqs: Any,
    endpoint_url: str,
    arn: str,
    function_arn: str,
    event: Any,
    result: InvocationResult,
    attempts: int,
) -> None:
    """The on-failure destination record Lambda sends for an async invocation."""
    parts = arn.split(":")
    if parts[2] != "sqs":
        return  # only SQS destinations are emulated
    record = {
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(),
        "requestContext": {
            "requestId": result.request_id,
            "functionArn": f"{function_arn}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": attempts,
        },
        "requestPayload": event,
        "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
        "responsePayload": {
            "errorType": type(result.error).__name__ if result.error else "TimeoutError",
            "errorMessage": str(result.error) if result.error else "Task timed out",
        },
    }
    body = json.dumps(record, default=str)
    url = queue_url_from_arn(arn, endpoint_url)
    extra = {"MessageGroupId": "async-failures"} if parts[5].endswith(".fifo") else {}
    if extra:
        extra["MessageDeduplicationId"] = result.request_id
    sqs.send_message(QueueUrl=url, MessageBody=body, **extra)
