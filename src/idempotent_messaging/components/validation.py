"""Argument checks every component uses, and the checks of the arguments all their functions
share (function_args.FunctionArgs).

Runs before any resource exists. Every error is an ArgumentError (errors.py, a ValueError)
that names the field, the value and the rule, so a bad stage config fails `pulumi preview` with
a fix, not AWS with a 400.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import fail
from .function_args import MAX_MEMORY_MB, MIN_MEMORY_MB, FunctionArgs
from .powertools import SUPPORTED_ARCHITECTURES, SUPPORTED_RUNTIMES

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# CloudWatch Logs accepts only these retention values (0 = never expire is deliberately absent).
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827,
                      2192, 2557, 2922, 3288, 3653)  # fmt: skip
# Every physical name is derived from this prefix and fitted to its service's limit
# (names.fit: shortened with a stable hash when too long), so the prefix is capped only by the
# tag that keeps each child's full name (names.TAG_VALUE, 256): the longest child suffix
# ("-charges-consumer-least-privilege", 33) leaves room to spare at 128.
MAX_PHYSICAL_NAME_LEN = 128


_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_NAMESPACE_RE = re.compile(r"^[^:][^\s]{0,254}$")


def check_range(field: str, value: Any, low: int, high: int, why: str = "") -> None:
    """Integer in [low, high] (bools are refused: True is not a count)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(field, value, "must be an integer")
    if not low <= value <= high:
        raise fail(field, value, f"must be between {low} and {high}{why}")


def check_name(field: str, value: Any, max_len: int) -> None:
    """Resource-name-safe identifier: letters, digits, '-', '_', starting alphanumeric."""
    if not isinstance(value, str) or not _NAME_RE.match(value) or len(value) > max_len:
        raise fail(
            field,
            value,
            f"must be 1..{max_len} characters of letters, digits, '-' or '_' "
            "starting with a letter or digit",
        )


def check_choice(field: str, value: Any, choices: tuple[str, ...] | frozenset[str]) -> None:
    if value not in choices:
        raise fail(field, value, f"must be one of {sorted(choices)}")


def check_emails(field: str, emails: Any) -> None:
    if isinstance(emails, str):
        raise fail(field, emails, "must be a sequence of addresses, not a single string")
    for email in emails:
        if not isinstance(email, str) or not _EMAIL_RE.match(email):
            raise fail(field, email, "is not an email address (name@domain.tld)")


def check_alarm_target(emails: Any, alarm_topic_arn: object) -> None:
    """Emails subscribe to the alarm topic a component creates, so they exclude a given one."""
    check_emails("alarm_emails", emails)
    if emails and alarm_topic_arn is not None:
        raise fail(
            "alarm_emails",
            list(emails),
            "subscribes to the alarm topic the component creates; with alarm_topic_arn "
            "given, subscribe on that topic instead",
        )


def check_memory(field: str, value: Any) -> None:
    check_range(field, value, MIN_MEMORY_MB, MAX_MEMORY_MB, " MB")


def validate_function_args(args: FunctionArgs) -> None:
    """The settings every function of a component shares (function_args.FunctionArgs)."""
    check_choice("architecture", args.architecture, SUPPORTED_ARCHITECTURES)
    if args.runtime not in SUPPORTED_RUNTIMES:
        raise fail(
            "runtime",
            args.runtime,
            f"must be python3.12 or newer with a Powertools v3 layer: {list(SUPPORTED_RUNTIMES)}",
        )
    check_range("powertools_layer_version", args.powertools_layer_version, 1, 10_000)
    check_range("log_retention_days", args.log_retention_days, 1, 3653)
    if args.log_retention_days not in LOG_RETENTION_DAYS:
        raise fail(
            "log_retention_days",
            args.log_retention_days,
            f"must be a CloudWatch Logs retention value {list(LOG_RETENTION_DAYS)}",
        )
    check_choice("log_level", args.log_level, LOG_LEVELS)
    if not isinstance(args.metrics_namespace, str) or not _NAMESPACE_RE.match(
        args.metrics_namespace
    ):
        raise fail(
            "metrics_namespace",
            args.metrics_namespace,
            "must be 1..255 characters without spaces, not starting with ':'",
        )
    if not isinstance(args.tracing, bool):
        raise fail("tracing", args.tracing, "must be True or False")
