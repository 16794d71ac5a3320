"""EventBridge Scheduler rule: a schedule retries boundedly and keeps what it cannot deliver.

Without a retry policy, or with one that leaves a field out, Scheduler applies its defaults: 185
retries within 24 hours, which are also the ceilings of the API (EventBridge Scheduler User
Guide, retry policies: by default Scheduler retries for 24 hours and up to 185 times; Scheduler
API reference, RetryPolicy: MaximumRetryAttempts 0..185, MaximumEventAgeInSeconds 60..86400).
An absent retry policy is therefore never a finding by itself: the rule judges the effective
values (the defaults) against its configured bounds, which default to those same values. An
event that exhausts its retries is dropped unless the target has a dead-letter queue.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import limits
from ._base import (
    MANDATORY,
    Boundary,
    number,
    resource_rule,
)
from .graph import SCHEDULE, as_number, fmt
from .values import is_unknown

# EventBridge Scheduler's own ceilings, which are also its defaults when no retry policy (or no
# field of one) is set (Scheduler API reference, RetryPolicy).
MAX_RETRY_ATTEMPTS = limits.SCHEDULER_MAX_RETRY_ATTEMPTS
MAX_EVENT_AGE_S = limits.SCHEDULER_MAX_EVENT_AGE_S
DEFAULT_RETRY_ATTEMPTS = MAX_RETRY_ATTEMPTS
DEFAULT_EVENT_AGE_S = MAX_EVENT_AGE_S


def remedy_schedule_retry(
    resource_type: str, props: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any] | None:
    """A retry policy within the configured bounds: each field that exceeds its bound (an
    absent field counts at Scheduler's default) lowered to the bound. The DLQ is a decision
    (which queue): never added."""
    if resource_type != SCHEDULE:
        return None
    target = props.get("target")
    if not isinstance(target, dict):
        return None
    retry = target.get("retryPolicy")
    if retry is None:
        retry = {}
    if not isinstance(retry, dict):
        return None  # unknown, or a secret
    bounds = {
        "maximumRetryAttempts": (
            float(config.get("maxRetryAttempts", MAX_RETRY_ATTEMPTS)),
            DEFAULT_RETRY_ATTEMPTS,
        ),
        "maximumEventAgeInSeconds": (
            float(config.get("maxEventAgeSeconds", MAX_EVENT_AGE_S)),
            DEFAULT_EVENT_AGE_S,
        ),
    }
    fixed = dict(retry)
    for key, (bound, default) in bounds.items():
        value = as_number(retry.get(key))
        if value is None:
            value = float(default)
        if isinstance(value, float) and value > bound:
            fixed[key] = int(bound)
    if fixed == retry:
        return None
    return {**props, "target": {**target, "retryPolicy": fixed}}


@resource_rule(
    "scheduler-schedule-has-retry-and-dlq",
    "EventBridge Scheduler schedules set a bounded retry policy and a dead-letter queue.",
    MANDATORY,
    "Set target.dead_letter_config; set target.retry_policy within the configured bounds when "
    "they are tighter than Scheduler's defaults (185 retries, 24 h).",
    {
        "maxRetryAttempts": number(MAX_RETRY_ATTEMPTS),
        "maxEventAgeSeconds": number(MAX_EVENT_AGE_S, 60),
    },
    remedy=remedy_schedule_retry,
    remedies="target.retry_policy fields above the configured bounds (an absent one counts at "
    "Scheduler's default) lowered to the bound; a missing DLQ is not added (which queue is a "
    "decision).",
    enforces="Scheduler drops an invocation that exhausts its retry policy unless the target "
    "has a dead-letter queue (EventBridge Scheduler User Guide, 'Configuring a dead-letter "
    "queue for EventBridge Scheduler').",
    defaults="No retry_policy, or a field left out: Scheduler retries 185 times within 86,400 s "
    "(its defaults, equal to the rule's default bounds, so never a finding unless the config "
    "sets tighter bounds); no dead_letter_config: no DLQ.",
    boundaries=(
        Boundary(
            "A schedule with a DLQ and no retry policy (Scheduler's default retry policy applies).",
            "test_schedule_with_a_dlq_and_the_default_retry_policy_passes",
        ),
        Boundary(
            "Whether the target accepted the invocation and then failed (a Lambda target's own "
            "failures are lambda-async-has-failure-destination's).",
            "test_schedule_dlq_does_not_cover_the_functions_own_failures",
        ),
    ),
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
    if not is_unknown(retry):
        retry = retry if isinstance(retry, dict) else {}
        attempts = as_number(retry.get("maximumRetryAttempts"))
        age = as_number(retry.get("maximumEventAgeInSeconds"))
        # An absent field takes Scheduler's default, which is judged like any value.
        attempts_note = " (Scheduler's default)" if attempts is None else ""
        age_note = " (Scheduler's default)" if age is None else ""
        attempts = DEFAULT_RETRY_ATTEMPTS if attempts is None else attempts
        age = DEFAULT_EVENT_AGE_S if age is None else age
        if isinstance(attempts, float | int) and attempts > max_attempts:
            problems.append(
                f"allows {fmt(attempts)} retry attempts{attempts_note} (> {fmt(max_attempts)})"
            )
        if isinstance(age, float | int) and age > max_age:
            problems.append(
                f"keeps retrying events for {fmt(age)} s{age_note} (> {fmt(max_age)} s)"
            )
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
        f"schedule '{name}' " + "; ".join(problems) + ". Fix: set target.dead_letter_config "
        "{arn: <an SQS queue arn>} (the queue's policy must allow scheduler.amazonaws.com to "
        f"send to it) and keep target.retry_policy within {fmt(max_attempts)} attempts and "
        f"{fmt(max_age)} s."
    ]
