"""The public helpers other components reuse: Powertools layer ARNs, stage config, alarms,
the function factory."""

from __future__ import annotations

import json

import pulumi
import pytest

from idempotent_messaging.components import alarms, iam
from idempotent_messaging.components.function import FunctionSpec, create_function
from idempotent_messaging.components.powertools import (
    partition_of_region,
    powertools_layer_arn,
    region_and_partition_of,
)
from idempotent_messaging.stage import StageConfig

from .conftest import PulumiHarness

pytestmark = pytest.mark.infra


def test_powertools_layer_arn_for_region_architecture_and_runtime() -> None:
    assert powertools_layer_arn("eu-west-1", "x86_64", "python3.13", 27) == (
        "arn:aws:lambda:eu-west-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-x86_64:27"
    )
    assert powertools_layer_arn("cn-north-1", "arm64", "python3.12", 5, "aws-cn").startswith(
        "arn:aws-cn:lambda:cn-north-1:498634801083:layer:"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"region": "moon-1"}, "region='moon-1'"),
        ({"architecture": "ppc"}, "architecture='ppc'"),
        ({"runtime": "python3.9"}, "runtime='python3.9'"),
        ({"version": 0}, "version=0"),
        ({"partition": "aws-us-gov"}, "partition='aws-us-gov'"),
    ],
)
def test_powertools_layer_arn_refuses_unpublished_combinations(
    kwargs: dict[str, object], message: str
) -> None:
    base: dict[str, object] = {
        "region": "us-east-1",
        "architecture": "arm64",
        "runtime": "python3.12",
        "version": 27,
    }
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        powertools_layer_arn(**{**base, **kwargs})  # type: ignore[arg-type]


def test_region_helpers() -> None:
    assert region_and_partition_of("arn:aws:sqs:ap-northeast-1:111122223333:q") == (
        "ap-northeast-1",
        "aws",
    )
    assert partition_of_region("cn-northwest-1") == "aws-cn"
    assert partition_of_region("us-gov-west-1") == "aws-us-gov"
    assert partition_of_region("eu-central-1") == "aws"
    with pytest.raises(ValueError, match="not a regional ARN"):
        region_and_partition_of("arn:aws:iam::111122223333:role/r")


def test_stage_config_reads_typed_values(pulumi_harness: PulumiHarness) -> None:
    seen: list[StageConfig] = []

    def program() -> None:
        seen.append(StageConfig.from_pulumi_config(pulumi.Config()))

    pulumi_harness.run(
        program,
        config={
            "idempotent-messaging:tracing": "true",
            "idempotent-messaging:alarmEmails": '["a@example.com"]',
            "idempotent-messaging:consumers": '{"orders": {"batchSize": 25}, "payments": {}}',
            "idempotent-messaging:fanouts": json.dumps(
                {"monthly-charge": {"scheduleExpressionTimezone": "UTC"}}
            ),
        },
    )
    (stage,) = seen
    assert stage.tracing is True
    assert stage.alarm_emails == ("a@example.com",)
    assert stage.consumers == {"orders": {"batchSize": 25}, "payments": {}}
    assert stage.fanouts == {"monthly-charge": {"scheduleExpressionTimezone": "UTC"}}
    assert stage.log_level == "INFO"


def test_stage_config_refuses_a_non_list_of_emails(pulumi_harness: PulumiHarness) -> None:
    def program() -> None:
        StageConfig.from_pulumi_config(pulumi.Config())

    with pytest.raises(ValueError, match="alarmEmails"):
        pulumi_harness.run(program, config={"idempotent-messaging:alarmEmails": '{"a": 1}'})


class _Holder(pulumi.ComponentResource):
    def __init__(self, name: str) -> None:
        super().__init__("test:index:Holder", name)


def test_create_function_helper_builds_role_policy_logs_and_alarms(
    pulumi_harness: PulumiHarness,
) -> None:
    def program() -> None:
        holder = _Holder("holder")
        create_function(
            "dispatch",
            FunctionSpec(
                function_name="billing-dev-dispatcher",
                handler="handlers.orders.handler",
                runtime="python3.12",
                architecture="arm64",
                timeout_seconds=60,
                memory_size_mb=512,
                environment={"X": "1"},
            ),
            statements=[iam.send_queue_statement("Enqueue", "arn:aws:sqs:ap-northeast-1:1:q")],
            alarm_actions=["arn:aws:sns:ap-northeast-1:1:alarms"],
            parent=holder,
        )

    run = pulumi_harness.run(program)
    holder = run.one("test:index:Holder")
    fn = run.one("aws:lambda/function:Function")
    assert fn.parent == holder.urn
    assert fn.inputs["name"] == "billing-dev-dispatcher"
    assert run.one("aws:iam/role:Role").inputs["name"] == "billing-dev-dispatcher-role"
    sids = [s["Sid"] for s in run.one("aws:iam/rolePolicy:RolePolicy").json("policy")["Statement"]]
    assert sids == ["Enqueue", "WriteOwnLogs"]
    metrics = sorted(
        a.inputs["metricName"] for a in run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
    )
    assert metrics == ["Errors", "Throttles"]


