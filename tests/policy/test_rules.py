"""Every rule: a violating and a compliant raw pulumi_aws program, in `up` and `preview` mode."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from idempotent_messaging.offline import Violation, check
from tests.policy.conftest import GOOD, pairs, policy_config

pytestmark = pytest.mark.policy

RunCheck = Callable[..., list[Violation]]
MODES = [pytest.param(False, id="up"), pytest.param(True, id="preview")]


def variant(*replacements: tuple[str, str], extra: str = "") -> str:
    body = GOOD
    for old, new in replacements:
        assert old in body, old
        body = body.replace(old, new)
    return body + extra


@pytest.mark.parametrize("preview", MODES)
def test_well_configured_pipeline_has_no_violation_at_all(run_check: RunCheck, preview: bool):
    violations = run_check(GOOD, preview=preview)
    # Only the TLS-only advisory remains (GOOD declares no queue policy).
    assert pairs(violations) == {
        ("sqs-queue-tls-only", "orders"),
        ("sqs-queue-tls-only", "orders-dlq"),
    }


# (case id, program, expected pairs, in preview too)
CASES = [
    (
        "visibility-below-function-timeout",
        variant(("visibility_timeout_seconds=360", "visibility_timeout_seconds=30")),
        {
            ("sqs-visibility-timeout-covers-lambda-timeout", "orders"),
            ("sqs-visibility-timeout-6x-lambda-timeout", "orders"),
        },
    ),
    (
        "visibility-absent-uses-aws-default-30s",
        variant(("    visibility_timeout_seconds=360,\n", "")),
        {
            ("sqs-visibility-timeout-covers-lambda-timeout", "orders"),
            ("sqs-visibility-timeout-6x-lambda-timeout", "orders"),
        },
    ),
    (
        "visibility-below-6x-plus-batching-window",
        variant(
            ("visibility_timeout_seconds=360", "visibility_timeout_seconds=362"),
            ("batch_size=10,", "batch_size=10, maximum_batching_window_in_seconds=5,"),
        ),
        {("sqs-visibility-timeout-6x-lambda-timeout", "orders")},
    ),
    (
        "dlq-retention-equal-to-source-by-default",
        variant(("message_retention_seconds=1209600, ", "")),
        {("sqs-dlq-retention-exceeds-source", "orders-dlq")},
    ),
    (
        "fifo-source-standard-dlq",
        variant(
            ('"orders",\n', '"orders",\n    fifo_queue=True,\n    name="orders.fifo",\n'),
        ),
        {("sqs-dlq-type-matches-source", "orders-dlq")},
    ),
    (
        "max-receive-count-1",
        variant(('"maxReceiveCount": 5', '"maxReceiveCount": 1')),
        {("sqs-max-receive-count-in-range", "orders")},
    ),
    (
        "consumed-queue-without-redrive",
        variant(
            (
                "    redrive_policy=pulumi.Output.json_dumps",
                "    tags={}, __x=pulumi.Output.json_dumps",
            )
        ),
        set(),  # replaced below (placeholder keeps the table readable)
    ),
    (
        "esm-without-report-batch-item-failures",
        variant(('    function_response_types=["ReportBatchItemFailures"],\n', "")),
        {("lambda-sqs-esm-reports-batch-item-failures", "consumer-esm")},
    ),
    (
        "dlq-without-alarm",
        variant(
            (
                'alarm = aws.cloudwatch.MetricAlarm(\n    "dlq-alarm"',
                'alarm = dict(\n    name="dlq-alarm"',
            )
        ),
        {("sqs-dlq-has-alarm", "orders-dlq")},
    ),
    (
        "dlq-alarm-threshold-5",
        variant(("threshold=1,", "threshold=5,")),
        {("sqs-dlq-has-alarm", "orders-dlq")},
    ),
    (
        "dlq-alarm-without-actions",
        variant(("alarm_actions=[topic.arn],", "")),
        {("sqs-dlq-has-alarm", "orders-dlq")},
    ),
    (
        "idempotency-table-without-ttl",
        variant(('    ttl={"attribute_name": "ttl", "enabled": True},\n', "")),
        {("dynamodb-idempotency-table-has-ttl", "processed")},
    ),
]
CASES = [c for c in CASES if c[0] != "consumed-queue-without-redrive"]


@pytest.mark.parametrize("preview", MODES)
@pytest.mark.parametrize(("body", "expected"), [pytest.param(b, e, id=i) for i, b, e in CASES])
def test_misconfiguration_yields_exactly_its_violations(
    run_check: RunCheck, body: str, expected: set[tuple[str, str]], preview: bool
):
    found = pairs(run_check(body, preview=preview))
    found -= {("sqs-queue-tls-only", "orders"), ("sqs-queue-tls-only", "orders-dlq")}
    if preview and ("sqs-max-receive-count-in-range", "orders") in expected:
        # The redrive JSON is built from dlq.arn, unknown during a preview: no guess is made.
        assert found == set()
        return
    assert found == expected


@pytest.mark.parametrize("preview", MODES)
def test_queue_consumed_without_redrive_policy_needs_a_dlq(run_check: RunCheck, preview: bool):
    body = GOOD.replace(
        '    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, '
        '"maxReceiveCount": 5}),\n',
        "",
    )
    found = pairs(run_check(body, preview=preview), "mandatory")
    assert found == {("sqs-lambda-source-has-dlq", "orders")}


def test_a_dlq_consumed_by_a_lambda_needs_no_dlq_of_its_own(run_check: RunCheck):
    extra = """
