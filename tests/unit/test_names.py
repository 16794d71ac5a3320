"""Physical names fit each AWS limit: unchanged when they fit, shortened with a stable hash when
not (the AWS CDK's unique-name scheme: aws-cdk-lib core/lib/private/unique-resource-name.ts)."""

from __future__ import annotations

import hashlib
import re

import pytest

from idempotent_messaging import names

LIMITS = {
    "IAM role (CreateRole RoleName)": names.IAM_ROLE,
    "IAM inline policy (PutRolePolicy PolicyName)": names.IAM_INLINE_POLICY,
    "Lambda function (CreateFunction FunctionName)": names.LAMBDA_FUNCTION,
    "SQS queue (CreateQueue QueueName)": names.SQS_QUEUE,
    "DynamoDB table (CreateTable TableName)": names.DYNAMODB_TABLE,
    "SNS topic (CreateTopic Name)": names.SNS_TOPIC,
    "CloudWatch alarm (PutMetricAlarm AlarmName)": names.CLOUDWATCH_ALARM,
    "CloudWatch dashboard (PutDashboard DashboardName)": names.CLOUDWATCH_DASHBOARD,
    "log group (CreateLogGroup logGroupName)": names.LOG_GROUP,
    "Scheduler schedule (CreateSchedule Name)": names.SCHEDULER_SCHEDULE,
    "Scheduler group (CreateScheduleGroup Name)": names.SCHEDULER_GROUP,
}
"""Each service's documented maximum, in characters."""


def test_the_limits_are_the_services_documented_maxima() -> None:
    assert list(LIMITS.values()) == [64, 128, 64, 80, 255, 256, 255, 255, 512, 64, 64]


@pytest.mark.parametrize("limit", sorted(set(LIMITS.values())))
def test_a_name_of_exactly_the_limit_is_kept_and_one_more_character_is_shortened_to_it(
    limit: int,
) -> None:
    exact = "a" * (limit - 3) + "-xy"
    assert names.fit(exact, limit) == exact
    longer = "b" + exact
    fitted = names.fit(longer, limit)
    assert len(fitted) == limit
    assert fitted.endswith("-" + names.name_hash(longer))


@pytest.mark.parametrize("fifo", [False, True])
def test_an_sqs_name_counts_dot_fifo_and_keeps_it_last(fifo: bool) -> None:
    suffix = ".fifo" if fifo else ""
    base = "q" * (names.SQS_QUEUE - len(suffix))
    assert names.fit(base, names.SQS_QUEUE, fifo=fifo) == base + suffix
    fitted = names.fit(base + "x", names.SQS_QUEUE, fifo=fifo)
    assert len(fitted) == names.SQS_QUEUE
    assert fitted.endswith(suffix)


def test_a_shortened_name_keeps_the_teams_start_and_the_childs_end_then_the_cdk_hash() -> None:
    """The charge consumer's role of ``payroll-benefits-monthly-charge`` in a stack named
    ``preproduction``: 67 characters in full."""
    full = "payroll-benefits-monthly-charge-preproduction-charges-consumer-role"
    fitted = names.fit(full, names.IAM_ROLE)
    digest = hashlib.md5(full.encode(), usedforsecurity=False).hexdigest()[:8].upper()
    assert fitted == f"payroll-benefits-monthly-chaction-charges-consumer-role-{digest}"
    assert len(fitted) == names.IAM_ROLE
    assert re.fullmatch(r"[\w+=,.@-]{1,64}", fitted)  # IAM's role-name characters


def test_the_same_full_name_gives_the_same_name_and_different_ones_differ() -> None:
    a = "x" * 70 + "-consumer"
    b = "x" * 70 + "-consumer2"
    assert names.fit(a, 64) == names.fit(a, 64)
    assert names.fit(a, 64) != names.fit(b, 64)


def test_a_shortened_name_records_its_full_name_in_a_tag_and_a_kept_one_does_not() -> None:
    full = "n" * 90
    fitted = names.fit(full, names.SQS_QUEUE, fifo=True)
    assert names.tagged({"team": "t"}, full, fitted, fifo=True) == {
        "team": "t",
        names.FULL_NAME_TAG: full + ".fifo",
    }
    assert names.tagged({"team": "t"}, "short", "short") == {"team": "t"}


def test_an_empty_name_or_a_limit_too_small_for_the_hash_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        names.fit("", 64)
    with pytest.raises(ValueError, match="limit=8"):
        names.fit("abc", 8)
