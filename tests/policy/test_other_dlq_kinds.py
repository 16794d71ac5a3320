"""`sqs-dlq-has-alarm` for queues other services dead-letter into, not only redrive targets.

Scheduler targets, asynchronous Lambda invocations (function dead-letter config and
event-invoke-config on-failure destinations), SNS subscription redrive policies and stream
event source mappings' on-failure destinations: each kind has a violating program (no alarm on
its DLQ) and a compliant one (an alarm), in `up` and `preview` mode. GOOD supplies the topic,
role, function and a fully compliant redrive pipeline, so the only mandatory pair left is the
new DLQ's.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from idempotent_messaging.offline import Violation
from tests.policy.conftest import GOOD, pairs

pytestmark = pytest.mark.policy

RunCheck = Callable[..., list[Violation]]
MODES = [pytest.param(False, id="up"), pytest.param(True, id="preview")]

QUEUE = """
{var} = aws.sqs.Queue(
    "{name}", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
"""

# The schedule and the subscription invoke GOOD's function asynchronously: give it an
# on-failure destination (a topic, not a queue) so that only the tested DLQ is at stake.
ASYNC_FAILURE_PATH = """
aws.lambda_.FunctionEventInvokeConfig(
    "consumer-async", function_name=fn.name,
    destination_config={"on_failure": {"destination": topic.arn}},
)
"""

ALARM = """
aws.cloudwatch.MetricAlarm(
    "{name}-alarm",
    namespace="AWS/SQS",
    metric_name="{metric}",
    dimensions={{"QueueName": {var}.name}},
    statistic="Sum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
"""

RETRY = '"retry_policy": {"maximum_retry_attempts": 3, "maximum_event_age_in_seconds": 3600}'

# kind -> (DLQ logical name, the resource that dead-letters into `xdlq`)
USERS: dict[str, tuple[str, str]] = {
    "scheduler": (
        "sched-dlq",
        """
aws.scheduler.Schedule(
    "monthly", schedule_expression="cron(0 3 1 * ? *)", flexible_time_window={"mode": "OFF"},
    target={"arn": fn.arn, "role_arn": role.arn, <RETRY>,
            "dead_letter_config": {"arn": xdlq.arn}},
)
""".replace("<RETRY>", RETRY)
        + ASYNC_FAILURE_PATH,
    ),
    "lambda-dead-letter-config": (
        "async-dlq",
        """
aws.lambda_.Function(
    "worker", role=role.arn, runtime="python3.12", handler="app.handler",
    code=pulumi.AssetArchive({}), dead_letter_config={"target_arn": xdlq.arn},
)
""",
    ),
    "event-invoke-config-on-failure": (
        "onfail-dlq",
        """
aws.lambda_.FunctionEventInvokeConfig(
    "consumer-async", function_name=fn.name, maximum_retry_attempts=2,
    destination_config={"on_failure": {"destination": xdlq.arn}},
)
""",
    ),
    "sns-subscription-redrive": (
        "sub-dlq",
        """
aws.sns.TopicSubscription(
    "alerts-to-fn", topic=topic.arn, protocol="lambda", endpoint=fn.arn,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": xdlq.arn}),
)
# SNS moves undeliverable messages to the subscription's DLQ as sns.amazonaws.com: the DLQ's
# policy must admit it (SNS Developer Guide, "Configuring an Amazon SNS dead-letter queue").
aws.sqs.QueuePolicy(
    "sub-dlq-policy", queue_url=xdlq.id,
    policy=pulumi.Output.json_dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage",
        "Resource": xdlq.arn, "Condition": {"ArnEquals": {"aws:SourceArn": topic.arn}}}]}),
)
"""
        + ASYNC_FAILURE_PATH,
    ),
    "stream-mapping-on-failure": (
        "stream-dlq",
        """
