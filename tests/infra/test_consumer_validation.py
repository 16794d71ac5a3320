"""Every invalid argument is refused in the constructor, before any resource exists, with a
ValueError naming the field, the value and the rule."""

from __future__ import annotations

from typing import Any

import pytest

from idempotent_messaging.components import BusinessTableArgs

from .conftest import ConsumerRunner, PulumiHarness, consumer_args

pytestmark = pytest.mark.infra

DAY = 24 * 3600

# (id, overrides, fragments the message must contain: field=value and a piece of the rule)
CASES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    (
        "handler-outside-code",
        {"handler": "app.main.handler"},
        ("handler='app.main.handler'", "not in code", "app/main.py"),
    ),
    ("handler-no-function", {"handler": "handlers"}, ("handler='handlers'",)),
    (
        "handler-missing-module",
        {"handler": "handlers.nope.handler"},
        ("handlers.nope.handler", "not in code (looked for handlers/nope.py"),
    ),
    (
        "timeout-zero",
        {"function_timeout_seconds": 0},
        ("function_timeout_seconds=0", "between 1 and 900"),
    ),
    (
        "timeout-too-long",
        {"function_timeout_seconds": 901},
        ("function_timeout_seconds=901", "between 1 and 900"),
    ),
    (
        "timeout-not-int",
        {"function_timeout_seconds": 30.5},
        ("function_timeout_seconds=30.5", "integer"),
    ),
    ("memory-too-small", {"memory_size_mb": 64}, ("memory_size_mb=64", "128 and 10240")),
    ("memory-too-large", {"memory_size_mb": 20000}, ("memory_size_mb=20000",)),
    ("architecture", {"architecture": "arm"}, ("architecture='arm'", "arm64")),
    ("runtime-old", {"runtime": "python3.11"}, ("runtime='python3.11'", "python3.12 or newer")),
    ("runtime-not-python", {"runtime": "nodejs20.x"}, ("runtime='nodejs20.x'",)),
    ("layer-version", {"powertools_layer_version": 0}, ("powertools_layer_version=0",)),
    ("reserved-zero", {"reserved_concurrency": 0}, ("reserved_concurrency=0", "would stop")),
    ("log-retention", {"log_retention_days": 10}, ("log_retention_days=10", "CloudWatch Logs")),
    ("log-level", {"log_level": "VERBOSE"}, ("log_level='VERBOSE'", "INFO")),
    ("service-name", {"service_name": "my service"}, ("service_name='my service'",)),
    ("metrics-namespace", {"metrics_namespace": ":bad ns"}, ("metrics_namespace=':bad ns'",)),
    (
        "env-reserved",
        {"environment": {"IDEMPOTENCY_STATE_TABLE": "x"}},
        ("environment='IDEMPOTENCY_STATE_TABLE'", "may not be overridden"),
    ),
    (
        "env-lambda-reserved",
        {"environment": {"AWS_REGION": "x"}},
        ("environment='AWS_REGION'", "reserved by Lambda"),
    ),
    ("env-bad-key", {"environment": {"1BAD": "x"}}, ("environment='1BAD'",)),
    (
        "content-dedup-standard",
        {"content_based_deduplication": True},
        ("content_based_deduplication=True", "FIFO"),
    ),
    (
        "high-throughput-standard",
        {"high_throughput_fifo": True},
        ("high_throughput_fifo=True", "FIFO queues only"),
    ),
    (
        "env-trace-flag-reserved",
        {"environment": {"POWERTOOLS_TRACE_DISABLED": "false"}},
        ("environment='POWERTOOLS_TRACE_DISABLED'", "may not be overridden"),
    ),
    ("batch-zero", {"batch_size": 0}, ("batch_size=0",)),
    (
        "batch-over-10-no-window",
        {"batch_size": 11},
        ("batch_size=11", "maximum_batching_window_seconds >= 1"),
    ),
    (
        "batch-standard-max",
        {"batch_size": 10001, "maximum_batching_window_seconds": 1},
        ("batch_size=10001", "10000"),
    ),
    (
        "fifo-batch-over-10",
        {"fifo": True, "batch_size": 11},
        ("batch_size=11", "between 1 and 10 for a FIFO queue"),
    ),
    (
        "fifo-batching-window",
        {"fifo": True, "maximum_batching_window_seconds": 5},
        ("maximum_batching_window_seconds=5", "FIFO"),
    ),
    (
        "window-negative",
        {"maximum_batching_window_seconds": -1},
        ("maximum_batching_window_seconds=-1",),
    ),
    (
        "window-too-long",
        {"maximum_batching_window_seconds": 301},
        ("maximum_batching_window_seconds=301", "300"),
    ),
    ("max-concurrency-low", {"maximum_concurrency": 1}, ("maximum_concurrency=1", "2 and 1000")),
    ("max-concurrency-high", {"maximum_concurrency": 1001}, ("maximum_concurrency=1001",)),
    (
        "max-concurrency-above-reserved",
        {"maximum_concurrency": 20, "reserved_concurrency": 10},
        ("maximum_concurrency=20", "reserved_concurrency 10"),
    ),
    (
        "retention-too-short",
        {"message_retention_seconds": 59},
        ("message_retention_seconds=59", "60 s..14 days"),
    ),
    (
        "retention-too-long",
        {"message_retention_seconds": 14 * DAY + 1},
        ("message_retention_seconds=1209601",),
    ),
    (
        "dlq-retention-too-long",
        {"dlq_message_retention_seconds": 14 * DAY + 1},
        ("dlq_message_retention_seconds=1209601",),
    ),
    (
        "dlq-retention-not-longer",
        {"message_retention_seconds": 4 * DAY, "dlq_message_retention_seconds": 4 * DAY},
        ("dlq_message_retention_seconds=345600", "greater than message_retention_seconds"),
    ),
    ("max-receive-low", {"max_receive_count": 2}, ("max_receive_count=2", "between 3 and 20")),
    ("max-receive-high", {"max_receive_count": 21}, ("max_receive_count=21",)),
    (
        "kms-alias",
        {"kms_master_key_id": "alias/my-key"},
        ("kms_master_key_id='alias/my-key'", "key ARN"),
    ),
    (
        "visibility-below-timeout",
        {"visibility_timeout_seconds": 29},
        ("visibility_timeout_seconds=29", "below the function timeout 30 s"),
    ),
    (
        "visibility-below-timeout-even-with-opt-out",
        {"visibility_timeout_seconds": 29, "allow_visibility_below_recommended": True},
        ("visibility_timeout_seconds=29", "no opt-out"),
    ),
    (
        "visibility-below-recommended",
        {"visibility_timeout_seconds": 179},
        (
            "visibility_timeout_seconds=179",
            "6 x function timeout 30 s + batching window 0 s = 180 s",
            "allow_visibility_below_recommended",
        ),
    ),
    (
        "visibility-below-recommended-with-window",
        {"visibility_timeout_seconds": 180, "maximum_batching_window_seconds": 5},
        ("= 185 s",),
    ),
    (
        "visibility-above-sqs-max",
        {"visibility_timeout_seconds": 43201},
        ("visibility_timeout_seconds=43201",),
    ),
    ("layout", {"state_key_layout": "uuid"}, ("state_key_layout='uuid'", "tenant")),
    ("ttl-attribute", {"state_ttl_attribute": "bad attr"}, ("state_ttl_attribute='bad attr'",)),
    (
        "ttl-attribute-is-key",
        {"state_ttl_attribute": "event_id"},
        ("state_ttl_attribute='event_id'", "key attribute"),
    ),
    (
        "claim-ttl-short",
        {"claim_ttl_seconds": 18 * DAY - 1},
        ("claim_ttl_seconds=1555199", "= 1555200"),
    ),
    (
        "business-and-existing",
        {
            "business_table": BusinessTableArgs(name="t_records", hash_key="id"),
            "existing_business_table_name": "x",
            "existing_business_table_arn": "arn:aws:dynamodb:us-east-1:111122223333:table/x",
        },
        ("business_table='t_records'", "not both"),
    ),
    (
        "existing-name-without-arn",
        {"existing_business_table_name": "x"},
        ("existing_business_table_arn=None", "go together"),
    ),
    (
        "business-name",
        {"business_table": BusinessTableArgs(name="a b", hash_key="id")},
        ("business_table.name='a b'",),
    ),
    (
        "business-key-type",
        {"business_table": BusinessTableArgs(name="records", hash_key="id", hash_key_type="X")},
        ("business_table.hash_key_type='X'",),
    ),
    (
        "business-range-key-type",
        {
            "business_table": BusinessTableArgs(
                name="records", hash_key="id", range_key="at", range_key_type="BOOL"
            )
        },
        ("business_table.range_key_type='BOOL'",),
    ),
    (
        "business-range-equals-hash",
        {"business_table": BusinessTableArgs(name="records", hash_key="id", range_key="id")},
        ("business_table.range_key='id'",),
    ),
    (
        "topic-created-and-given",
        {
            "create_notification_topic": True,
            "notification_topic_arn": "arn:aws:sns:us-east-1:111122223333:t",
        },
        ("notification_topic_arn=", "not both"),
    ),
    (
        "topic-arn-not-sns",
        {"notification_topic_arn": "arn:aws:sqs:us-east-1:111122223333:orders"},
        ("notification_topic_arn='arn:aws:sqs:", "SNS topic ARN"),
    ),
    (
        "topic-arn-bad-name",
        {"notification_topic_arn": "arn:aws:sns:us-east-1:111122223333:注文"},
        ("notification_topic_arn=", "SNS topic ARN"),
    ),
    (
        "email-format",
        {"alarm_emails": ["not-an-email"]},
        ("alarm_emails='not-an-email'", "email address"),
    ),
    (
        "email-single-string",
        {"alarm_emails": "ops@example.com"},
        ("alarm_emails='ops@example.com'", "sequence"),
    ),
    (
        "emails-with-given-topic",
        {
            "alarm_emails": ["ops@example.com"],
            "alarm_topic_arn": "arn:aws:sns:us-east-1:111122223333:a",
        },
        ("alarm_emails=['ops@example.com']", "alarm_topic_arn"),
    ),
    (
        "age-threshold-over-retention",
        {"age_alarm_threshold_seconds": 4 * DAY},
        ("age_alarm_threshold_seconds=345600", "before the source queue's retention"),
    ),
    (
        "age-threshold-too-small",
        {"age_alarm_threshold_seconds": 10},
        ("age_alarm_threshold_seconds=10",),
    ),
    ("physical-name-too-long", {"physical_name": "x" * 129}, ("physical_name='xxxxxxxx", "1..128")),
    ("physical-name-chars", {"physical_name": "orders.dev"}, ("physical_name='orders.dev'",)),
    ("tag-value", {"tags": {"team": 1}}, ("tags='team'",)),
]


