"""Each IdempotentQueueConsumer option changes exactly what it promises."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from idempotent_messaging.components import BusinessTableArgs
from idempotent_messaging.runtime import env

from .conftest import ACCOUNT, REGION, ConsumerRunner, PulumiHarness, Run

pytestmark = pytest.mark.infra

KMS_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
EXISTING_TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:shared-notifications"
EXISTING_ALARMS = f"arn:aws:sns:{REGION}:{ACCOUNT}:ops-alarms"
EXISTING_TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/ledger"


def statements(run: Run) -> dict[str, dict[str, Any]]:
    policy = run.one("aws:iam/rolePolicy:RolePolicy").json("policy")
    return {s["Sid"]: s for s in policy["Statement"]}


def test_fifo_makes_both_queues_fifo_with_fifo_names(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(fifo=True, content_based_deduplication=True)
    queue = run.one("aws:sqs/queue:Queue", "orders-queue")
    dlq = run.one("aws:sqs/queue:Queue", "orders-queue-dlq")
    assert queue.inputs["name"] == "orders-test.fifo"
    assert dlq.inputs["name"] == "orders-test-dlq.fifo"
    assert queue.inputs["fifoQueue"] is True and dlq.inputs["fifoQueue"] is True
    assert queue.inputs["contentBasedDeduplication"] is True
    # Distinct poison messages with equal bodies must not merge in the DLQ.
    assert "contentBasedDeduplication" not in dlq.inputs
    fn = run.one("aws:lambda/function:Function")
    assert fn.inputs["environment"]["variables"][env.SOURCE_QUEUE_FIFO] == "true"
    assert run.values["queue_name"] == "orders-test.fifo"


def test_high_throughput_fifo_scopes_dedup_and_throughput_per_group_on_both_queues(
    run_consumer: ConsumerRunner,
) -> None:
    plain = run_consumer(fifo=True)
    for name in ("orders-queue", "orders-queue-dlq"):
        queue = plain.one("aws:sqs/queue:Queue", name)
        assert "deduplicationScope" not in queue.inputs  # AWS default: per queue, 300 calls/s
        assert "fifoThroughputLimit" not in queue.inputs
    fast = run_consumer(fifo=True, high_throughput_fifo=True)
    for name in ("orders-queue", "orders-queue-dlq"):
        queue = fast.one("aws:sqs/queue:Queue", name)
        assert queue.inputs["deduplicationScope"] == "messageGroup"
        assert queue.inputs["fifoThroughputLimit"] == "perMessageGroupId"


def test_fifo_accepts_its_maximum_batch_of_ten_without_a_window(
    run_consumer: ConsumerRunner,
) -> None:
    run = run_consumer(fifo=True, batch_size=10)
    esm = run.one("aws:lambda/eventSourceMapping:EventSourceMapping")
    assert esm.inputs["batchSize"] == 10
    assert "maximumBatchingWindowInSeconds" not in esm.inputs  # FIFO accepts none


def test_large_batches_with_a_window_raise_the_visibility(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(
        batch_size=100, maximum_batching_window_seconds=20, function_timeout_seconds=60
    )
    esm = run.one("aws:lambda/eventSourceMapping:EventSourceMapping")
    queue = run.one("aws:sqs/queue:Queue", "orders-queue")
    assert esm.inputs["batchSize"] == 100
    assert esm.inputs["maximumBatchingWindowInSeconds"] == 20
    assert queue.inputs["visibilityTimeoutSeconds"] == 6 * 60 + 20


def test_explicit_visibility_above_recommended_is_kept(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(visibility_timeout_seconds=900)
    for queue in run.of_type("aws:sqs/queue:Queue"):
        assert queue.inputs["visibilityTimeoutSeconds"] == 900


def test_retention_and_receive_count_options(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(
        message_retention_seconds=3600,
        dlq_message_retention_seconds=7200,
        max_receive_count=3,
        claim_ttl_seconds=10800,
    )
    queue = run.one("aws:sqs/queue:Queue", "orders-queue")
    dlq = run.one("aws:sqs/queue:Queue", "orders-queue-dlq")
    assert queue.inputs["messageRetentionSeconds"] == 3600
    assert dlq.inputs["messageRetentionSeconds"] == 7200
    assert queue.json("redrivePolicy")["maxReceiveCount"] == 3
    variables = run.one("aws:lambda/function:Function").inputs["environment"]["variables"]
    assert variables[env.SOURCE_RETENTION_SECONDS] == "3600"
    assert variables[env.DLQ_RETENTION_SECONDS] == "7200"
    assert variables[env.CLAIM_TTL_SECONDS] == "10800"
    age = next(
        a
        for a in run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
        if a.inputs["metricName"] == "ApproximateAgeOfOldestMessage"
    )
    assert age.inputs["threshold"] == 1800


def test_kms_key_encrypts_queues_tables_topic_and_is_granted(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(
        kms_master_key_id=KMS_KEY,
        create_notification_topic=True,
        business_table=BusinessTableArgs(name="order_records", hash_key="order_id"),
    )
    for queue in run.of_type("aws:sqs/queue:Queue"):
        assert queue.inputs["kmsMasterKeyId"] == KMS_KEY
        assert queue.inputs["kmsDataKeyReusePeriodSeconds"] == 300
        assert "sqsManagedSseEnabled" not in queue.inputs
    for table in run.of_type("aws:dynamodb/table:Table"):
        assert table.inputs["serverSideEncryption"] == {"enabled": True, "kmsKeyArn": KMS_KEY}
    topic = run.one("aws:sns/topic:Topic", "orders-notifications")
    assert topic.inputs["kmsMasterKeyId"] == KMS_KEY
    assert statements(run)["UseDataKey"] == {
        "Sid": "UseDataKey",
        "Effect": "Allow",
        "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
        "Resource": [KMS_KEY],
    }


def test_tenant_layout_keys_the_state_table_by_pk_and_sk(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(state_key_layout="tenant", state_ttl_attribute="expires_at")
    table = run.one("aws:dynamodb/table:Table", "orders-state")
    assert table.inputs["hashKey"] == env.TENANT_PARTITION_KEY
    assert table.inputs["rangeKey"] == env.TENANT_SORT_KEY
    assert table.inputs["attributes"] == [
        {"name": "pk", "type": "S"},
        {"name": "sk", "type": "S"},
    ]
    assert table.inputs["ttl"] == {"attributeName": "expires_at", "enabled": True}
    variables = run.one("aws:lambda/function:Function").inputs["environment"]["variables"]
    assert variables[env.STATE_KEY_LAYOUT] == "tenant"
    assert variables[env.STATE_TTL_ATTRIBUTE] == "expires_at"


def test_declared_business_table_is_created_and_granted(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(
        business_table=BusinessTableArgs(
            name="ledger", hash_key="pk", range_key="month", range_key_type="S"
        )
    )
    table = run.one("aws:dynamodb/table:Table", "orders-ledger")
    assert table.inputs["name"] == "orders-test-ledger"
    assert table.inputs["hashKey"] == "pk" and table.inputs["rangeKey"] == "month"
    assert table.inputs["pointInTimeRecovery"] == {"enabled": True}
    assert table.inputs["billingMode"] == "PAY_PER_REQUEST"
    assert "ttl" not in table.inputs  # business rows never expire
    # a data role (for plan checks), never the idempotency-state role the policy pack reads
    assert table.inputs["tags"]["idempotent-messaging:role"] == "business-rows"
    grant = statements(run)["WriteBusinessRows"]
    assert grant["Resource"] == [table.outputs["arn"]]
    variables = run.one("aws:lambda/function:Function").inputs["environment"]["variables"]
    assert variables[env.BUSINESS_TABLE] == "orders-test-ledger"
    assert run.values["business_table_name"] == "orders-test-ledger"


def test_existing_business_table_is_granted_by_arn(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(
        existing_business_table_name="ledger", existing_business_table_arn=EXISTING_TABLE
    )
    assert len(run.of_type("aws:dynamodb/table:Table")) == 1  # only the state table
    assert statements(run)["WriteBusinessRows"]["Resource"] == [EXISTING_TABLE]
    variables = run.one("aws:lambda/function:Function").inputs["environment"]["variables"]
    assert variables[env.BUSINESS_TABLE] == "ledger"
    assert run.values["business_table_name"] == "ledger"


def test_created_notification_topic_is_encrypted_and_granted(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(create_notification_topic=True)
    topic = run.one("aws:sns/topic:Topic", "orders-notifications")
    assert topic.inputs["name"] == "orders-test-notifications"
    assert topic.inputs["kmsMasterKeyId"] == "alias/aws/sns"
    assert statements(run)["PublishNotifications"]["Resource"] == [topic.outputs["arn"]]
    variables = run.one("aws:lambda/function:Function").inputs["environment"]["variables"]
    assert variables[env.NOTIFICATION_TOPIC_ARN] == topic.outputs["arn"]
    assert run.values["topic_arn"] == topic.outputs["arn"]


def test_given_notification_topic_is_granted_not_created(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(notification_topic_arn=EXISTING_TOPIC)
    assert [t.name for t in run.of_type("aws:sns/topic:Topic")] == ["orders-alarms"]
    assert statements(run)["PublishNotifications"]["Resource"] == [EXISTING_TOPIC]
    assert run.values["topic_arn"] == EXISTING_TOPIC


def test_without_a_topic_nothing_is_published(run_consumer: ConsumerRunner) -> None:
    run = run_consumer()
    assert "PublishNotifications" not in statements(run)
    variables = run.one("aws:lambda/function:Function").inputs["environment"]["variables"]
    assert env.NOTIFICATION_TOPIC_ARN not in variables
    assert env.BUSINESS_TABLE not in variables


def test_given_alarm_topic_is_used_and_none_is_created(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(alarm_topic_arn=EXISTING_ALARMS)
    assert run.of_type("aws:sns/topic:Topic") == []
    assert run.of_type("aws:kms/key:Key") == []
    alarms = run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
    assert len(alarms) == 5
    for alarm in alarms:
        assert alarm.inputs["alarmActions"] == [EXISTING_ALARMS]
        assert alarm.inputs["okActions"] == [EXISTING_ALARMS]
    assert run.values["alarm_topic_arn"] == EXISTING_ALARMS


def test_alarm_emails_subscribe_to_the_created_topic(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(alarm_emails=["ops@example.com", "oncall@example.com"])
    topic = run.one("aws:sns/topic:Topic", "orders-alarms")
    subs = run.of_type("aws:sns/topicSubscription:TopicSubscription")
    assert sorted(s.inputs["endpoint"] for s in subs) == ["oncall@example.com", "ops@example.com"]
    for sub in subs:
        assert sub.inputs["protocol"] == "email"
        assert sub.inputs["topic"] == topic.outputs["arn"]


def test_explicit_age_threshold(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(age_alarm_threshold_seconds=900)
    age = next(
        a
        for a in run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
        if a.inputs["metricName"] == "ApproximateAgeOfOldestMessage"
    )
    assert age.inputs["threshold"] == 900


def test_concurrency_options(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(reserved_concurrency=50, maximum_concurrency=40)
    fn = run.one("aws:lambda/function:Function")
    esm = run.one("aws:lambda/eventSourceMapping:EventSourceMapping")
    assert fn.inputs["reservedConcurrentExecutions"] == 50
    assert esm.inputs["scalingConfig"] == {"maximumConcurrency": 40}


def test_tracing_turns_on_xray_and_grants_only_its_write_actions(
    run_consumer: ConsumerRunner,
) -> None:
    run = run_consumer(tracing=True)
    fn = run.one("aws:lambda/function:Function")
    assert fn.inputs["tracingConfig"] == {"mode": "Active"}
    assert fn.inputs["environment"]["variables"][env.POWERTOOLS_TRACE_DISABLED] == "false"
    assert statements(run)["WriteTraces"]["Action"] == [
        "xray:PutTelemetryRecords",
        "xray:PutTraceSegments",
    ]


@pytest.mark.parametrize(
    ("architecture", "runtime", "layer"),
    [
        ("x86_64", "python3.12", "python312-x86_64"),
        ("arm64", "python3.13", "python313-arm64"),
    ],
)
def test_layer_matches_architecture_and_runtime(
    run_consumer: ConsumerRunner, architecture: str, runtime: str, layer: str
) -> None:
    run = run_consumer(architecture=architecture, runtime=runtime, powertools_layer_version=30)
    fn = run.one("aws:lambda/function:Function")
    assert fn.inputs["architectures"] == [architecture]
    assert fn.inputs["runtime"] == runtime
    assert fn.inputs["layers"] == [
        f"arn:aws:lambda:{REGION}:017000801446:layer:AWSLambdaPowertoolsPythonV3-{layer}:30"
    ]


def test_function_settings_and_powertools_options(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(
        function_timeout_seconds=120,
        memory_size_mb=1024,
        log_level="DEBUG",
        log_retention_days=365,
        service_name="billing",
        metrics_namespace="Billing",
        environment={"FEATURE_FLAG": "on"},
    )
    fn = run.one("aws:lambda/function:Function")
    assert fn.inputs["timeout"] == 120 and fn.inputs["memorySize"] == 1024
    variables = fn.inputs["environment"]["variables"]
    assert variables[env.POWERTOOLS_LOG_LEVEL] == "DEBUG"
    assert variables[env.POWERTOOLS_SERVICE_NAME] == "billing"
    assert variables[env.POWERTOOLS_METRICS_NAMESPACE] == "Billing"
    # The runtime has one way to run a batch: no strategy variable (it was IDEMPOTENCY_STRATEGY).
    assert "IDEMPOTENCY_STRATEGY" not in variables
    assert variables["FEATURE_FLAG"] == "on"
    assert run.one("aws:cloudwatch/logGroup:LogGroup").inputs["retentionInDays"] == 365
    assert run.one("aws:sqs/queue:Queue", "orders-queue").inputs["visibilityTimeoutSeconds"] == 720


def test_tags_and_physical_name(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(physical_name="orders-blue", tags={"team": "payments"})
    assert run.one("aws:sqs/queue:Queue", "orders-queue").inputs["name"] == "orders-blue"
    assert run.one("aws:lambda/function:Function").inputs["name"] == "orders-blue-consumer"
    taggable = [
        r
        for r in run.registered
        if r.custom
        and r.type
        not in (
            "aws:iam/rolePolicy:RolePolicy",
            "aws:sqs/queuePolicy:QueuePolicy",
            "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy",
            "aws:sns/topicSubscription:TopicSubscription",
            # PutDashboard takes no tags (and the provider's Dashboard has no tags input)
            "aws:cloudwatch/dashboard:Dashboard",
        )
    ]
    assert taggable
    for resource in taggable:
        assert resource.inputs["tags"]["team"] == "payments", resource.name
        assert resource.inputs["tags"]["idempotent-messaging:component"] == "orders"


def test_two_consumers_in_one_stack_do_not_collide(pulumi_harness: PulumiHarness) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer

    from .conftest import consumer_args

    def program() -> None:
        IdempotentQueueConsumer("orders", consumer_args())
        IdempotentQueueConsumer("refunds", consumer_args(fifo=True))

    run = pulumi_harness.run(program)
    names = [r.inputs["name"] for r in run.registered if "name" in r.inputs]
    assert len(names) == len(set(names))
    assert len(run.of_type("aws:sqs/queue:Queue")) == 4


class _Parent(pulumi.ComponentResource):
    def __init__(self, name: str) -> None:
        super().__init__("test:index:Fanout", name)


def test_monthly_fanout_shape_nests_under_a_parent_component(
    pulumi_harness: PulumiHarness,
) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer

    from .conftest import consumer_args

    def program() -> None:
        parent = _Parent("monthly")
        IdempotentQueueConsumer(
            "charges",
            consumer_args(
                fifo=True,
                state_key_layout="tenant",
                business_table=BusinessTableArgs(name="ledger", hash_key="pk", range_key="sk"),
                create_notification_topic=True,
            ),
            pulumi.ResourceOptions(parent=parent),
        )

    run = pulumi_harness.run(program)
    parent = run.one("test:index:Fanout")
    consumer = run.one("idempotent-messaging:index:IdempotentQueueConsumer")
    assert consumer.parent == parent.urn
    assert run.one("aws:sqs/queue:Queue", "charges-queue").inputs["name"] == "charges-test.fifo"
    assert run.one("aws:dynamodb/table:Table", "charges-state").inputs["rangeKey"] == "sk"
    assert run.one("aws:dynamodb/table:Table", "charges-ledger").inputs["name"] == (
        "charges-test-ledger"
    )


def test_fingerprint_fields_become_the_runtime_variable_and_the_default_adds_none(
    run_consumer: ConsumerRunner,
) -> None:
    """Issue 27: the default fingerprint (the whole decoded body) needs no variable."""
    default = run_consumer().one("aws:lambda/function:Function")
    assert env.FINGERPRINT_FIELDS not in default.inputs["environment"]["variables"]
    run = run_consumer(fingerprint_fields=["order.order_id", "order.amount"])
    variables = run.one("aws:lambda/function:Function").inputs["environment"]["variables"]
    assert variables[env.FINGERPRINT_FIELDS] == '["order.order_id", "order.amount"]'