aws.lambda_.EventSourceMapping(
    "dlq-reprocessor", event_source_arn=dlq.arn, function_name=fn.name,
    function_response_types=["ReportBatchItemFailures"],
)
"""
    found = pairs(run_check(GOOD + extra), "mandatory")
    assert ("sqs-lambda-source-has-dlq", "orders-dlq") not in found
    assert found == {
        # the DLQ's own visibility (default 30 s) vs the 60 s function still matters
        ("sqs-visibility-timeout-covers-lambda-timeout", "orders-dlq"),
    }


def test_sqs_mapping_without_on_failure_destination_is_not_flagged(run_check: RunCheck):
    # GOOD's mapping has no destination_config: no rule may demand an OnFailure destination.
    assert pairs(run_check(GOOD), "mandatory") == set()


def test_stream_mapping_needs_no_batch_item_failures(run_check: RunCheck):
    extra = """
stream = aws.kinesis.Stream("events", shard_count=1)
aws.lambda_.EventSourceMapping(
    "stream-esm", event_source_arn=stream.arn, function_name=fn.name, starting_position="LATEST"
)
"""
    for preview in (False, True):
        assert pairs(run_check(GOOD + extra, preview=preview), "mandatory") == set()


def test_separate_redrive_policy_resource_carries_the_violation(run_check: RunCheck):
    body = (
        GOOD.replace(
            '    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, '
            '"maxReceiveCount": 5}),\n',
            "",
        )
        + """