stream = aws.kinesis.Stream("events", shard_count=1)
aws.lambda_.EventSourceMapping(
    "stream-esm", event_source_arn=stream.arn, function_name=fn.name,
    starting_position="LATEST",
    destination_config={"on_failure": {"destination_arn": xdlq.arn}},
)
""",
    ),
}


def program(kind: str, alarm_metric: str | None) -> str:
    name, user = USERS[kind]
    body = GOOD + QUEUE.format(var="xdlq", name=name) + user
    if alarm_metric is not None:
        body += ALARM.format(name=name, metric=alarm_metric, var="xdlq")
    return body


@pytest.mark.parametrize("preview", MODES)
@pytest.mark.parametrize("kind", sorted(USERS))
def test_dead_letter_queue_of_another_service_without_alarm_is_flagged_on_the_dlq(
    run_check: RunCheck, kind: str, preview: bool
):
    violations = run_check(program(kind, None), preview=preview)
    name = USERS[kind][0]
    assert pairs(violations, "mandatory") == {("sqs-dlq-has-alarm", name)}
    message = next(v.message for v in violations if v.policy == "sqs-dlq-has-alarm")
    assert f"DLQ '{name}' (dead-letter queue of " in message
    assert "threshold 1" in message


@pytest.mark.parametrize("preview", MODES)
@pytest.mark.parametrize("kind", sorted(USERS))
@pytest.mark.parametrize("metric", ["ApproximateNumberOfMessagesVisible", "NumberOfMessagesSent"])
def test_dead_letter_queue_of_another_service_with_alarm_passes(
    run_check: RunCheck, kind: str, metric: str, preview: bool
):
    assert pairs(run_check(program(kind, metric), preview=preview), "mandatory") == set()


@pytest.mark.parametrize("preview", MODES)
def test_literal_sqs_arn_in_lambda_dead_letter_config_links_by_name(
    run_check: RunCheck, preview: bool
):
    body = (
        GOOD
        + """
lit = aws.sqs.Queue("lit", name="lit-dlq", message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True)
aws.lambda_.Function(
    "worker", role=role.arn, runtime="python3.12", handler="app.handler",
    code=pulumi.AssetArchive({}),
    dead_letter_config={"target_arn": "arn:aws:sqs:us-east-1:123456789012:lit-dlq"},
)
"""
    )
    assert pairs(run_check(body, preview=preview), "mandatory") == {("sqs-dlq-has-alarm", "lit")}


@pytest.mark.parametrize("preview", MODES)
def test_sns_topic_destinations_and_schedule_target_queues_are_not_dlqs(
    run_check: RunCheck, preview: bool
):
    # A queue the schedule delivers TO is its target, and an SNS topic as dead-letter target or
    # on-failure destination is no queue: neither may be demanded a DLQ alarm.
    body = (
        GOOD
        + QUEUE.format(var="jobs", name="jobs")
        + """
aws.scheduler.Schedule(
    "tick", schedule_expression="rate(1 hour)", flexible_time_window={"mode": "OFF"},
    target={"arn": jobs.arn, "role_arn": role.arn, <RETRY>,
            "dead_letter_config": {"arn": "arn:aws:sqs:us-east-1:123456789012:elsewhere"}},
)
aws.lambda_.Function(
    "worker", role=role.arn, runtime="python3.12", handler="app.handler",
    code=pulumi.AssetArchive({}), dead_letter_config={"target_arn": topic.arn},
)
aws.lambda_.FunctionEventInvokeConfig(
    "consumer-async", function_name=fn.name,
    destination_config={"on_failure": {"destination": topic.arn},
                        "on_success": {"destination": jobs.arn}},
)
""".replace("<RETRY>", RETRY)
    )
    assert pairs(run_check(body, preview=preview), "mandatory") == set()


@pytest.mark.parametrize("preview", MODES)
def test_scheduler_dlq_consumed_by_a_replayer_needs_no_dlq_of_its_own(
    run_check: RunCheck, preview: bool
):
    # Logical and physical names say nothing about DLQs: only the schedule makes it one.
    body = (
        GOOD
        + QUEUE.format(var="xdlq", name="parking")
        + ALARM.format(name="parking", metric="ApproximateNumberOfMessagesVisible", var="xdlq")
        + USERS["scheduler"][1]
        + """
aws.lambda_.EventSourceMapping(
    "replayer", event_source_arn=xdlq.arn, function_name=fn.name,
    function_response_types=["ReportBatchItemFailures"],
)
"""
    )
    found = pairs(run_check(body, preview=preview), "mandatory")
    assert ("sqs-lambda-source-has-dlq", "parking") not in found
    # the replayer's 60 s function vs the queue's default 30 s visibility still matters
    assert found == {("sqs-visibility-timeout-covers-lambda-timeout", "parking")}


@pytest.mark.parametrize("preview", MODES)
def test_schedule_delivering_to_a_queue_flags_only_its_dlq_never_its_target(
    run_check: RunCheck, preview: bool
):
    body = (
        GOOD
        + QUEUE.format(var="jobs", name="jobs")
        + QUEUE.format(var="xdlq", name="sched-dlq")
        + USERS["scheduler"][1].replace('"arn": fn.arn', '"arn": jobs.arn')
    )
    found = pairs(run_check(body, preview=preview), "mandatory")
    assert ("sqs-dlq-has-alarm", "jobs") not in found
    # A preview cannot tell which of two unknown queue ARNs under `target` is the DLQ (one
    # dependency list per top-level property): undecided there, caught by `up`.
    assert found == (set() if preview else {("sqs-dlq-has-alarm", "sched-dlq")})
