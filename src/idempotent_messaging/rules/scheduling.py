"""EventBridge Scheduler rule: a schedule retries boundedly and keeps what it cannot deliver."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import (
    MANDATORY,
    number,
    resource_rule,
)
from .graph import SCHEDULE, as_number, fmt
from .values import is_unknown

# EventBridge Scheduler's own ceilings (and defaults when no retry policy is set).
MAX_RETRY_ATTEMPTS = 185
MAX_EVENT_AGE_S = 86400


@resource_rule(
    "scheduler-schedule-has-retry-and-dlq",
    "EventBridge Scheduler schedules set a bounded retry policy and a dead-letter queue.",
    MANDATORY,
    "Set target.retry_policy and target.dead_letter_config.",
    {
        "maxRetryAttempts": number(MAX_RETRY_ATTEMPTS),
        "maxEventAgeSeconds": number(MAX_EVENT_AGE_S, 60),
    },
)
def schedule_has_retry_and_dlq(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    if resource_type != SCHEDULE:
        return []
    max_attempts = float(config.get("maxRetryAttempts", MAX_RETRY_ATTEMPTS))
    max_age = float(config.get("maxEventAgeSeconds", MAX_EVENT_AGE_S))
    target = props.get("target")
    if is_unknown(target):
        return []
    target = target if isinstance(target, dict) else {}
    problems: list[str] = []
    retry = target.get("retryPolicy")
    if is_unknown(retry):
        pass
    elif not isinstance(retry, dict) or not retry:
        problems.append(
            "sets no retry_policy, so Scheduler silently applies its maximum (185 retries over "
            "24 h) against a failing target"
        )
    else:
        attempts = as_number(retry.get("maximumRetryAttempts"))
        age = as_number(retry.get("maximumEventAgeInSeconds"))
        if attempts is None and age is None:
            problems.append("has a retry_policy that bounds neither attempts nor event age")
        if isinstance(attempts, float) and attempts > max_attempts:
            problems.append(f"allows {fmt(attempts)} retry attempts (> {fmt(max_attempts)})")
        if isinstance(age, float) and age > max_age:
            problems.append(f"keeps retrying events for {fmt(age)} s (> {fmt(max_age)} s)")
    dlq = target.get("deadLetterConfig")
    dlq_arn = dlq.get("arn") if isinstance(dlq, dict) else (dlq if is_unknown(dlq) else None)
    if not is_unknown(dlq_arn) and not (isinstance(dlq_arn, str) and dlq_arn):
        problems.append(
            "has no dead_letter_config, so an invocation that exhausts its retries is dropped "
            "without a trace"
        )
    if not problems:
        return []
    return [
        f"schedule '{name}' " + "; ".join(problems) + ". Fix: set target.retry_policy "
        "{maximum_retry_attempts: 3, maximum_event_age_in_seconds: 3600} and "
        "target.dead_letter_config {arn: <an SQS queue arn>} (the queue's policy must allow "
        "scheduler.amazonaws.com to send to it)."
    ]
