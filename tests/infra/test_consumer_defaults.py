"""IdempotentQueueConsumer with default args: the safe-by-default resource set."""

from __future__ import annotations

import pytest

from idempotent_messaging import limits
from idempotent_messaging.components import CONSUMER_OUTPUTS
from idempotent_messaging.runtime import env

from .conftest import ACCOUNT, OUTPUT_NAMES, REGION, UNKNOWN, ConsumerRunner, Run

pytestmark = pytest.mark.infra

TYPE_TOKEN = "idempotent-messaging:index:IdempotentQueueConsumer"


@pytest.fixture
def default_run(run_consumer: ConsumerRunner) -> Run:
    return run_consumer()


def test_every_child_is_parented_to_the_component(default_run: Run) -> None:
    component = default_run.one(TYPE_TOKEN)
    children = [r for r in default_run.registered if r is not component]
    assert children, "the component created nothing"
    assert {r.parent for r in children} == {component.urn}
    assert component.name == "orders"


def test_default_resource_set(default_run: Run) -> None:
    counts: dict[str, int] = {}
    for r in default_run.registered:
        counts[r.type] = counts.get(r.type, 0) + 1
    assert counts == {
        TYPE_TOKEN: 1,
        "aws:sqs/queue:Queue": 2,
        "aws:sqs/queuePolicy:QueuePolicy": 2,
        "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy": 1,
        "aws:dynamodb/table:Table": 1,  # state only: no business table by default
        "aws:lambda/function:Function": 1,
        "aws:iam/role:Role": 1,
        "aws:iam/rolePolicy:RolePolicy": 1,
        "aws:cloudwatch/logGroup:LogGroup": 1,
        "aws:lambda/eventSourceMapping:EventSourceMapping": 1,
        "aws:cloudwatch/metricAlarm:MetricAlarm": 5,  # + conflicting duplicates (issue 27)
        "aws:sns/topic:Topic": 1,  # the alarm topic; no notification topic by default
        "aws:kms/key:Key": 1,
        "aws:cloudwatch/dashboard:Dashboard": 1,  # on by default (create_dashboard)
    }


def test_queues_are_standard_with_derived_visibility_and_14_day_dlq(default_run: Run) -> None:
    queue = default_run.one("aws:sqs/queue:Queue", "orders-queue")
    dlq = default_run.one("aws:sqs/queue:Queue", "orders-queue-dlq")
    assert queue.inputs["name"] == "orders-test"
    assert dlq.inputs["name"] == "orders-test-dlq"
    assert "fifoQueue" not in queue.inputs and "fifoQueue" not in dlq.inputs
    assert queue.inputs["visibilityTimeoutSeconds"] == 6 * 30 + 0
    assert queue.inputs["messageRetentionSeconds"] == 4 * 24 * 3600
    assert dlq.inputs["messageRetentionSeconds"] == limits.SQS_MAX_RETENTION_S
    for q in (queue, dlq):
        assert q.inputs["sqsManagedSseEnabled"] is True
        assert "kmsMasterKeyId" not in q.inputs


def test_redrive_policy_targets_the_dlq_with_five_receives(default_run: Run) -> None:
    queue = default_run.one("aws:sqs/queue:Queue", "orders-queue")
    dlq = default_run.one("aws:sqs/queue:Queue", "orders-queue-dlq")
    assert queue.json("redrivePolicy") == {
        "deadLetterTargetArn": dlq.outputs["arn"],
        "maxReceiveCount": 5,
    }
    assert queue.property_dependencies["redrivePolicy"] == [dlq.urn]


def test_dlq_redrive_allow_policy_names_only_the_source(default_run: Run) -> None:
    queue = default_run.one("aws:sqs/queue:Queue", "orders-queue")
    dlq = default_run.one("aws:sqs/queue:Queue", "orders-queue-dlq")
    allow = default_run.one("aws:sqs/redriveAllowPolicy:RedriveAllowPolicy")
    assert allow.inputs["queueUrl"] == dlq.outputs["url"]
    assert allow.json("redriveAllowPolicy") == {
        "redrivePermission": "byQueue",
        "sourceQueueArns": [queue.outputs["arn"]],
    }


def test_both_queues_deny_requests_without_tls(default_run: Run) -> None:
    policies = default_run.of_type("aws:sqs/queuePolicy:QueuePolicy")
    queues = default_run.of_type("aws:sqs/queue:Queue")
    assert {p.inputs["queueUrl"] for p in policies} == {q.outputs["url"] for q in queues}
    for policy in policies:
        statement = policy.json("policy")["Statement"][0]
        assert statement["Effect"] == "Deny"
        assert statement["Principal"] == "*"
        assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        assert statement["Resource"] in {q.outputs["arn"] for q in queues}


