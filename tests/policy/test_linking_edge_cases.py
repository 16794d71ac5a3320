"""Edge cases the held-out-like programs exposed: linking, DLQ recognition, runner isolation."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from idempotent_messaging.offline import Violation, check
from tests.policy.conftest import pairs

pytestmark = pytest.mark.policy

RunCheck = Callable[..., list[Violation]]
MODES = [pytest.param(False, id="up"), pytest.param(True, id="preview")]
FIXTURES = Path(__file__).parent / "fixtures" / "heldout_like"

ROLE = """
role = aws.iam.Role("r", assume_role_policy="{}")
fn = aws.lambda_.Function(
    "fn", role=role.arn, runtime="python3.12", handler="h.h", code=pulumi.FileArchive("./x"),
    timeout=10,
)
"""


@pytest.mark.parametrize("preview", MODES)
def test_queue_that_allows_all_sources_to_redrive_into_it_is_a_dlq_needing_no_dlq(
    run_check: RunCheck, preview: bool
):
    body = (
        ROLE
        + """
dlq = aws.sqs.Queue("parking", redrive_allow_policy=json.dumps({"redrivePermission": "allowAll"}))
aws.lambda_.EventSourceMapping("replay", event_source_arn=dlq.arn, function_name=fn.name,
    function_response_types=["ReportBatchItemFailures"])
plain = aws.sqs.Queue("plain")
aws.lambda_.EventSourceMapping("work", event_source_arn=plain.arn, function_name=fn.name,
    function_response_types=["ReportBatchItemFailures"])
"""
    )
    found = pairs(run_check(body, preview=preview), "mandatory")
    assert found == {("sqs-lambda-source-has-dlq", "plain")}


@pytest.mark.parametrize("preview", MODES)
def test_literal_alarm_dimension_is_not_judged_against_a_queue_name_unknown_in_preview(
    run_check: RunCheck, preview: bool
):
    # The DLQ's name derives from a table id: known at `up`, unknown in a preview. The alarm
    # names it literally; a preview cannot tell it apart, so it must not claim "no alarm".
    body = """
jobs = aws.dynamodb.Table("jobs", name="jobs", hash_key="id",
    attributes=[{"name": "id", "type": "S"}])
dlq = aws.sqs.Queue("jobs-dlq", name=pulumi.Output.concat(jobs.id, "-dlq"),
    message_retention_seconds=1209600)
aws.sqs.Queue("jobs-queue", redrive_policy=dlq.arn.apply(
    lambda arn: json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})))
aws.cloudwatch.MetricAlarm("jobs-dlq-alarm", namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible", dimensions={"QueueName": "%s"},
    statistic="Maximum", period=60, evaluation_periods=1, threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold", alarm_actions=["arn:aws:sns:x:1:t"])
"""
    assert pairs(run_check(body % "jobs-dlq", preview=preview), "mandatory") == set()
    wrong = pairs(run_check(body % "jobs-dlq-typo", preview=preview), "mandatory")
    # At `up` the names are known and the typo is caught; the preview cannot know.
    assert wrong == (set() if preview else {("sqs-dlq-has-alarm", "jobs-dlq")})


def test_program_modules_shadow_the_checkers_own_and_are_dropped_afterwards(tmp_path, monkeypatch):
    # A module of the checking process named as one of the program's (`policy`): a program
    # run by the real CLI would never see it, so the program's own must win for the run.
    checker_side = types.ModuleType("policy")
    checker_side.__file__ = str(tmp_path / "policy.py")  # not an installed module
    monkeypatch.setitem(sys.modules, "policy", checker_side)
    _, violations = check(FIXTURES / "local_modules", "dev")
    assert ("sqs-visibility-timeout-covers-lambda-timeout", "exports") in pairs(violations)
    assert sys.modules["policy"] is checker_side  # the process's module is back in place
    assert "settings" not in sys.modules  # the program's modules do not leak into the next run


def test_violations_come_in_source_order():
    _, violations = check(FIXTURES / "metric_math", "dev")
    keys = [(v.file or "", v.line or 0) for v in violations]
    assert len(keys) > 3 and keys == sorted(keys)