aws.sqs.RedrivePolicy(
    "orders-redrive",
    queue_url=queue.id,
    redrive_policy=pulumi.Output.json_dumps(
        {"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 30}
    ),
)
"""
    )
    found = pairs(run_check(body), "mandatory")
    assert found == {("sqs-max-receive-count-in-range", "orders-redrive")}
    # In preview the DLQ link still comes from the property dependency: no has-DLQ violation,
    # and the DLQ keeps its alarm / retention checks.
    assert pairs(run_check(body, preview=True), "mandatory") == set()


def test_literal_arns_and_names_link_mapping_queue_function_and_alarm(run_check: RunCheck):
    body = """
aws.sqs.Queue("orders-dlq", name="orders-dlq")
aws.sqs.Queue(
    "orders",
    name="orders",
    redrive_policy=json.dumps(
        {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
         "maxReceiveCount": "5"}
    ),
)
aws.lambda_.Function(
    "consumer", name="orders-consumer", role="arn:aws:iam::123456789012:role/r",
    runtime="python3.12", handler="app.handler", code=pulumi.AssetArchive({}), timeout=45,
)
aws.lambda_.EventSourceMapping(
    "esm", event_source_arn="arn:aws:sqs:us-east-1:123456789012:orders",
    function_name="orders-consumer",
)
aws.cloudwatch.MetricAlarm(
    "dlq-alarm", namespace="AWS/SQS", metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": "orders-dlq"}, statistic="Max", period=60, evaluation_periods=1,
    threshold=0, comparison_operator="GreaterThanThreshold",
    alarm_actions=["arn:aws:sns:us-east-1:123456789012:ops"],
)
"""
    for preview in (False, True):
        found = pairs(run_check(body, preview=preview), "mandatory")
        assert found == {
            ("sqs-visibility-timeout-covers-lambda-timeout", "orders"),
            ("sqs-dlq-retention-exceeds-source", "orders-dlq"),
            ("lambda-sqs-esm-reports-batch-item-failures", "esm"),
        }


def test_queue_referenced_by_url_in_queue_policy_gets_tls_only(run_check: RunCheck):
    body = (
        GOOD
        + """
for q, n in ((queue, "orders"), (dlq, "orders-dlq")):
    aws.sqs.QueuePolicy(
        f"{n}-tls",
        queue_url=q.url,
        policy=q.arn.apply(lambda arn: json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Deny", "Principal": "*", "Action": "sqs:*", "Resource": arn,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})),
    )
"""
    )
    assert pairs(run_check(body)) == set()


def test_fifo_detected_by_name_suffix_alone(run_check: RunCheck):
    body = GOOD.replace('"orders-dlq", message', '"orders-dlq", name="orders-dlq.fifo", message')
    assert pairs(run_check(body), "mandatory") == {("sqs-dlq-type-matches-source", "orders-dlq")}


def test_business_table_never_needs_ttl_but_tagged_state_table_does(run_check: RunCheck):
    extra = """
aws.dynamodb.Table("order-records", hash_key="order_id",
    attributes=[{"name": "order_id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST", point_in_time_recovery={"enabled": True})
aws.dynamodb.Table("ledger", hash_key="pk", attributes=[{"name": "pk", "type": "S"}],
    billing_mode="PAY_PER_REQUEST", point_in_time_recovery={"enabled": True},
    tags={"idempotent-messaging:role": "idempotency-state"})
"""
    found = pairs(run_check(GOOD + extra), "mandatory")
    assert found == {("dynamodb-idempotency-table-has-ttl", "ledger")}


def test_scheduler_schedule_needs_retry_policy_and_dlq(run_check: RunCheck):
    base = """
sched = aws.scheduler.Schedule(
    "monthly", schedule_expression="cron(0 3 1 * ? *)", flexible_time_window={"mode": "OFF"},
    target={"arn": "arn:aws:lambda:us-east-1:123456789012:function:f",
            "role_arn": "arn:aws:iam::123456789012:role/r"%s},
)
"""
    bad = pairs(run_check(base % ""), "mandatory")
    assert bad == {("scheduler-schedule-has-retry-and-dlq", "monthly")}
    good = base % (
        ', "retry_policy": {"maximum_retry_attempts": 3, "maximum_event_age_in_seconds": 3600},'
        ' "dead_letter_config": {"arn": "arn:aws:sqs:us-east-1:123456789012:sched-dlq"}'
    )
    assert pairs(run_check(good), "mandatory") == set()


def test_security_advisories_flag_unencrypted_resources_and_wildcards(run_check: RunCheck):
    body = """
aws.sqs.Queue("plain", sqs_managed_sse_enabled=False)
aws.sqs.Queue("kms", kms_master_key_id="alias/aws/sqs")
aws.sns.Topic("loud")
aws.dynamodb.Table("t", hash_key="k", attributes=[{"name": "k", "type": "S"}])
aws.iam.Policy("broad", policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["dynamodb:*"], "Resource": "*"},
    {"Effect": "Deny", "Action": "sqs:*", "Resource": "*"}]}))
aws.iam.Policy("narrow", policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["sqs:SendMessage"], "Resource": "*"}]}))
"""
    violations = run_check(body)
    assert all(v.enforcement == "advisory" for v in violations)
    found = pairs(violations) - {("sqs-queue-tls-only", "plain"), ("sqs-queue-tls-only", "kms")}
    assert found == {
        ("sqs-queue-encrypted", "plain"),
        ("sns-topic-encrypted", "loud"),
        ("dynamodb-table-pitr-enabled", "t"),
        ("iam-no-wildcard-actions", "broad"),
        # sqs:SendMessage supports resource-level permissions: "*" could name the queue
        ("iam-data-actions-name-resources", "narrow"),
    }


def test_preview_with_unknown_arns_still_catches_cross_resource_violations(run_check: RunCheck):
    body = variant(
        ("visibility_timeout_seconds=360", "visibility_timeout_seconds=30"),
        ("message_retention_seconds=1209600, ", ""),
        ("threshold=1,", "threshold=10,"),
    )
    violations = run_check(body, preview=True)
    assert {
        ("sqs-visibility-timeout-covers-lambda-timeout", "orders"),
        ("sqs-dlq-retention-exceeds-source", "orders-dlq"),
        ("sqs-dlq-has-alarm", "orders-dlq"),
    } <= pairs(violations, "mandatory")
    message = next(v.message for v in violations if v.policy == "sqs-dlq-has-alarm")
    assert "'dlq-alarm'" in message and "does not fire at 1 message" in message


def test_messages_name_resources_numbers_and_the_fix(run_check: RunCheck):
    body = variant(
        ("visibility_timeout_seconds=360", "visibility_timeout_seconds=100"),
        ("batch_size=10,", "batch_size=10, maximum_batching_window_in_seconds=5,"),
    )
    (v,) = [x for x in run_check(body) if x.policy == "sqs-visibility-timeout-6x-lambda-timeout"]
    for fragment in ("'orders'", "'consumer'", "100 s", "60 s", "5 s", "365 s", "Fix:"):
        assert fragment in v.message


def test_existing_queue_read_with_get_is_not_judged_by_aws_defaults(run_check: RunCheck):
    body = """