def test_an_alarm_without_actions_is_refused(pulumi_harness: PulumiHarness) -> None:
    def program() -> None:
        alarms.dlq_visible_alarm(
            "a", alarm_name="a", dlq_name="q-dlq", actions=[], parent=_Holder("h")
        )

    with pytest.raises(ValueError, match="notifies nobody"):
        pulumi_harness.run(program)


def test_alarm_topic_key_names_the_account_root_of_its_partition(
    pulumi_harness: PulumiHarness,
) -> None:
    def program() -> None:
        alarms.create_alarm_topic(
            "alarms",
            topic_name="cn-alarms",
            account_id="111122223333",
            partition="aws-cn",
            emails=["ops@example.com"],
            parent=None,
        )

    run = pulumi_harness.run(program)
    key = run.one("aws:kms/key:Key", "alarms-key")
    statements = {s["Sid"]: s for s in key.json("policy")["Statement"]}
    assert statements["AccountAdministersKey"]["Principal"] == {
        "AWS": "arn:aws-cn:iam::111122223333:root"
    }
    assert statements["CloudWatchPublishesAlarms"]["Principal"] == {
        "Service": "cloudwatch.amazonaws.com"
    }
    topic = run.one("aws:sns/topic:Topic", "alarms")
    assert topic.parent.endswith("pulumi:pulumi:Stack::idempotent-messaging-test")
    (subscription,) = run.of_type("aws:sns/topicSubscription:TopicSubscription")
    assert subscription.inputs["endpoint"] == "ops@example.com"


def test_a_stack_alarm_topic_refuses_a_malformed_address_before_any_resource(
    pulumi_harness: PulumiHarness,
) -> None:
    def program() -> None:
        alarms.create_stack_alarm_topic("alarms", topic_name="t", emails=["not-an-address"])

    with pytest.raises(ValueError, match="alarm_emails='not-an-address'"):
        pulumi_harness.run(program)


def test_each_alarm_address_redrives_what_sns_cannot_email_to_a_queue_only_its_topic_fills(
    pulumi_harness: PulumiHarness,
) -> None:
    # SNS discards a message it cannot deliver once the protocol's delivery policy is spent,
    # unless the subscription has a dead-letter queue (SNS Developer Guide, "Amazon SNS
    # dead-letter queues"): the pack's sns-subscription-has-redrive says so of every protocol.
    def program() -> None:
        alarms.create_alarm_topic(
            "alarms",
            topic_name="orders-alarms",
            account_id="111122223333",
            emails=["ops@example.com", "oncall@example.com"],
            parent=None,
        )

    run = pulumi_harness.run(program)
    queue = run.one("aws:sqs/queue:Queue", "alarms-undelivered")
    assert queue.inputs["name"] == "orders-alarms-undelivered"
    assert queue.inputs["sqsManagedSseEnabled"] is True  # not aws/sqs: SNS could not send
    assert queue.inputs["messageRetentionSeconds"] == 14 * 24 * 3600
    subscriptions = run.of_type("aws:sns/topicSubscription:TopicSubscription")
    assert len(subscriptions) == 2
    for subscription in subscriptions:
        redrive = subscription.json("redrivePolicy")
        assert redrive == {"deadLetterTargetArn": queue.outputs["arn"]}
    policy = run.one("aws:sqs/queuePolicy:QueuePolicy", "alarms-undelivered-policy")
    statements = {s["Sid"]: s for s in policy.json("policy")["Statement"]}
    topic = run.one("aws:sns/topic:Topic", "alarms")
    assert statements["AlarmTopicDeadLetters"]["Principal"] == {"Service": "sns.amazonaws.com"}
    assert statements["AlarmTopicDeadLetters"]["Condition"] == {
        "ArnEquals": {"aws:SourceArn": topic.outputs["arn"]}
    }
    assert statements["DenyInsecureTransport"]["Effect"] == "Deny"
    alarm = run.one("aws:cloudwatch/metricAlarm:MetricAlarm", "alarms-undelivered-visible")
    assert alarm.inputs["dimensions"] == {"QueueName": "orders-alarms-undelivered"}
    assert alarm.inputs["alarmActions"] == [topic.outputs["arn"]]
    assert "could not be emailed" in alarm.inputs["alarmDescription"]


def test_an_alarm_topic_without_addresses_has_no_undelivered_queue(
    pulumi_harness: PulumiHarness,
) -> None:
    def program() -> None:
        alarms.create_alarm_topic(
            "alarms", topic_name="t", account_id="111122223333", emails=(), parent=None
        )

    run = pulumi_harness.run(program)
    assert run.of_type("aws:sqs/queue:Queue") == []
    assert run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm") == []
