"""The emulator deploy creates every declared resource with exactly the declared settings.

Each assertion reads the setting BACK from the emulator and compares it with the input the
program declared (as recorded by policy.program's monitor), so a materialiser that drops or
alters a setting fails here.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from idempotent_messaging.local import deploy as deploy_cli
from idempotent_messaging.local.server import start_emulator
from idempotent_messaging.local.session import StackSession, start_session
from tests.e2e.conftest import FIXTURES, MINI

pytestmark = pytest.mark.e2e

QUEUE_SETTINGS = {
    "visibilityTimeoutSeconds": "VisibilityTimeout",
    "messageRetentionSeconds": "MessageRetentionPeriod",
    "fifoQueue": "FifoQueue",
    "sqsManagedSseEnabled": "SqsManagedSseEnabled",
    "contentBasedDeduplication": "ContentBasedDeduplication",
    "receiveWaitTimeSeconds": "ReceiveMessageWaitTimeSeconds",
    "delaySeconds": "DelaySeconds",
}


def _declared(session: StackSession, type_: str) -> list[Any]:
    assert session.deploy_result is not None
    return [r for r in session.deploy_result.run.resources if r.type == type_]


def _normalise(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def assert_queues_match_declaration(session: StackSession) -> int:
    sqs = session.client("sqs")
    checked = 0
    for resource in _declared(session, "aws:sqs/queue:Queue"):
        url = resource.outputs["url"]
        actual = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        for key, attribute in QUEUE_SETTINGS.items():
            if key in resource.inputs and not (key == "fifoQueue" and not resource.inputs[key]):
                assert actual[attribute] == _normalise(resource.inputs[key]), (
                    f"{resource.name}.{key}"
                )
                checked += 1
        if resource.inputs.get("redrivePolicy"):
            assert json.loads(actual["RedrivePolicy"]) == json.loads(
                resource.inputs["redrivePolicy"]
            )
            checked += 1
    return checked


def assert_tables_match_declaration(session: StackSession) -> int:
    ddb = session.client("dynamodb")
    checked = 0
    for resource in _declared(session, "aws:dynamodb/table:Table"):
        name = resource.outputs["name"]
        table = ddb.describe_table(TableName=name)["Table"]
        keys = {k["KeyType"]: k["AttributeName"] for k in table["KeySchema"]}
        assert keys["HASH"] == resource.inputs["hashKey"]
        assert keys.get("RANGE") == resource.inputs.get("rangeKey")
        billing = table.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED")
        assert billing == resource.inputs.get("billingMode", "PROVISIONED")
        ttl = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        declared_ttl = resource.inputs.get("ttl") or {}
        if declared_ttl.get("enabled"):
            assert ttl["TimeToLiveStatus"] == "ENABLED"
            assert ttl["AttributeName"] == declared_ttl["attributeName"]
        else:
            assert ttl["TimeToLiveStatus"] == "DISABLED"
        pitr = ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
        status = pitr["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"]
        declared_pitr = (resource.inputs.get("pointInTimeRecovery") or {}).get("enabled", False)
        assert status == ("ENABLED" if declared_pitr else "DISABLED"), name
        checked += 1
    return checked


def assert_functions_and_mappings_match_declaration(session: StackSession) -> int:
    lam = session.client("lambda")
    checked = 0
    for resource in _declared(session, "aws:lambda/function:Function"):
        name = resource.outputs["name"]
        config = lam.get_function_configuration(FunctionName=name)
        registered = session.registry.functions[name]
        assert config["Handler"] == registered.handler == resource.inputs["handler"]
        assert config["Timeout"] == registered.timeout_s == int(resource.inputs.get("timeout", 3))
        assert config["MemorySize"] == registered.memory_mb
        assert registered.memory_mb == int(resource.inputs.get("memorySize", 128))
        declared_env = (resource.inputs.get("environment") or {}).get("variables") or {}
        assert config["Environment"]["Variables"] == registered.environment == declared_env
        checked += 1
    mappings = {m.logical_name: m for m in session.registry.mappings}
    for resource in _declared(session, "aws:lambda/eventSourceMapping:EventSourceMapping"):
        mapping = mappings[resource.name]
        assert mapping.event_source_arn == resource.inputs["eventSourceArn"]
        assert mapping.batch_size == int(resource.inputs.get("batchSize", 10))
        assert mapping.maximum_batching_window_s == int(
            resource.inputs.get("maximumBatchingWindowInSeconds", 0)
        )
        assert mapping.function_response_types == list(
            resource.inputs.get("functionResponseTypes", [])
        )
        checked += 1
    return checked


def assert_schedules_match_declaration(session: StackSession) -> int:
    scheduler = session.client("scheduler")
    checked = 0
    for resource in _declared(session, "aws:scheduler/schedule:Schedule"):
        declared = resource.inputs
        actual = scheduler.get_schedule(
            Name=resource.outputs["name"], GroupName=declared.get("groupName", "default")
        )
        assert actual["ScheduleExpression"] == declared["scheduleExpression"]
        assert actual.get("ScheduleExpressionTimezone") == declared.get(
            "scheduleExpressionTimezone"
        )
        assert actual["FlexibleTimeWindow"]["Mode"] == declared["flexibleTimeWindow"]["mode"]
        target = declared["target"]
        assert actual["Target"]["Arn"] == target["arn"]
        assert actual["Target"].get("Input") == target.get("input")
        retry = target.get("retryPolicy") or {}
        if retry:
            assert actual["Target"]["RetryPolicy"] == {
                "MaximumEventAgeInSeconds": int(retry["maximumEventAgeInSeconds"]),
                "MaximumRetryAttempts": int(retry["maximumRetryAttempts"]),
            }
        dlq = (target.get("deadLetterConfig") or {}).get("arn")
        assert actual["Target"].get("DeadLetterConfig", {}).get("Arn") == dlq
        checked += 1
    return checked


def test_mini_deploy_reads_back_every_declared_queue_table_function_and_mapping(
    mini: StackSession,
) -> None:
    assert not mini.registry.unsupported()
    assert assert_queues_match_declaration(mini) >= 8
    assert assert_tables_match_declaration(mini) == 2
    assert assert_functions_and_mappings_match_declaration(mini) == 5
    assert assert_schedules_match_declaration(mini) == 1


def test_provider_functions_are_answered_with_the_emulator_account_and_region(
    mini: StackSession,
) -> None:
    iam = mini.client("iam")
    (role,) = iam.list_roles()["Roles"]
    (name,) = iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"]
    assert name.startswith("mini-policy-")  # auto-named like the provider does
    document = iam.get_role_policy(RoleName=role["RoleName"], PolicyName=name)
    statement = document["PolicyDocument"]["Statement"][0]
    assert statement["Resource"] == "arn:aws:sqs:ap-northeast-1:123456789012:*"
    assert statement["Action"] == "sqs:ReceiveMessage"


def test_stack_config_reaches_the_emulator(mini: StackSession) -> None:
    """Pulumi.e2e.yaml sets visibilityTimeout 65 (the schema default is 60)."""
    sqs = mini.client("sqs")
    url = mini.registry.outputs["orders"]["queue_url"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
    assert attributes["Attributes"]["VisibilityTimeout"] == "65"


def test_alarm_schedule_log_group_and_permission_are_created_as_declared(
    mini: StackSession,
) -> None:
    (alarm_decl,) = _declared(mini, "aws:cloudwatch/metricAlarm:MetricAlarm")
    (alarm,) = mini.client("cloudwatch").describe_alarms(AlarmNames=[alarm_decl.inputs["name"]])[
        "MetricAlarms"
    ]
    assert alarm["Threshold"] == alarm_decl.inputs["threshold"]
    assert alarm["ComparisonOperator"] == alarm_decl.inputs["comparisonOperator"]
    assert alarm["AlarmActions"] == alarm_decl.inputs["alarmActions"]
    assert alarm["OKActions"] == alarm_decl.inputs["okActions"]
    assert {d["Name"]: d["Value"] for d in alarm["Dimensions"]} == alarm_decl.inputs["dimensions"]

    (schedule_decl,) = _declared(mini, "aws:scheduler/schedule:Schedule")
    schedule = mini.client("scheduler").get_schedule(Name=schedule_decl.inputs["name"])
    target = schedule_decl.inputs["target"]
    assert schedule["ScheduleExpression"] == schedule_decl.inputs["scheduleExpression"]
    assert schedule["ScheduleExpressionTimezone"] == "Asia/Tokyo"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert schedule["Target"]["Arn"] == target["arn"]
    assert schedule["Target"]["Input"] == target["input"]
    assert schedule["Target"]["RetryPolicy"] == {
        "MaximumEventAgeInSeconds": 3600,
        "MaximumRetryAttempts": 3,
    }
    assert schedule["Target"]["DeadLetterConfig"]["Arn"] == target["deadLetterConfig"]["arn"]

    (group,) = mini.client("logs").describe_log_groups(logGroupNamePrefix="/aws/lambda/mini")[
        "logGroups"
    ]
    assert group["retentionInDays"] == 14

    policy = json.loads(
        mini.client("lambda").get_policy(FunctionName="mini-dispatcher-fn")["Policy"]
    )
    assert policy["Statement"][0]["Principal"] == {"Service": "scheduler.amazonaws.com"}


def test_unsupported_resource_type_is_reported_and_fails_the_deploy_command() -> None:
    project = FIXTURES / "unsupported"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = deploy_cli.main(["--stack", "e2e", "--project", str(project)])
    assert code == 1
    assert "+ aws:sqs/queue:Queue" in out.getvalue()
    assert "NOT MATERIALISED (1)" in out.getvalue()
    assert "! aws:ec2/vpc:Vpc" in out.getvalue()
    assert "network: unsupported: no materialiser for this type" in out.getvalue()


def test_mapping_is_refused_like_lambda_when_visibility_is_below_the_function_timeout() -> None:
    with start_emulator() as emulator:
        result = deploy_cli.deploy(emulator, "e2e", MINI, {"visibilityTimeout": 5})
    failed = {r.name: r.detail for r in result.not_materialised}
    assert set(failed) == {"orders-esm"}
    assert (
        "visibility timeout 5 s is less than function mini-orders-fn timeout 10 s"
        in (failed["orders-esm"])
    )
    assert not result.registry.mappings or all(
        m.logical_name != "orders-esm" for m in result.registry.mappings
    )


def test_dev_stack_deploys_completely_with_its_declared_settings() -> None:
    """The reference stack: same __main__.py + Pulumi.dev.yaml as `pulumi up`."""
    session = start_session("dev")
    try:
        assert [(r.type, r.name) for r in session.registry.unsupported()] == []
        assert assert_queues_match_declaration(session) >= 4
        assert assert_tables_match_declaration(session) >= 2
        assert assert_functions_and_mappings_match_declaration(session) >= 2
        assert assert_schedules_match_declaration(session) == 1  # monthly-charge
        for mapping in session.registry.mappings:
            assert "ReportBatchItemFailures" in mapping.function_response_types
    finally:
        session.close()