existing = aws.sqs.Queue.get(
    "legacy", "https://sqs.us-east-1.amazonaws.com/123456789012/legacy-events"
)
fn = aws.lambda_.Function(
    "consumer", role="arn:aws:iam::123456789012:role/r", runtime="python3.12",
    handler="app.handler", code=pulumi.AssetArchive({}), timeout=120,
)
aws.lambda_.EventSourceMapping(
    "legacy-esm", event_source_arn=existing.arn, function_name=fn.name,
    function_response_types=["ReportBatchItemFailures"],
)
"""
    for preview in (False, True):
        assert pairs(run_check(body, preview=preview), "mandatory") == set()


FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("preview", MODES)
def test_real_team_fifo_pipeline_yields_exactly_its_planted_violations(preview: bool):
    _, violations = check(FIXTURES / "real_team", "dev", preview=preview, config=policy_config())
    assert pairs(violations, "mandatory") == {
        ("lambda-sqs-esm-reports-batch-item-failures", "legacy-esm"),
        ("dynamodb-idempotency-table-has-ttl", "idem"),
    }
    assert pairs(violations, "advisory") == set()


@pytest.mark.parametrize("kind", ["stack", "resource"])
def test_a_crashing_rule_blocks_at_its_level_without_aborting_the_other_rules(
    kind: str, capsys: pytest.CaptureFixture[str]
):
    # Through pulumi-policy's own servicer, as `pulumi preview --policy-pack` runs the pack: a
    # rule that raises is never a silent pass. Its failure is its own violation at its level
    # (mandatory: the preview blocks), the stack trace goes to stderr, and the other rules run.
    from google.protobuf import struct_pb2
    from pulumi.runtime import proto
    from pulumi_policy import EnforcementLevel, Policy
    from pulumi_policy.policy import _PolicyAnalyzerServicer

    from idempotent_messaging.rules.pack import MANDATORY, _resource, _stack

    def boom(*_: object) -> list:
        raise RuntimeError("rule bug")

    def finds(*_: object) -> list:
        return ["a finding"]

    build = _stack if kind == "stack" else _resource
    policies: list[Policy] = [
        build("demo-rule", "demo", boom, MANDATORY, "none"),
        _resource("other-rule", "other", finds, MANDATORY, "none"),
    ]
    servicer = _PolicyAnalyzerServicer("p", "1", policies, EnforcementLevel.ADVISORY, None, "")
    queue = struct_pb2.Struct()
    queue.update({"name": "orders"})
    urn = "urn:pulumi:dev::p::aws:sqs/queue:Queue::orders"
    resource = proto.AnalyzeRequest(
        type="aws:sqs/queue:Queue", properties=queue, urn=urn, name="orders"
    )
    stack = proto.AnalyzeStackRequest(
        resources=[
            proto.AnalyzerResource(
                type="aws:sqs/queue:Queue", properties=queue, urn=urn, name="orders"
            )
        ]
    )
    diagnostics = [
        *servicer.Analyze(resource, None).diagnostics,
        *servicer.AnalyzeStack(stack, None).diagnostics,
    ]
    by_policy = {d.policyName: d for d in diagnostics}
    failed = by_policy["demo-rule"]
    assert failed.enforcementLevel == proto.MANDATORY
    assert "rule demo-rule could not decide" in failed.message and "RuntimeError" in failed.message
    assert '{"demo-rule": "advisory"}' in failed.message  # how to proceed meanwhile
    assert by_policy["other-rule"].message.endswith("a finding")
    err = capsys.readouterr().err
    assert "policy demo-rule" in err and "could not run: RuntimeError: rule bug" in err
    assert "Traceback (most recent call last)" in err
