"""The pack fixes what it safely can: CrossGuard remediations, in the analyzer and offline.

pulumi-policy 1.21 runs a policy's `remediate` in the analyzer's `Remediate` call (the engine
makes it for each resource as it registers, with the resource's inputs, before analyzing it)
when the policy's enforcement level is `remediate`, for `ResourceValidationPolicy` instances
only; a stack policy at level `remediate` is reported as mandatory. The pack's remediable stack
rules (`StackPolicyWithRemediation`) are both kinds; these tests drive pulumi-policy's own
servicer with real protobufs (the path `pulumi up --policy-pack` takes) and the offline check.

What a remediation may do: change one known input, computed from `limits`, never lower what
the rule protects, never touch an unknown (preview) or secret value, nor a resource whose
finding a waiver accepts; off unless the policy config sets `remediate`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import proto

from idempotent_messaging import limits
from idempotent_messaging.offline import Violation, main
from idempotent_messaging.offline.analyzer import make_servicer
from idempotent_messaging.offline.remediation import changes, remediable, with_remediation
from idempotent_messaging.rules.pack import POLICIES, RULES, StackPolicyWithRemediation
from idempotent_messaging.rules.values import UNKNOWN_STRING_SENTINEL
from tests.policy.conftest import policy_config, write_project

pytestmark = pytest.mark.policy

QUEUE = "aws:sqs/queue:Queue"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
ESM = "aws:lambda/eventSourceMapping:EventSourceMapping"
SCHEDULE = "aws:scheduler/schedule:Schedule"
REDRIVE_POLICY = "aws:sqs/redrivePolicy:RedrivePolicy"
SECRET_SIG = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
ARN = "arn:aws:sqs:eu-west-1:123456789012:orders"
AT_DEPLOY = {
    "lambda-sqs-esm-reports-batch-item-failures",
    "scheduler-schedule-has-retry-and-dlq",
    "sqs-max-receive-count-in-range",
    "sqs-queue-encrypted",
    "sqs-queue-tls-only",
}
# Fixes computed from the whole graph: program edits only the offline check applies
# (tests/policy/test_remediation_edits.py).
PROGRAM_EDITS = {
    "sqs-visibility-timeout-covers-lambda-timeout",
    "sqs-visibility-timeout-6x-lambda-timeout",
    "sqs-dlq-retention-exceeds-source",
}


def remediate(
    type_: str, props: dict[str, Any], config: dict[str, Any] | None = None, name: str = "r"
) -> dict[str, dict[str, Any]]:
    """policy name -> the properties its remediation returns, through the real servicer."""
    servicer = make_servicer(config if config is not None else with_remediation({}))
    struct = struct_pb2.Struct()
    struct.update(props)
    response = servicer.Remediate(
        proto.AnalyzeRequest(
            type=type_, properties=struct, urn=f"urn:pulumi:dev::p::{type_}::{name}", name=name
        ),
        None,
    )
    return {
        r.policyName: json_format.MessageToDict(r.properties)
        for r in response.remediations
        if r.HasField("properties")
    }


def redrive(count: Any) -> str:
    return json.dumps({"deadLetterTargetArn": f"{ARN}-dlq", "maxReceiveCount": count})


# --- which rules remediate, and that it is off by default --------------------------------------


def test_the_remediable_rules_are_those_whose_fix_is_one_input_change():
    assert set(remediable()) == AT_DEPLOY | PROGRAM_EDITS
    by_name = {r.name: r for r in RULES}
    for name in AT_DEPLOY:
        assert by_name[name].remedy is not None and by_name[name].remedies
        assert by_name[name].graph_remedy is None
    # A fix that needs another resource's value: no remediation the engine could run, and the
    # catalogue says the offline check makes it as a program edit.
    for name in PROGRAM_EDITS:
        rule = by_name[name]
        assert rule.remedy is None and rule.graph_remedy is not None
        assert rule.remedies.startswith("Offline only") and "`pulumi up` cannot" in rule.remedies
    # Fixes that need a decision remediate nowhere.
    for name in ("sqs-lambda-source-has-dlq", "sqs-dlq-has-alarm", "sqs-dlq-type-matches-source"):
        assert by_name[name].remedy is None and by_name[name].graph_remedy is None


def test_nothing_is_remediated_unless_the_policy_config_says_remediate():
    bad = {"sqsManagedSseEnabled": False, "redrivePolicy": redrive(1)}
    assert remediate(QUEUE, bad, config={}) == {}
    assert remediate(QUEUE, bad, config={"sqs-queue-encrypted": "mandatory"}) == {}
    only = remediate(QUEUE, bad, config={"sqs-queue-encrypted": "remediate"})
    assert set(only) == {"sqs-queue-encrypted"}


# --- each remediation, through the servicer ----------------------------------------------------


@pytest.mark.parametrize(
    ("count", "fixed"),
    [(1, limits.DEFAULT_MIN_MAX_RECEIVE_COUNT), (100, limits.DEFAULT_MAX_MAX_RECEIVE_COUNT)],
)
def test_max_receive_count_is_moved_into_the_configured_range(count: int, fixed: int):
    got = remediate(QUEUE, {"redrivePolicy": redrive(count), "name": "orders"})
    new = json.loads(got["sqs-max-receive-count-in-range"]["redrivePolicy"])
    assert new == {"deadLetterTargetArn": f"{ARN}-dlq", "maxReceiveCount": fixed}
    config = with_remediation({"sqs-max-receive-count-in-range": {"min": 5, "max": 8}})
    # A separate aws.sqs.RedrivePolicy resource, with the range a policy config narrows.
    narrow = remediate(REDRIVE_POLICY, {"redrivePolicy": redrive(count)}, config)
    document = json.loads(narrow["sqs-max-receive-count-in-range"]["redrivePolicy"])
    assert document["maxReceiveCount"] == (5 if count < 5 else 8)
    assert "sqs-max-receive-count-in-range" not in remediate(QUEUE, {"redrivePolicy": redrive(5)})


def test_sse_is_turned_on_only_where_no_key_is_named():
    assert remediate(QUEUE, {})["sqs-queue-encrypted"] == {"sqsManagedSseEnabled": True}
    assert remediate(QUEUE, {"sqsManagedSseEnabled": False})["sqs-queue-encrypted"] == {
        "sqsManagedSseEnabled": True
    }
    assert "sqs-queue-encrypted" not in remediate(QUEUE, {"kmsMasterKeyId": "alias/orders"})
    assert "sqs-queue-encrypted" not in remediate(QUEUE, {"sqsManagedSseEnabled": True})


def test_a_tls_only_statement_is_appended_to_a_known_queue_policy():
    allow = {
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
        "Action": "sqs:SendMessage",
        "Resource": ARN,
    }
    policy = json.dumps({"Version": "2012-10-17", "Statement": [allow]})
    got = remediate(QUEUE_POLICY, {"queueUrl": "https://q/orders", "policy": policy})
    doc = json.loads(got["sqs-queue-tls-only"]["policy"])
    assert doc["Statement"] == [allow, limits.tls_only_statement(ARN)]
    assert got["sqs-queue-tls-only"]["queueUrl"] == "https://q/orders"
    # Already denying plain HTTP, or naming no single queue: left alone.
    done = json.dumps({"Statement": [allow, limits.tls_only_statement(ARN)]})
    assert "sqs-queue-tls-only" not in remediate(QUEUE_POLICY, {"policy": done})
    assert "sqs-queue-tls-only" not in remediate(QUEUE, {})  # a policy may come separately


def test_an_sqs_mapping_gains_report_batch_item_failures():
    got = remediate(ESM, {"eventSourceArn": ARN, "functionName": "fn", "batchSize": 10})
    assert got["lambda-sqs-esm-reports-batch-item-failures"] == {
        "eventSourceArn": ARN,
        "functionName": "fn",
        "batchSize": 10,
        "functionResponseTypes": ["ReportBatchItemFailures"],
    }
    # A preview's unknown source is SQS by its properties, as the rule decides.
    unknown = remediate(ESM, {"eventSourceArn": UNKNOWN_STRING_SENTINEL, "functionName": "fn"})
    assert "lambda-sqs-esm-reports-batch-item-failures" in unknown
    stream = {
        "eventSourceArn": "arn:aws:kinesis:eu-west-1:123456789012:stream/s",
        "startingPosition": "LATEST",
    }
    assert "lambda-sqs-esm-reports-batch-item-failures" not in remediate(ESM, stream)


def test_a_schedule_retry_policy_is_lowered_into_the_bounds_and_no_dlq_is_invented():
    target = {
        "arn": "arn:aws:lambda:eu-west-1:123456789012:function:f",
        "retryPolicy": {"maximumRetryAttempts": 200},
    }
    got = remediate(SCHEDULE, {"target": target})["scheduler-schedule-has-retry-and-dlq"]
    assert got["target"] == {**target, "retryPolicy": {"maximumRetryAttempts": 185}}
    assert "deadLetterConfig" not in got["target"]
    # Scheduler's defaults exceed tighter configured bounds: both fields are set.
    tight = with_remediation(
        {
            "scheduler-schedule-has-retry-and-dlq": {
                "maxRetryAttempts": 5,
                "maxEventAgeSeconds": 3600,
            }
        }
    )
    got = remediate(SCHEDULE, {"target": {"arn": target["arn"]}}, tight)
    assert got["scheduler-schedule-has-retry-and-dlq"]["target"]["retryPolicy"] == {
        "maximumRetryAttempts": 5,
        "maximumEventAgeInSeconds": 3600,
    }


# --- what a remediation never does ------------------------------------------------------------


def test_a_remediation_never_touches_an_unknown_or_secret_value():
    unknown = {
        "redrivePolicy": UNKNOWN_STRING_SENTINEL,
        "sqsManagedSseEnabled": UNKNOWN_STRING_SENTINEL,
    }
    assert remediate(QUEUE, unknown) == {}
    secret = {"redrivePolicy": {**SECRET_SIG, "value": redrive(1)}, "kmsMasterKeyId": "alias/k"}
    assert remediate(QUEUE, secret) == {}
    policy = {"policy": {**SECRET_SIG, "value": json.dumps({"Statement": []})}}
    assert remediate(QUEUE_POLICY, policy) == {}


def test_a_remediation_keeps_the_other_properties_secrets_included():
    props = {
        "sqsManagedSseEnabled": False,
        "tags": {"team": "orders"},
        "name": {**SECRET_SIG, "value": "orders"},
    }
    got = remediate(QUEUE, props)["sqs-queue-encrypted"]
    assert got == {**props, "sqsManagedSseEnabled": True}


def test_a_waived_finding_is_not_remediated():
    tags = {"idempotent-messaging:waive:sqs-queue-encrypted": "encrypted by the broker upstream"}
    assert remediate(QUEUE, {"tags": tags}) == {}
    config = with_remediation(
        {
            "sqs-queue-encrypted": {
                "waivers": [{"name": "legacy-*", "reason": "owned by team X until Q3"}]
            }
        }
    )
    assert remediate(QUEUE, {}, config, name="legacy-orders") == {}
    assert "sqs-queue-encrypted" in remediate(QUEUE, {}, config, name="orders")


def test_a_remediation_never_lowers_what_its_rule_protects():
    for count in range(0, 40):
        fixed = limits.max_receive_count_in_range(count)
        assert limits.DEFAULT_MIN_MAX_RECEIVE_COUNT <= fixed <= limits.DEFAULT_MAX_MAX_RECEIVE_COUNT
        if limits.DEFAULT_MIN_MAX_RECEIVE_COUNT <= count <= limits.DEFAULT_MAX_MAX_RECEIVE_COUNT:
            assert fixed == count  # a value in range is never moved
    # Encryption only ever turns on; response types only gain; a retry policy only within bounds.
    types = remediate(ESM, {"eventSourceArn": ARN, "functionResponseTypes": []})
    assert types["lambda-sqs-esm-reports-batch-item-failures"]["functionResponseTypes"] == [
        "ReportBatchItemFailures"
    ]


# --- the analyzer path: a stack rule that remediates -------------------------------------------


def test_a_remediable_stack_rule_is_both_policies_and_still_validates_the_stack():
    policy = next(p for p in POLICIES if p.name == "sqs-queue-tls-only")
    assert isinstance(policy, StackPolicyWithRemediation)
    servicer = make_servicer(with_remediation({}))
    queue = struct_pb2.Struct()
    queue.update({"name": "orders", "arn": ARN})
    urn = f"urn:pulumi:dev::p::{QUEUE}::orders"
    # Resource phase: nothing to report (the stack phase reports this rule).
    analyzed = servicer.Analyze(
        proto.AnalyzeRequest(type=QUEUE, properties=queue, urn=urn, name="orders"), None
    )
    assert "sqs-queue-tls-only" not in {d.policyName for d in analyzed.diagnostics}
    stack = servicer.AnalyzeStack(
        proto.AnalyzeStackRequest(
            resources=[proto.AnalyzerResource(type=QUEUE, properties=queue, urn=urn, name="orders")]
        ),
        None,
    )
    found = {d.policyName: d for d in stack.diagnostics}
    # At level `remediate`, what the remediation could not fix is mandatory (pulumi-policy).
    assert found["sqs-queue-tls-only"].enforcementLevel == proto.MANDATORY
    info = servicer.GetAnalyzerInfo(None, None)
    assert "sqs-queue-tls-only" in {p.name for p in info.policies}


# --- offline: --remediate, in every format ----------------------------------------------------

BROKEN = """
dlq = aws.sqs.Queue("dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "orders",
    visibility_timeout_seconds=360,
    sqs_managed_sse_enabled=False,
    redrive_policy=dlq.arn.apply(
        lambda a: json.dumps({"deadLetterTargetArn": a, "maxReceiveCount": 1})
    ),
)
fn = aws.lambda_.Function("fn", role="arn:aws:iam::123456789012:role/r", runtime="python3.12",
    handler="a.h", code=pulumi.AssetArchive({}), timeout=60)