def _dlq_statements(run: Run) -> list[dict[str, object]]:
    dlq = run.one("aws:sqs/queue:Queue", "orders-queue-dlq")
    (policy,) = [
        p
        for p in run.of_type("aws:sqs/queuePolicy:QueuePolicy")
        if p.inputs["queueUrl"] == dlq.outputs["url"]
    ]
    return list(policy.json("policy")["Statement"])


def test_the_dlq_denies_the_native_move_task_to_everyone(default_run: Run) -> None:
    """Issue 37, item 1. "All redriven messages are considered new messages with a new
    messageID and enqueueTime" (SQS Developer Guide, "Learn how to configure a dead-letter
    queue redrive"): the console's "Start DLQ redrive" (StartMessageMoveTask, authorised on the
    DLQ, its source queue: SQS API permissions reference) would give a copy SQS dead-lettered
    itself a new age, and a state-table claim's horizon could let it apply its effect twice
    (the protocol model's native-move trace). The source queue keeps the TLS deny alone."""
    import botocore.session

    dlq = default_run.one("aws:sqs/queue:Queue", "orders-queue-dlq")
    deny = [s for s in _dlq_statements(default_run) if s.get("Sid") == "DenyNativeMoveTask"]
    assert deny == [
        {
            "Sid": "DenyNativeMoveTask",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sqs:StartMessageMoveTask",
            "Resource": dlq.outputs["arn"],
        }
    ]
    # The action is the operation botocore's SQS model knows (no typo denies nothing).
    operations = botocore.session.get_session().get_service_model("sqs").operation_names
    assert str(deny[0]["Action"]).split(":", 1)[1] in operations
    queue = default_run.one("aws:sqs/queue:Queue", "orders-queue")
    (source_policy,) = [
        p
        for p in default_run.of_type("aws:sqs/queuePolicy:QueuePolicy")
        if p.inputs["queueUrl"] == queue.outputs["url"]
    ]
    assert len(source_policy.json("policy")["Statement"]) == 1


