"""The dev and prod stacks, each run from __main__.py with its own Pulumi.<stack>.yaml under
independent mocks, as `pulumi up` (preview=False) and as `pulumi preview` (preview=True).

The checks apply to every consumed queue (every event source mapping), linked through
property dependencies so they also hold at preview, when ARNs are unknown.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from idempotent_messaging import limits
from idempotent_messaging.offline import ProgramRun, RecordedResource, run_program
from idempotent_messaging.rules.values import is_unknown
from idempotent_messaging.stage import StageConfig
from tests.stages import STAGES, stack_files

pytestmark = pytest.mark.infra

PROJECT_DIR = Path(__file__).resolve().parents[2]
STACKS = STAGES
ESM = "aws:lambda/eventSourceMapping:EventSourceMapping"
QUEUE = "aws:sqs/queue:Queue"
STACK = "pulumi:pulumi:Stack"


RUNS = [(stack, preview) for stack in STACKS for preview in (False, True)]


@pytest.fixture(
    scope="module", params=RUNS, ids=[f"{s}-{'preview' if p else 'up'}" for s, p in RUNS]
)
def stack_run(request: pytest.FixtureRequest) -> ProgramRun:
    stack, preview = request.param
    return run_program(PROJECT_DIR, stack, preview=preview)


def by_urn(run: ProgramRun) -> dict[str, RecordedResource]:
    return run.by_urn


def linked(run: ProgramRun, resource: RecordedResource, prop: str) -> RecordedResource:
    """The resource an input was computed from (property dependencies: works at preview)."""
    (urn,) = resource.property_dependencies[prop]
    return run.by_urn[urn]


def consumed(run: ProgramRun) -> list[tuple[RecordedResource, RecordedResource, RecordedResource]]:
    """(mapping, queue, function) for every event source mapping of the stack."""
    triples = []
    for esm in (r for r in run.resources if r.type == ESM):
        triples.append((esm, linked(run, esm, "eventSourceArn"), linked(run, esm, "functionName")))
    assert triples, "the stack consumes no queue"
    return triples


def dlq_of(run: ProgramRun, queue: RecordedResource) -> RecordedResource:
    return linked(run, queue, "redrivePolicy")


def test_visibility_covers_six_function_timeouts_plus_the_window(stack_run: ProgramRun) -> None:
    for esm, queue, fn in consumed(stack_run):
        window = esm.inputs.get("maximumBatchingWindowInSeconds", 0)
        required = limits.recommended_visibility_timeout(fn.inputs["timeout"], window)
        assert queue.inputs["visibilityTimeoutSeconds"] >= required, queue.name


def test_dlq_has_the_same_type_and_a_longer_retention(stack_run: ProgramRun) -> None:
    for _, queue, _ in consumed(stack_run):
        dlq = dlq_of(stack_run, queue)
        assert dlq.type == QUEUE
        assert bool(dlq.inputs.get("fifoQueue")) == bool(queue.inputs.get("fifoQueue"))
        assert dlq.inputs["messageRetentionSeconds"] > queue.inputs["messageRetentionSeconds"]


def test_max_receive_count_is_between_3_and_20(stack_run: ProgramRun) -> None:
    for _, queue, _ in consumed(stack_run):
        redrive = queue.inputs["redrivePolicy"]
        if stack_run.preview:
            assert is_unknown(redrive)  # carries the DLQ's ARN: unknown until created
            continue
        count = json.loads(redrive)["maxReceiveCount"]
        assert limits.DEFAULT_MIN_MAX_RECEIVE_COUNT <= count <= limits.DEFAULT_MAX_MAX_RECEIVE_COUNT


def test_every_mapping_reports_batch_item_failures(stack_run: ProgramRun) -> None:
    for esm, _, _ in consumed(stack_run):
        assert esm.inputs["functionResponseTypes"] == ["ReportBatchItemFailures"]


def test_state_tables_have_ttl_and_pitr(stack_run: ProgramRun) -> None:
    state_tables = [
        r
        for r in stack_run.resources
        if r.type == "aws:dynamodb/table:Table"
        and r.inputs.get("tags", {}).get(limits.IDEMPOTENCY_TABLE_TAG_KEY)
        == limits.IDEMPOTENCY_TABLE_TAG_VALUE
    ]
    assert state_tables
    for table in state_tables:
        assert table.inputs["ttl"]["enabled"] is True
        assert table.inputs["ttl"]["attributeName"]
        assert table.inputs["pointInTimeRecovery"] == {"enabled": True}


def test_every_dlq_has_an_alarm_with_actions(stack_run: ProgramRun) -> None:
    alarms = [r for r in stack_run.resources if r.type == "aws:cloudwatch/metricAlarm:MetricAlarm"]
    for _, queue, _ in consumed(stack_run):
        dlq = dlq_of(stack_run, queue)
        matching = [
            a
            for a in alarms
            if a.inputs["metricName"] == "ApproximateNumberOfMessagesVisible"
            and a.inputs["dimensions"] == {"QueueName": dlq.inputs["name"]}
        ]
        assert matching, f"no alarm on {dlq.inputs['name']}"
        for alarm in matching:
            assert alarm.inputs["threshold"] <= 1
            assert alarm.inputs["alarmActions"] and alarm.inputs["okActions"]


def test_queues_and_topics_are_encrypted(stack_run: ProgramRun) -> None:
    queues = [r for r in stack_run.resources if r.type == QUEUE]
    topics = [r for r in stack_run.resources if r.type == "aws:sns/topic:Topic"]
    assert queues and topics
    for queue in queues:
        assert queue.inputs.get("sqsManagedSseEnabled") is True or queue.inputs.get(
            "kmsMasterKeyId"
        ), queue.name
    for topic in topics:
        assert topic.inputs.get("kmsMasterKeyId"), topic.name


def test_no_wildcard_iam_action(stack_run: ProgramRun) -> None:
    documents = [
        r.inputs["policy"]
        for r in stack_run.resources
        if r.type in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy")
    ]
    assert documents
    for document in documents:
        if stack_run.preview:
            assert is_unknown(document)  # it names ARNs of resources not created yet
            continue
        for statement in json.loads(document)["Statement"]:
            actions = statement.get("Action")
            actions = [actions] if isinstance(actions, str) else actions
            assert statement["Effect"] == "Allow"
            assert not [a for a in actions if "*" in a], statement


def test_one_encrypted_alarm_topic_receives_every_alarm_of_the_stack(
    stack_run: ProgramRun,
) -> None:
    topics = [r for r in stack_run.resources if r.type == "aws:sns/topic:Topic"]
    (alarm_topic,) = [t for t in topics if t.inputs["name"].endswith("-alarms")]
    assert alarm_topic.inputs["name"] == f"idempotent-messaging-{stack_run.stack}-alarms"
    assert alarm_topic.parent == next(r.urn for r in stack_run.resources if r.type == STACK)
    key = linked(stack_run, alarm_topic, "kmsMasterKeyId")
    assert key.type == "aws:kms/key:Key"
    alarms = [r for r in stack_run.resources if r.type == "aws:cloudwatch/metricAlarm:MetricAlarm"]
    assert len(alarms) >= 12  # orders 4, monthly-charge 4, its charge consumer 4
    for alarm in alarms:
        for prop in ("alarmActions", "okActions"):
            assert linked(stack_run, alarm, prop).urn == alarm_topic.urn, (alarm.name, prop)
    if not stack_run.preview:
        arn = alarm_topic.outputs["arn"]
        assert stack_run.stack_outputs["alarm_topic_arn"] == arn
        assert stack_run.stack_outputs["orders_alarm_topic_arn"] == arn
        assert stack_run.stack_outputs["monthly_charge_consumer_alarm_topic_arn"] == arn


def test_stage_files_configure_their_stage() -> None:
    dev = run_program(PROJECT_DIR, "dev")
    prod = run_program(PROJECT_DIR, "prod")

    def one(run: ProgramRun, typ: str) -> dict[str, Any]:
        (found,) = [r for r in run.resources if r.type == typ and r.name.startswith("orders")]
        return found.inputs

    fn_dev = one(dev, "aws:lambda/function:Function")
    fn_prod = one(prod, "aws:lambda/function:Function")
    assert "reservedConcurrentExecutions" not in fn_dev
    assert fn_prod["reservedConcurrentExecutions"] == 50
    assert fn_dev["tracingConfig"] == {"mode": "PassThrough"}
    assert fn_prod["tracingConfig"] == {"mode": "Active"}
    assert fn_dev["environment"]["variables"]["POWERTOOLS_LOG_LEVEL"] == "DEBUG"
    assert fn_prod["environment"]["variables"]["POWERTOOLS_LOG_LEVEL"] == "INFO"
    assert one(dev, "aws:cloudwatch/logGroup:LogGroup")["retentionInDays"] == 7
    assert one(prod, "aws:cloudwatch/logGroup:LogGroup")["retentionInDays"] == 365
    emails = [
        r.inputs["endpoint"]
        for r in prod.resources
        if r.type == "aws:sns/topicSubscription:TopicSubscription"
    ]
    # one shared alarm topic: on-call confirms one subscription, not one per component
    assert emails == ["oncall@example.com"]
    assert not [r for r in dev.resources if r.type == "aws:sns/topicSubscription:TopicSubscription"]
    assert fn_dev["name"] == "orders-dev-consumer" and fn_prod["name"] == "orders-prod-consumer"


def test_reference_stack_runs_the_orders_consumer_on_a_standard_queue(
    stack_run: ProgramRun,
) -> None:
    tables = {
        r.inputs["name"]: r.inputs
        for r in stack_run.resources
        if r.type == "aws:dynamodb/table:Table"
    }
    business = tables[f"orders-{stack_run.stack}-order_records"]
    assert business["hashKey"] == "event_id"  # keyed by the event: its claim is the event's
    fn = next(
        r for r in stack_run.resources if r.type == "aws:lambda/function:Function"
        and r.name == "orders-consumer"
    )  # fmt: skip
    assert fn.inputs["handler"] == "handlers.orders.handler"
    queue = next(r for r in stack_run.resources if r.type == QUEUE and r.name == "orders-queue")
    assert "fifoQueue" not in queue.inputs
    assert "orders_queue_url" in stack_run.stack_outputs
    assert stack_run.stack_outputs["orders_queue_name"] == f"orders-{stack_run.stack}"


def test_stage_config_defaults_match_the_pulumi_yaml_schema() -> None:
    schema = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["config"]
    defaults = StageConfig()
    flat = [f for f in fields(StageConfig) if f.name not in ("consumers", "fanouts")]
    for f in flat:
        key = StageConfig.config_key(f.name)
        assert key in schema, f"{key} missing from Pulumi.yaml config"
        value = getattr(defaults, f.name)
        expected = list(value) if isinstance(value, tuple) else value
        assert schema[key]["default"] == expected, key
    assert set(schema) == {StageConfig.config_key(f.name) for f in fields(StageConfig)}


def test_pulumi_yaml_declares_only_types_the_cli_accepts() -> None:
    """Pulumi's project schema (sdk/go/common/workspace/project.json, simpleConfigType) types
    config as string, integer, boolean or array only; an object key must carry no `type`."""
    schema = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["config"]
    for key, spec in schema.items():
        assert spec.get("type") in (None, "string", "integer", "boolean", "array"), key
        assert spec.get("description"), key
    assert "type" not in schema["consumers"] and "type" not in schema["fanouts"]
    assert isinstance(schema["consumers"]["default"], dict)


def test_stage_config_refuses_a_malformed_email_list() -> None:
    with pytest.raises(Exception, match="alarmEmails"):
        run_program(PROJECT_DIR, "dev", config_overrides={"alarmEmails": "ops@example.com"})


@pytest.mark.parametrize("stack", sorted(stack_files()))
def test_stack_files_only_set_declared_keys(stack: str) -> None:
    schema = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["config"]
    config = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())["config"]
    for key in config:
        namespace, _, name = key.partition(":")
        assert namespace in ("aws", "idempotent-messaging"), key
        if namespace == "idempotent-messaging":
            assert name in schema, f"{key} is not declared in Pulumi.yaml"


def test_localstack_stack_points_every_used_service_at_the_emulator() -> None:
    config = yaml.safe_load((PROJECT_DIR / "Pulumi.localstack.yaml").read_text())["config"]
    (endpoints,) = config["aws:endpoints"]
    for service in ("sqs", "dynamodb", "sns", "lambda", "iam", "cloudwatch", "logs", "sts", "kms"):
        assert endpoints[service] == "http://localhost:4566", service
    for flag in ("skipCredentialsValidation", "skipRequestingAccountId", "skipMetadataApiCheck"):
        assert config[f"aws:{flag}"] is True
    run = run_program(PROJECT_DIR, "localstack")
    assert any(r.type == ESM for r in run.resources)


def test_monthly_charge_schedule_takes_cron_and_time_zone_from_stage_config(
    stack_run: ProgramRun,
) -> None:
    (schedule,) = [r for r in stack_run.resources if r.type == "aws:scheduler/schedule:Schedule"]
    assert schedule.name == "monthly-charge-schedule"
    schema = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["config"]
    default = schema["fanouts"]["default"]["monthly-charge"]
    assert schedule.inputs["scheduleExpression"] == default["scheduleExpression"]
    assert schedule.inputs["scheduleExpressionTimezone"] == default["scheduleExpressionTimezone"]
    changed = run_program(
        PROJECT_DIR,
        stack_run.stack,
        preview=stack_run.preview,
        config_overrides={
            "fanouts": {
                "monthly-charge": {
                    "scheduleExpression": "cron(30 0 1 * ? *)",
                    "scheduleExpressionTimezone": "Europe/Berlin",
                }
            }
        },
    )
    (schedule,) = [r for r in changed.resources if r.type == "aws:scheduler/schedule:Schedule"]
    assert schedule.inputs["scheduleExpression"] == "cron(30 0 1 * ? *)"
    assert schedule.inputs["scheduleExpressionTimezone"] == "Europe/Berlin"
