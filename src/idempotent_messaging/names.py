"""Physical names that fit AWS's limits: the one derivation every component's names go through.

A component derives each child's FULL name from its physical prefix (``<name>-<stack>`` or
``physical_name``) and a suffix of its own (``-consumer-role``, ``-dlq.fifo``, ...). ``fit``
returns that full name unchanged when it fits the service's limit, so every name that deployed
before keeps its resource. A longer one is shortened the way the AWS CDK shortens a unique
resource name (aws-cdk-lib ``core/lib/private/unique-resource-name.ts``,
``makeUniqueResourceName``): the human-readable part cut in the middle, keeping its start (the
team's name) and its end (which child it is), then 8 hex characters of an MD5 of the FULL name.
The same full name gives the same physical name on every run and every machine; two full names
that shorten alike still differ by their hash. The components keep the full name in a tag
(``FULL_NAME_TAG``) on every child whose name was shortened and that takes tags.

The components name every child that has a name: none relies on pulumi-aws's autonaming
(the logical name + ``-`` + 7 hex characters, its length checked before ``.fifo``), which
would neither keep the team's name readable nor check AWS's limit the way ``fit`` does. The
children without a name property (KMS keys, event source mappings, queue policies,
subscriptions, invoke configs) need none.

Pure functions and constants, no imports from the rest of the project (the pack may use them).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

HASH_LENGTH = 8
"""Hex characters of the MD5 of the full name, as the CDK's ``HASH_LEN``."""
SEPARATOR = "-"
FIFO_SUFFIX = ".fifo"
FULL_NAME_TAG = "idempotent-messaging:full-name"
"""Tag holding the full (unshortened) name of a child whose physical name was shortened."""

# --- AWS's name limits, in characters (each from the service's API reference) ------------------
IAM_ROLE = 64  # IAM CreateRole RoleName
IAM_INLINE_POLICY = 128  # IAM PutRolePolicy PolicyName
LAMBDA_FUNCTION = 64  # Lambda CreateFunction FunctionName (the name alone)
SQS_QUEUE = 80  # SQS CreateQueue QueueName, ".fifo" included
DYNAMODB_TABLE = 255  # DynamoDB CreateTable TableName
SNS_TOPIC = 256  # SNS CreateTopic Name, ".fifo" included
CLOUDWATCH_ALARM = 255  # CloudWatch PutMetricAlarm AlarmName
CLOUDWATCH_DASHBOARD = 255  # CloudWatch PutDashboard DashboardName
LOG_GROUP = 512  # CloudWatch Logs CreateLogGroup logGroupName
SCHEDULER_SCHEDULE = 64  # EventBridge Scheduler CreateSchedule Name
SCHEDULER_GROUP = 64  # EventBridge Scheduler CreateScheduleGroup Name
TAG_VALUE = 256  # a tag value, in every service the components tag

MIN_LIMIT = HASH_LENGTH + len(SEPARATOR) + 2
"""The smallest limit a shortened name can honour (two human characters, the separator, the
hash): every limit above is far larger."""


def name_hash(full: str) -> str:
    """8 uppercase hex characters of the MD5 of ``full`` (the CDK's ``pathHash``): a stable
    identifier, not a security control."""
    digest = hashlib.md5(full.encode("utf-8"), usedforsecurity=False).hexdigest()
    return digest[:HASH_LENGTH].upper()


def fit(full: str, limit: int, *, fifo: bool = False) -> str:
    """``full`` (plus ``.fifo`` when ``fifo``) if it fits ``limit`` characters; else the
    human part cut in the middle to make room, ``-`` and ``name_hash`` of the full name, with
    ``.fifo`` kept last (SQS and SNS require it there and count it in the limit).

    >>> fit("orders-dev-consumer-role", 64)
    'orders-dev-consumer-role'
    """
    if not full:
        raise ValueError("full name must not be empty")
    if limit < MIN_LIMIT:
        raise ValueError(f"limit={limit}: a shortened name needs at least {MIN_LIMIT}")
    suffix = FIFO_SUFFIX if fifo else ""
    if len(full) + len(suffix) <= limit:
        return full + suffix
    budget = limit - len(suffix) - HASH_LENGTH - len(SEPARATOR)
    head, tail = math.ceil(budget / 2), budget // 2
    human = full[:head] + (full[-tail:] if tail else "")
    return f"{human}{SEPARATOR}{name_hash(full + suffix)}{suffix}"


def full_name_tags(full: str, fitted: str, *, fifo: bool = False) -> dict[str, str]:
    """``{FULL_NAME_TAG: full}`` when ``fit`` shortened it, else nothing (an unshortened name
    is its own record)."""
    unshortened = full + (FIFO_SUFFIX if fifo else "")
    return {} if fitted == unshortened else {FULL_NAME_TAG: unshortened}


def tagged(
    tags: Mapping[str, str] | None, full: str, fitted: str, *, fifo: bool = False
) -> dict[str, str]:
    """``tags`` plus the full-name tag of a shortened name."""
    return {**dict(tags or {}), **full_name_tags(full, fitted, fifo=fifo)}