@pytest.mark.parametrize(
    ("overrides", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_invalid_argument_is_refused_before_any_resource(
    pulumi_harness: PulumiHarness, overrides: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer

    errors: list[ValueError] = []

    def program() -> None:
        try:
            IdempotentQueueConsumer("orders", consumer_args(**overrides))
        except ValueError as error:
            errors.append(error)

    run = pulumi_harness.run(program)
    assert len(errors) == 1, "the invalid argument was accepted"
    for fragment in fragments:
        assert fragment in str(errors[0])
    assert run.registered == []  # not even the component itself


def test_a_refused_argument_fails_the_program(pulumi_harness: PulumiHarness) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer

    with pytest.raises(ValueError, match=r"max_receive_count=1: must be between 3 and 20"):
        pulumi_harness.run(
            lambda: IdempotentQueueConsumer("orders", consumer_args(max_receive_count=1))
        )


def test_invalid_component_name_is_refused(pulumi_harness: PulumiHarness) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer

    with pytest.raises(ValueError, match=r"name='bad name'"):
        pulumi_harness.run(lambda: IdempotentQueueConsumer("bad name", consumer_args()))


def test_args_of_the_wrong_type_are_refused(pulumi_harness: PulumiHarness) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer

    # A mapping is accepted (the component provider host passes one); anything else is not.
    with pytest.raises(ValueError, match=r"args='str'"):
        pulumi_harness.run(
            lambda: IdempotentQueueConsumer("orders", "handlers.orders.handler")  # type: ignore[arg-type]
        )


def test_explicit_visibility_below_recommended_is_accepted_with_the_opt_out(
    run_consumer: ConsumerRunner,
) -> None:
    run = run_consumer(visibility_timeout_seconds=60, allow_visibility_below_recommended=True)
    queue = run.one("aws:sqs/queue:Queue", "orders-queue")
    assert queue.inputs["visibilityTimeoutSeconds"] == 60


@pytest.mark.parametrize(
    ("queue_fifo", "topic", "says"),
    [
        (True, "arn:aws:sns:us-east-1:111122223333:orders.fifo", "keep its order"),
        (False, "arn:aws:sns:us-east-1:111122223333:orders.fifo", "no order across events"),
        (True, "arn:aws:sns:us-east-1:111122223333:orders", "does not keep order"),
        (False, "arn:aws:sns:us-east-1:111122223333:orders", "no order is kept"),
    ],
)
def test_the_component_says_what_order_the_notifications_keep(
    run_consumer: ConsumerRunner,
    monkeypatch: pytest.MonkeyPatch,
    queue_fifo: bool,
    topic: str,
    says: str,
) -> None:
    """A FIFO topic is checked against the queue's type (SNS FIFO topics order per
    MessageGroupId; the runtime's group is the record's on a FIFO queue, the event's on a
    standard one: runtime/notify.py) and the component says which order the notifications
    keep, as an info diagnostic of the consumer."""
    import pulumi

    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "info", lambda msg, resource=None, **_: said.append(msg))
    overrides: dict[str, Any] = {"notification_topic_arn": topic}
    if queue_fifo:
        overrides["fifo"] = True
    run_consumer(**overrides)
    assert [m for m in said if "topic" in m and says in m], said