def test_a_consumer_may_opt_out_of_the_native_move_deny(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(allow_native_dlq_redrive=True)
    assert [s.get("Sid") for s in _dlq_statements(run)] == ["DenyInsecureTransport"]


def test_state_table_is_keyed_by_event_id_with_ttl_pitr_sse_and_tag(default_run: Run) -> None:
    table = default_run.one("aws:dynamodb/table:Table", "orders-state")
    assert table.inputs["name"] == "orders-test-idempotency-state"
    assert table.inputs["hashKey"] == env.EVENT_ID_KEY
    assert "rangeKey" not in table.inputs
    assert table.inputs["attributes"] == [{"name": env.EVENT_ID_KEY, "type": "S"}]
    assert table.inputs["billingMode"] == "PAY_PER_REQUEST"
    assert table.inputs["ttl"] == {"attributeName": "ttl", "enabled": True}
    assert table.inputs["pointInTimeRecovery"] == {"enabled": True}
    assert table.inputs["serverSideEncryption"] == {"enabled": True}
    assert table.inputs["tags"][limits.IDEMPOTENCY_TABLE_TAG_KEY] == (
        limits.IDEMPOTENCY_TABLE_TAG_VALUE
    )


def test_function_defaults(default_run: Run) -> None:
    fn = default_run.one("aws:lambda/function:Function")
    role = default_run.one("aws:iam/role:Role")
    assert fn.inputs["name"] == "orders-test-consumer"
    assert fn.inputs["handler"] == "handlers.orders.handler"
    assert fn.inputs["runtime"] == "python3.12"
    assert fn.inputs["architectures"] == ["arm64"]
    assert fn.inputs["timeout"] == 30
    assert fn.inputs["memorySize"] == 256
    assert fn.inputs["tracingConfig"] == {"mode": "PassThrough"}
    assert "reservedConcurrentExecutions" not in fn.inputs
    assert fn.inputs["role"] == role.outputs["arn"]
    assert fn.inputs["layers"] == [
        f"arn:aws:lambda:{REGION}:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-arm64:27"
    ]


def test_function_waits_for_its_policy_and_log_group(default_run: Run) -> None:
    fn = default_run.one("aws:lambda/function:Function")
    policy = default_run.one("aws:iam/rolePolicy:RolePolicy")
    logs = default_run.one("aws:cloudwatch/logGroup:LogGroup")
    assert {policy.urn, logs.urn} <= set(fn.dependencies)
    assert logs.inputs == {
        "name": "/aws/lambda/orders-test-consumer",
        "retentionInDays": 30,
        "tags": {"idempotent-messaging:component": "orders"},
    }


def test_function_environment_uses_the_runtime_constants(default_run: Run) -> None:
    fn = default_run.one("aws:lambda/function:Function")
    state = default_run.one("aws:dynamodb/table:Table", "orders-state")
    dlq = default_run.one("aws:sqs/queue:Queue", "orders-queue-dlq")
    assert fn.inputs["environment"]["variables"] == {
        env.STATE_TABLE: state.inputs["name"],
        env.STATE_KEY_LAYOUT: env.LAYOUT_EVENT_ID,
        env.STATE_TTL_ATTRIBUTE: "ttl",
        env.CLAIM_TTL_SECONDS: str(90 * 24 * 3600),
        env.DLQ_URL: dlq.outputs["url"],
        # The DLQ's MaximumMessageSize (the largest SQS allows): DLQ copies are sized to it.
        env.DLQ_MAX_MESSAGE_BYTES: str(int(dlq.inputs["maxMessageSize"])),
        env.SOURCE_QUEUE_FIFO: "false",
        env.SOURCE_RETENTION_SECONDS: str(4 * 24 * 3600),
        env.DLQ_RETENTION_SECONDS: str(14 * 24 * 3600),
        # The redrive policy's maxReceiveCount: the runtime quarantines a record failing on
        # that receive with its reason (SQS would dead-letter it with none).
        env.MAX_RECEIVE_COUNT: "5",
        env.POWERTOOLS_SERVICE_NAME: "orders",
        env.POWERTOOLS_LOG_LEVEL: "INFO",
        env.POWERTOOLS_METRICS_NAMESPACE: "IdempotentMessaging",
        env.POWERTOOLS_TRACE_DISABLED: "true",
    }


def test_the_dlq_holds_the_largest_message_sqs_allows(default_run: Run) -> None:
    """SQS: MaximumMessageSize is 1,024 .. 1,048,576 bytes; a DLQ no smaller than its source
    (whatever the source's) keeps every copy of a source message with the reason attributes."""
    dlq = default_run.one("aws:sqs/queue:Queue", "orders-queue-dlq")
    assert dlq.inputs["maxMessageSize"] == limits.SQS_MAX_MESSAGE_BYTES == 1_048_576


def test_state_table_name_is_among_the_policy_packs_idempotency_env_vars() -> None:
    # The pack recognises state tables by these variables; the component must use one of them.
    assert env.STATE_TABLE in limits.IDEMPOTENCY_TABLE_ENV_VARS


def test_event_source_mapping_reports_batch_item_failures(default_run: Run) -> None:
    esm = default_run.one("aws:lambda/eventSourceMapping:EventSourceMapping")
    queue = default_run.one("aws:sqs/queue:Queue", "orders-queue")
    fn = default_run.one("aws:lambda/function:Function")
    policy = default_run.one("aws:iam/rolePolicy:RolePolicy")
    assert esm.inputs["functionResponseTypes"] == ["ReportBatchItemFailures"]
    assert esm.inputs["batchSize"] == 10
    assert esm.inputs["maximumBatchingWindowInSeconds"] == 0
    assert "scalingConfig" not in esm.inputs
    assert esm.inputs["eventSourceArn"] == queue.outputs["arn"]
    assert esm.property_dependencies["eventSourceArn"] == [queue.urn]
    assert esm.property_dependencies["functionName"] == [fn.urn]
    assert policy.urn in esm.dependencies


def test_alarms_notify_a_created_encrypted_topic_on_alarm_and_ok(default_run: Run) -> None:
    topic = default_run.one("aws:sns/topic:Topic", "orders-alarms")
    key = default_run.one("aws:kms/key:Key")
    assert topic.inputs["kmsMasterKeyId"] == key.outputs["arn"]
    assert key.inputs["enableKeyRotation"] is True
    statements = {s["Sid"]: s for s in key.json("policy")["Statement"]}
    assert statements["CloudWatchPublishesAlarms"]["Principal"] == {
        "Service": "cloudwatch.amazonaws.com"
    }
    assert statements["AccountAdministersKey"]["Principal"] == {
        "AWS": f"arn:aws:iam::{ACCOUNT}:root"
    }
    for statement in statements.values():
        assert all("*" not in action for action in statement["Action"])
    alarms = {a.inputs["metricName"]: a for a in default_run.of_type(
        "aws:cloudwatch/metricAlarm:MetricAlarm")}  # fmt: skip
    assert set(alarms) == {
        "ApproximateNumberOfMessagesVisible",
        "ApproximateAgeOfOldestMessage",
        "Errors",
        "Throttles",
        "conflicting_duplicate",  # the runtime's EMF count (issue 27)
    }
    for alarm in alarms.values():
        assert alarm.inputs["alarmActions"] == [topic.outputs["arn"]]
        assert alarm.inputs["okActions"] == [topic.outputs["arn"]]


def test_dlq_alarm_fires_on_one_visible_message(default_run: Run) -> None:
    alarm = next(
        a
        for a in default_run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
        if a.inputs["metricName"] == "ApproximateNumberOfMessagesVisible"
    )
    assert alarm.inputs["dimensions"] == {"QueueName": "orders-test-dlq"}
    assert alarm.inputs["comparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm.inputs["threshold"] == 1


def test_age_alarm_threshold_is_half_the_retention(default_run: Run) -> None:
    alarm = next(
        a
        for a in default_run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
        if a.inputs["metricName"] == "ApproximateAgeOfOldestMessage"
    )
    assert alarm.inputs["dimensions"] == {"QueueName": "orders-test"}
    assert alarm.inputs["comparisonOperator"] == "GreaterThanThreshold"
    assert alarm.inputs["threshold"] == limits.age_alarm_threshold(4 * 24 * 3600)


def test_outputs_resolve_to_the_created_resources(default_run: Run) -> None:
    v = default_run.values
    queue = default_run.one("aws:sqs/queue:Queue", "orders-queue")
    assert v["queue_url"] == queue.outputs["url"]
    assert v["queue_arn"] == f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-test"
    assert v["queue_name"] == "orders-test"
    assert v["dlq_name"] == "orders-test-dlq"
    assert v["dlq_arn"].endswith(":orders-test-dlq")
    assert v["dlq_url"].endswith("/orders-test-dlq")
    assert v["state_table_name"] == "orders-test-idempotency-state"
    assert v["state_table_arn"].endswith(":table/orders-test-idempotency-state")
    assert v["business_table_name"] is None
    assert v["topic_arn"] is None
    assert v["function_name"] == "orders-test-consumer"
    assert v["function_arn"].endswith(":function:orders-test-consumer")
    assert v["role_arn"] == f"arn:aws:iam::{ACCOUNT}:role/orders-test-consumer-role"
    alarm_names = [
        a.inputs["name"] for a in default_run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
    ]
    assert sorted(v["alarm_names"]) == sorted(alarm_names)
    assert len(alarm_names) == 5
    assert v["alarm_topic_arn"] == f"arn:aws:sns:{REGION}:{ACCOUNT}:orders-test-alarms"


def test_every_output_is_registered_on_the_component(default_run: Run) -> None:
    component = default_run.one("idempotent-messaging:index:IdempotentQueueConsumer")
    registered = default_run.component_outputs[component.urn]
    assert set(registered) <= set(CONSUMER_OUTPUTS)
    for output in OUTPUT_NAMES:
        assert registered.get(output) == default_run.values[output], output
    assert registered["dashboard_name"] == "orders-test-consumer"


def test_preview_builds_with_unknown_arns_and_known_settings(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(preview=True)
    queue = run.one("aws:sqs/queue:Queue", "orders-queue")
    fn = run.one("aws:lambda/function:Function")
    assert queue.inputs["redrivePolicy"] == UNKNOWN  # the DLQ's ARN is not known yet
    assert queue.inputs["visibilityTimeoutSeconds"] == 180
    assert fn.inputs["environment"]["variables"][env.DLQ_URL] == UNKNOWN
    # The default provider's region (aws:region) makes the layer known at preview.
    assert fn.inputs["layers"] == [
        f"arn:aws:lambda:{REGION}:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-arm64:27"
    ]
    assert run.values["queue_arn"] == UNKNOWN
    assert run.values["queue_name"] == "orders-test"
    assert len(run.values["alarm_names"]) == 5  # alarm names are inputs: known at preview


@pytest.mark.parametrize("preview", [False, True])
def test_without_aws_region_the_layer_follows_the_queue_arn(
    run_consumer: ConsumerRunner, preview: bool
) -> None:
    fn = run_consumer(preview=preview, config={}).one("aws:lambda/function:Function")
    expected = (
        UNKNOWN
        if preview
        else f"arn:aws:lambda:{REGION}:017000801446:layer:"
        "AWSLambdaPowertoolsPythonV3-python312-arm64:27"
    )
    assert fn.inputs["layers"] == [expected]


def test_the_state_table_says_a_receipt_records_publication(default_run: Run) -> None:
    """Issue 36: a team reading the source article's ``status`` (pending = not yet published)
    is told on the table itself, at no write cost (a tag), that a pending claim its receipt
    lists was published. DynamoDB tag values: <= 256 characters of letters, digits, spaces and
    + - = . _ : / ("Tagging restrictions")."""
    import re

    from idempotent_messaging.components.tables import STATUS_NOTE, STATUS_NOTE_TAG

    table = default_run.one("aws:dynamodb/table:Table", "orders-state")
    assert table.inputs["tags"][STATUS_NOTE_TAG] == STATUS_NOTE
    assert len(STATUS_NOTE) <= 256
    assert re.fullmatch(r"[\w\s+\-=.:/]*", STATUS_NOTE)
    assert "receipt" in STATUS_NOTE and "pending" in STATUS_NOTE.lower()