aws.lambda_.EventSourceMapping("esm", event_source_arn=queue.arn, function_name=fn.arn)
"""


def test_offline_remediate_reports_each_fix_and_rechecks_the_remediated_stack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    project = write_project(tmp_path / "p", BROKEN)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(policy_config()))
    argv = ["--project", str(project), "--stack", "dev", "--config", str(config)]
    assert main([*argv, "--format", "json"]) == 1
    before = json.loads(capsys.readouterr().out)
    fixed_rules = {
        "sqs-max-receive-count-in-range",
        "sqs-queue-encrypted",
        "lambda-sqs-esm-reports-batch-item-failures",
    }
    assert fixed_rules <= {v["policy"] for v in before["violations"]}
    assert before["remediations"] == []

    main([*argv, "--remediate", "--format", "json"])
    after = json.loads(capsys.readouterr().out)
    assert not fixed_rules & {v["policy"] for v in after["violations"]}
    assert {(v["policy"], v["name"]) for v in after["violations"]} < {
        (v["policy"], v["name"]) for v in before["violations"]
    }
    got = {
        (r["policy"], r["name"], r["property"], json.dumps(r["before"]), json.dumps(r["after"]))
        for r in after["remediations"]
    }
    assert got == {
        ("sqs-max-receive-count-in-range", "orders", "redrivePolicy.maxReceiveCount", "1", "3"),
        ("sqs-queue-encrypted", "orders", "sqsManagedSseEnabled", "false", "true"),
        (
            "lambda-sqs-esm-reports-batch-item-failures",
            "esm",
            "functionResponseTypes",
            "null",
            '["ReportBatchItemFailures"]',
        ),
    }
    for r in after["remediations"]:
        assert r["file"] == "__main__.py" and r["line"] > 0

    main([*argv, "--remediate"])
    text = capsys.readouterr().out
    line = "[remediated] sqs-queue-encrypted: aws:sqs/queue:Queue 'orders': "
    assert line + "sqsManagedSseEnabled false -> true" in text
    assert "3 property change(s) remediated" in text

    main([*argv, "--remediate", "--format", "sarif"])
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    notes = {r["ruleId"]: r for r in results if r["level"] == "note"}
    assert set(notes) == fixed_rules
    source = (project / "__main__.py").read_text().splitlines()
    sse = notes["sqs-queue-encrypted"]["fixes"][0]["artifactChanges"][0]
    replacement = sse["replacements"][0]
    region = replacement["deletedRegion"]
    line = source[region["startLine"] - 1]
    # The fix replaces the literal False of `sqs_managed_sse_enabled=False` by True.
    assert line[region["startColumn"] - 1 : region["endColumn"] - 1] == "False"
    assert replacement["insertedContent"]["text"] == "True"
    added = notes["lambda-sqs-esm-reports-batch-item-failures"]["fixes"][0]["artifactChanges"][0]
    assert (
        added["replacements"][0]["insertedContent"]["text"]
        == ", function_response_types=['ReportBatchItemFailures']"
    )
    assert "fixes" not in notes["sqs-max-receive-count-in-range"]  # inside a JSON document


def test_changes_name_each_property_path_that_differs():
    before = {"a": 1.0, "doc": json.dumps({"x": 1, "y": [1]}), "list": ["p"]}
    after = {"a": 1.0, "doc": json.dumps({"x": 2, "y": [1]}), "list": ["p", "q"], "new": True}
    assert list(changes(before, after)) == [
        ("doc.x", 1, 2),
        ("list[1]", None, "q"),
        ("new", None, True),
    ]


def test_a_config_that_sets_remediate_remediates_without_the_flag(
    run_check: Callable[..., list[Violation]],
):
    body = BROKEN
    violations = run_check(body, config={"sqs-queue-encrypted": "remediate"})
    assert "sqs-queue-encrypted" not in {v.policy for v in violations}
    assert "sqs-max-receive-count-in-range" in {v.policy for v in violations}
