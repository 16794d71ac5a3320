"""MonthlyFanout under Pulumi mocks: schedule, retries, DLQs, scoped roles, the FIFO child."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from idempotent_messaging import limits
from idempotent_messaging.dispatch import env as denv
from idempotent_messaging.runtime import env as renv

from .conftest import ACCOUNT, REGION, UNKNOWN, PulumiHarness, Registered, Run, reference_code

pytestmark = pytest.mark.infra

TYPE_TOKEN = "idempotent-messaging:index:MonthlyFanout"
CONSUMER_TOKEN = "idempotent-messaging:index:IdempotentQueueConsumer"
FANOUT_OUTPUTS = (
    "schedule_name",
    "schedule_arn",
    "schedule_dlq_url",
    "dispatcher_name",
    "dispatcher_arn",
    "control_queue_url",
    "control_dlq_url",
    "runs_table_name",
    "billing_accounts_table_name",
    "work_queue_url",
    "work_queue_arn",
    "alarm_names",
    "dashboard_name",
)
FanoutRunner = Callable[..., Run]


@pytest.fixture
def run_fanout(pulumi_harness: PulumiHarness) -> FanoutRunner:
    def runner(*, preview: bool = False, **overrides: Any) -> Run:
        from idempotent_messaging.components.monthly_fanout import MonthlyFanout, MonthlyFanoutArgs

        defaults: dict[str, Any] = {
            "schedule_expression_timezone": "Asia/Tokyo",
            "consumer_handler": "handlers.charges.handler",
        }
        if "consumer_code_path" not in overrides and "consumer_code" not in overrides:
            defaults["consumer_code"] = reference_code()
        args = MonthlyFanoutArgs(**{**defaults, **overrides})

        def program() -> dict[str, Any]:
            fanout = MonthlyFanout("monthly-charge", args)
            values = {output: getattr(fanout, output) for output in FANOUT_OUTPUTS}
            values["consumer_function_name"] = fanout.consumer.function_name
            values["consumer_topic_arn"] = fanout.consumer.topic_arn
            return values

        return pulumi_harness.run(program, preview=preview)

    return runner


@pytest.fixture
def default_run(run_fanout: FanoutRunner) -> Run:
    return run_fanout()


def function(run: Run, name: str) -> Registered:
    return run.one("aws:lambda/function:Function", name)


def policy_of(run: Run, name: str) -> dict[str, Any]:
    policy: dict[str, Any] = run.one("aws:iam/rolePolicy:RolePolicy", name).json("policy")
    return policy


def arn(run: Run, typ: str, name: str) -> str:
    value: str = run.one(typ, name).outputs["arn"]
    return value


def test_everything_hangs_under_the_component_and_the_consumer_is_a_child(default_run: Run) -> None:
    fanout = default_run.one(TYPE_TOKEN)
    consumer = default_run.one(CONSUMER_TOKEN)
    assert consumer.parent == fanout.urn and consumer.name == "monthly-charge-charges"
    by_urn = {r.urn: r for r in default_run.registered}
    for r in default_run.registered:
        if r is fanout:
            continue
        ancestor = by_urn[r.parent]
        while ancestor is not fanout:
            ancestor = by_urn[ancestor.parent]  # raises KeyError for an orphan


def test_schedule_defaults_cron_timezone_no_window_retries_dlq_and_scheduled_time(
    default_run: Run,
) -> None:
    schedule = default_run.one("aws:scheduler/schedule:Schedule")
    dispatcher_arn = arn(default_run, "aws:lambda/function:Function", "monthly-charge-dispatcher")
    dlq_arn = arn(default_run, "aws:sqs/queue:Queue", "monthly-charge-schedule-dlq")
    role_arn = arn(default_run, "aws:iam/role:Role", "monthly-charge-scheduler-role")
    inputs = schedule.inputs
    assert inputs["scheduleExpression"] == "cron(0 3 1 * ? *)"
    assert inputs["scheduleExpressionTimezone"] == "Asia/Tokyo"
    assert inputs["flexibleTimeWindow"] == {"mode": "OFF"}
    assert inputs["state"] == "ENABLED"
    target = inputs["target"]
    assert target["arn"] == dispatcher_arn and target["roleArn"] == role_arn
    assert target["retryPolicy"] == {"maximumRetryAttempts": 3, "maximumEventAgeInSeconds": 3600}
    assert target["deadLetterConfig"] == {"arn": dlq_arn}
    assert json.loads(target["input"]) == {
        "trigger": "schedule",
        "scheduled_time": "<aws.scheduler.scheduled-time>",
    }


def test_the_schedule_dlq_is_standard_encrypted_and_alarmed(default_run: Run) -> None:
    dlq = default_run.one("aws:sqs/queue:Queue", "monthly-charge-schedule-dlq")
    assert "fifoQueue" not in dlq.inputs  # Scheduler accepts only standard queues as DLQ
    assert dlq.inputs["sqsManagedSseEnabled"] is True
    assert dlq.inputs["messageRetentionSeconds"] == limits.SQS_MAX_RETENTION_S
    alarm = default_run.one(
        "aws:cloudwatch/metricAlarm:MetricAlarm", "monthly-charge-alarm-schedule-dlq"
    )
    assert alarm.inputs["dimensions"] == {"QueueName": dlq.outputs["name"]}
    assert alarm.inputs["threshold"] == 1
    assert alarm.inputs["alarmActions"] and alarm.inputs["okActions"]


def test_the_scheduler_role_trusts_scheduler_only_for_its_account_and_schedule_group(
    default_run: Run,
) -> None:
    """EventBridge Scheduler user guide, "Cross-service confused deputy prevention": the trust
    names the account (aws:SourceAccount) and the schedule group (aws:SourceArn)."""
    role = default_run.one("aws:iam/role:Role", "monthly-charge-scheduler-role")
    assert role.json("assumeRolePolicy")["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "scheduler.amazonaws.com"},
            "Action": "sts:AssumeRole",
            "Condition": {
                "StringEquals": {"aws:SourceAccount": ACCOUNT},
                "ArnEquals": {
                    "aws:SourceArn": f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule-group/default"
                },
            },
        }
    ]
    assert "groupName" not in default_run.one("aws:scheduler/schedule:Schedule").inputs


def test_the_scheduler_role_may_invoke_only_the_dispatcher(default_run: Run) -> None:
    statements = policy_of(default_run, "monthly-charge-scheduler-policy")["Statement"]
    dispatcher_arn = arn(default_run, "aws:lambda/function:Function", "monthly-charge-dispatcher")
    dlq_arn = arn(default_run, "aws:sqs/queue:Queue", "monthly-charge-schedule-dlq")
    assert {(tuple(s["Action"]), tuple(s["Resource"])) for s in statements} == {
        (("lambda:InvokeFunction",), (dispatcher_arn,)),
        (("sqs:SendMessage",), (dlq_arn,)),
    }


def test_with_a_customer_key_the_scheduler_role_can_read_the_schedule_and_dead_letter(
    run_fanout: FanoutRunner,
) -> None:
    """The schedule is encrypted with the key (kms:Decrypt: EventBridge Scheduler user guide,
    "Encryption at rest") and so is the schedule DLQ, which Scheduler sends to with this role
    (kms:GenerateDataKey + kms:Decrypt: SQS developer guide, "Key management"). Without them
    the first failed fire could not be dead-lettered."""
    key = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    run = run_fanout(kms_master_key_id=key)
    statements = policy_of(run, "monthly-charge-scheduler-policy")["Statement"]
    assert {s["Sid"]: (s["Action"], s["Resource"]) for s in statements}["UseScheduleKey"] == (
        ["kms:Decrypt", "kms:GenerateDataKey"],
        [key],
    )
    assert run.one("aws:scheduler/schedule:Schedule").inputs["kmsKeyArn"] == key
    dlq = run.one("aws:sqs/queue:Queue", "monthly-charge-schedule-dlq")
    assert dlq.inputs["kmsMasterKeyId"] == key


def test_the_dispatcher_role_is_least_privilege_on_exactly_its_resources(default_run: Run) -> None:
    statements = policy_of(default_run, "monthly-charge-dispatcher-policy")["Statement"]
    grants = {s["Sid"]: (set(s["Action"]), s["Resource"]) for s in statements}
    table = lambda name: arn(default_run, "aws:dynamodb/table:Table", name)  # noqa: E731
    queue = lambda name: arn(default_run, "aws:sqs/queue:Queue", name)  # noqa: E731
    assert grants["ScanBillingAccounts"] == (
        {"dynamodb:Scan"},
        [table("monthly-charge-billing-accounts")],
    )
    assert grants["RecordRuns"] == (
        {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
        [table("monthly-charge-runs")],
    )
    assert grants["EnqueueCharges"] == (
        {"sqs:SendMessage"},
        [queue("monthly-charge-charges-queue")],
    )
    # The control queue's mapping polls it (no visibility change), the dispatcher sends to it.
    assert grants["ContinueRuns"] == (
        {"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"},
        [queue("monthly-charge-control")],
    )
    assert grants["ReportFailedStarts"] == (
        {"sqs:SendMessage"},
        [queue("monthly-charge-schedule-dlq")],
    )
    for _sid, (actions, resources) in grants.items():
        assert not any("*" in action for action in actions)
        assert "*" not in resources
    assert set(grants) == {
        "ScanBillingAccounts",
        "RecordRuns",
        "EnqueueCharges",
        "ContinueRuns",
        "ReportFailedStarts",
        "WriteOwnLogs",
    }


def test_the_dispatcher_function_environment_and_error_alarm(default_run: Run) -> None:
    fn = function(default_run, "monthly-charge-dispatcher")
    assert fn.inputs["handler"] == "idempotent_messaging.dispatch.app.handler"
    assert fn.inputs["timeout"] == 900
    variables = fn.inputs["environment"]["variables"]
    work = default_run.one("aws:sqs/queue:Queue", "monthly-charge-charges-queue")
    control = default_run.one("aws:sqs/queue:Queue", "monthly-charge-control")
    assert variables[denv.SCHEDULE_TIMEZONE] == "Asia/Tokyo"
    assert variables[denv.WORK_QUEUE_URL] == work.outputs["url"]
    assert variables[denv.CONTROL_QUEUE_URL] == control.outputs["url"]
    assert variables[denv.RUNS_TABLE] == "monthly-charge-test-runs"
    assert variables[denv.BILLING_ACCOUNTS_TABLE] == "monthly-charge-test-billing-accounts"
    assert variables[denv.ITEM_SOURCE] == denv.SOURCE_DYNAMODB
    assert variables[denv.TIME_RESERVE_MS] == "60000"
    log_group = default_run.one(
        "aws:cloudwatch/logGroup:LogGroup", "monthly-charge-dispatcher-logs"
    )
    assert log_group.inputs["name"] == "/aws/lambda/monthly-charge-test-dispatcher"
    errors = default_run.one(
        "aws:cloudwatch/metricAlarm:MetricAlarm", "monthly-charge-dispatcher-alarm-errors"
    )
    assert errors.inputs["dimensions"] == {"FunctionName": fn.outputs["name"]}
    assert errors.inputs["alarmActions"]


def test_failed_scheduled_invocations_are_retried_then_dead_lettered(default_run: Run) -> None:
    config = default_run.one("aws:lambda/functionEventInvokeConfig:FunctionEventInvokeConfig")
    dlq_arn = arn(default_run, "aws:sqs/queue:Queue", "monthly-charge-schedule-dlq")
    assert config.inputs["maximumRetryAttempts"] == 2
    assert config.inputs["destinationConfig"] == {"onFailure": {"destination": dlq_arn}}


def test_continuations_come_from_a_fifo_control_queue_with_an_alarmed_fifo_dlq(
    default_run: Run,
) -> None:
    control = default_run.one("aws:sqs/queue:Queue", "monthly-charge-control")
    control_dlq = default_run.one("aws:sqs/queue:Queue", "monthly-charge-control-dlq")
    assert control.inputs["fifoQueue"] is True and control_dlq.inputs["fifoQueue"] is True
    assert control.inputs["name"] == "monthly-charge-test-control.fifo"
    assert control.inputs["visibilityTimeoutSeconds"] >= 6 * 900
    assert control.json("redrivePolicy")["deadLetterTargetArn"] == control_dlq.outputs["arn"]
    esm = next(
        r
        for r in default_run.of_type("aws:lambda/eventSourceMapping:EventSourceMapping")
        if r.inputs["eventSourceArn"] == control.outputs["arn"]
    )
    assert esm.inputs["functionName"] == arn(
        default_run, "aws:lambda/function:Function", "monthly-charge-dispatcher"
    )
    assert esm.inputs["batchSize"] == 1
    assert esm.inputs["functionResponseTypes"] == ["ReportBatchItemFailures"]
    assert esm.inputs["scalingConfig"] == {"maximumConcurrency": 16}
    alarm = default_run.one(
        "aws:cloudwatch/metricAlarm:MetricAlarm", "monthly-charge-alarm-control-dlq"
    )
    assert alarm.inputs["dimensions"] == {"QueueName": control_dlq.outputs["name"]}


def test_the_continuation_loop_is_allowed_deliberately_and_bounded_by_max_hops(
    default_run: Run,
) -> None:
    recursion = default_run.one("aws:lambda/functionRecursionConfig:FunctionRecursionConfig")
    fn = function(default_run, "monthly-charge-dispatcher")
    assert recursion.inputs == {"functionName": fn.outputs["name"], "recursiveLoop": "Allow"}
    assert fn.inputs["environment"]["variables"][denv.MAX_HOPS] == "48"


def test_the_work_queue_is_a_fifo_consumer_child_with_fifo_dlq_tenant_claims_and_ledger(
    default_run: Run,
) -> None:
    consumer = default_run.one(CONSUMER_TOKEN)
    queue = default_run.one("aws:sqs/queue:Queue", "monthly-charge-charges-queue")
    dlq = default_run.one("aws:sqs/queue:Queue", "monthly-charge-charges-queue-dlq")
    assert queue.parent == consumer.urn and dlq.parent == consumer.urn
    assert queue.inputs["fifoQueue"] is True and dlq.inputs["fifoQueue"] is True
    assert queue.inputs["name"].endswith(".fifo") and dlq.inputs["name"].endswith(".fifo")
    assert queue.inputs["contentBasedDeduplication"] is False
    for q in (queue, dlq):  # high-throughput FIFO by default: no 3,000 msg/s per-queue cap
        assert q.inputs["deduplicationScope"] == "messageGroup"
        assert q.inputs["fifoThroughputLimit"] == "perMessageGroupId"
    assert queue.json("redrivePolicy") == {
        "deadLetterTargetArn": dlq.outputs["arn"],
        "maxReceiveCount": 5,
    }
    fn = function(default_run, "monthly-charge-charges-consumer")
    assert fn.inputs["handler"] == "handlers.charges.handler"
    variables = fn.inputs["environment"]["variables"]
    assert variables[renv.STATE_KEY_LAYOUT] == renv.LAYOUT_TENANT
    assert variables[renv.CLAIM_TTL_SECONDS] == str(90 * 24 * 3600)
    assert variables[renv.SOURCE_QUEUE_FIFO] == "true"
    ledger = default_run.one("aws:dynamodb/table:Table", "monthly-charge-charges-ledger")
    assert (ledger.inputs["hashKey"], ledger.inputs["rangeKey"]) == ("tenant_id", "ledger_key")
    assert variables[renv.BUSINESS_TABLE] == ledger.outputs["name"]
    state = default_run.one("aws:dynamodb/table:Table", "monthly-charge-charges-state")
    assert (state.inputs["hashKey"], state.inputs["rangeKey"]) == ("pk", "sk")
    assert variables[renv.NOTIFICATION_TOPIC_ARN]  # a notification per charge


def test_tables_are_on_demand_with_pitr_and_keyed_as_the_dispatcher_reads_them(
    default_run: Run,
) -> None:
    billing = default_run.one("aws:dynamodb/table:Table", "monthly-charge-billing-accounts")
    runs = default_run.one("aws:dynamodb/table:Table", "monthly-charge-runs")
    assert (billing.inputs["hashKey"], billing.inputs["rangeKey"]) == (
        denv.BILLING_HASH_KEY,
        denv.BILLING_RANGE_KEY,
    )
    assert runs.inputs["hashKey"] == denv.RUNS_HASH_KEY and "rangeKey" not in runs.inputs
    for table in (billing, runs):
        assert table.inputs["billingMode"] == "PAY_PER_REQUEST"
        assert table.inputs["pointInTimeRecovery"] == {"enabled": True}
        assert table.inputs["serverSideEncryption"]["enabled"] is True


def test_outputs_resolve_to_the_schedule_dispatcher_work_queue_and_consumer(
    default_run: Run,
) -> None:
    values = default_run.values
    assert values["schedule_name"] == "monthly-charge-test"
    assert values["dispatcher_name"] == "monthly-charge-test-dispatcher"
    assert values["work_queue_url"] == (
        f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/monthly-charge-test-charges.fifo"
    )
    assert (
        values["work_queue_arn"]
        == f"arn:aws:sqs:{REGION}:{ACCOUNT}:monthly-charge-test-charges.fifo"
    )
    assert values["consumer_function_name"] == "monthly-charge-test-charges-consumer"
    assert values["runs_table_name"] == "monthly-charge-test-runs"
    assert len(values["alarm_names"]) == 4  # schedule DLQ, control DLQ, errors, throttles


def test_every_output_is_registered_with_the_consumers_under_a_prefix(default_run: Run) -> None:
    fanout = default_run.one(TYPE_TOKEN)
    consumer = default_run.one(CONSUMER_TOKEN)
    registered = default_run.component_outputs[fanout.urn]
    child = default_run.component_outputs[consumer.urn]
    assert set(registered) <= set(FANOUT_OUTPUTS) | {f"consumer_{k}" for k in child}
    for output in FANOUT_OUTPUTS:  # (a None value, e.g. a mock's schedule ARN, is not sent)
        assert registered.get(output) == default_run.values[output], output
    for key, value in child.items():
        assert registered[f"consumer_{key}"] == value, key
    assert registered["consumer_function_name"] == default_run.values["consumer_function_name"]


def test_preview_builds_with_unknown_arns(run_fanout: FanoutRunner) -> None:
    run = run_fanout(preview=True)
    assert run.values["schedule_arn"] == UNKNOWN
    schedule = run.one("aws:scheduler/schedule:Schedule")
    assert schedule.inputs["scheduleExpressionTimezone"] == "Asia/Tokyo"


def test_stage_settings_reach_the_schedule(run_fanout: FanoutRunner) -> None:
    run = run_fanout(
        schedule_expression="cron(30 0 1 * ? *)",
        schedule_expression_timezone="Europe/Berlin",
        retry_maximum_attempts=5,
        retry_maximum_event_age_seconds=7200,
        schedule_enabled=False,
        recursive_loop="Terminate",
    )
    inputs = run.one("aws:scheduler/schedule:Schedule").inputs
    assert inputs["scheduleExpression"] == "cron(30 0 1 * ? *)"
    assert inputs["scheduleExpressionTimezone"] == "Europe/Berlin"
    assert inputs["state"] == "DISABLED"
    assert inputs["target"]["retryPolicy"] == {
        "maximumRetryAttempts": 5,
        "maximumEventAgeInSeconds": 7200,
    }
    fn = function(run, "monthly-charge-dispatcher")
    assert fn.inputs["environment"]["variables"][denv.SCHEDULE_TIMEZONE] == "Europe/Berlin"
    recursion = run.one("aws:lambda/functionRecursionConfig:FunctionRecursionConfig")
    assert recursion.inputs["recursiveLoop"] == "Terminate"


def test_an_s3_manifest_source_grants_read_on_the_manifest_prefix_and_creates_no_table(
    run_fanout: FanoutRunner,
) -> None:
    run = run_fanout(item_source="s3", manifest_bucket_name="acme-billing")
    names = {r.name for r in run.of_type("aws:dynamodb/table:Table")}
    assert "monthly-charge-billing-accounts" not in names
    grants = {s["Sid"]: s for s in policy_of(run, "monthly-charge-dispatcher-policy")["Statement"]}
    assert "ScanBillingAccounts" not in grants
    assert grants["ReadManifests"]["Action"] == ["s3:GetObject"]
    assert grants["ReadManifests"]["Resource"] == ["arn:aws:s3:::acme-billing/billing/*"]
    variables = function(run, "monthly-charge-dispatcher").inputs["environment"]["variables"]
    assert variables[denv.MANIFEST_BUCKET] == "acme-billing"
    assert variables[denv.ITEM_SOURCE] == "s3"


def test_existing_tables_are_used_and_the_grants_scoped_to_them(run_fanout: FanoutRunner) -> None:
    billing_arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/billing_accounts"
    runs_arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/runs"
    run = run_fanout(
        existing_billing_accounts_table_name="billing_accounts",
        existing_billing_accounts_table_arn=billing_arn,
        existing_runs_table_name="runs",
        existing_runs_table_arn=runs_arn,
    )
    names = {r.name for r in run.of_type("aws:dynamodb/table:Table")}
    assert not {"monthly-charge-billing-accounts", "monthly-charge-runs"} & names
    grants = {s["Sid"]: s for s in policy_of(run, "monthly-charge-dispatcher-policy")["Statement"]}
    assert grants["ScanBillingAccounts"]["Resource"] == [billing_arn]
    assert grants["RecordRuns"]["Resource"] == [runs_arn]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"schedule_expression_timezone": "Mars/Olympus"},
            "schedule_expression_timezone='Mars/Olympus'",
        ),
        ({"schedule_expression": "0 3 1 * *"}, "schedule_expression='0 3 1 \\* \\*'"),
        ({"schedule_expression": "cron(0 3 1 * ?)"}, "six fields"),
        ({"retry_maximum_attempts": 186}, "retry_maximum_attempts=186"),
        ({"retry_maximum_event_age_seconds": 30}, "retry_maximum_event_age_seconds=30"),
        ({"item_source": "ftp"}, "item_source='ftp'"),
        ({"item_source": "s3"}, "manifest_bucket_name=None"),
        ({"manifest_bucket_name": "b-u-c"}, "only read when item_source is 's3'"),
        ({"manifest_key_template": "billing.jsonl"}, "must contain '\\{month\\}'"),
        ({"existing_runs_table_name": "runs"}, "give both the name and the ARN"),
        ({"dispatcher_timeout_seconds": 30}, "dispatcher_timeout_seconds=30"),
        ({"time_reserve_seconds": 900}, "time_reserve_seconds=900"),
        ({"recursive_loop": "Off"}, "recursive_loop='Off'"),
        ({"async_retry_attempts": 3}, "async_retry_attempts=3"),
        ({"physical_name": "x" * 121}, "physical_name="),
        ({"log_retention_days": 2}, "log_retention_days=2"),
        ({"log_level": "LOUD"}, "log_level='LOUD'"),
        ({"dispatcher_memory_size_mb": 64}, "dispatcher_memory_size_mb=64"),
        # the shared function arguments, checked by the fan-out itself before its child exists
        ({"runtime": "python3.9"}, "runtime='python3.9'"),
        ({"architecture": "arm"}, "architecture='arm'"),
        ({"metrics_namespace": ":bad ns"}, "metrics_namespace=':bad ns'"),
        ({"consumer_function_timeout_seconds": 0}, "consumer_function_timeout_seconds=0"),
        ({"consumer_memory_size_mb": 64}, "consumer_memory_size_mb=64"),
        ({"scan_page_size": 0}, "scan_page_size=0"),
        ({"send_concurrency": 257}, "send_concurrency=257"),
        ({"reserved_concurrency": 1}, "reserved_concurrency=1"),
        ({"alarm_emails": "ops@example.com"}, "alarm_emails="),
        (
            {
                "alarm_emails": ["ops@example.com"],
                "alarm_topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:alarms",
            },
            "with alarm_topic_arn given, subscribe on that topic instead",
        ),
    ],
)
def test_invalid_args_are_refused_before_any_resource_exists(
    run_fanout: FanoutRunner, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        run_fanout(**overrides)


def test_the_time_zone_is_required() -> None:
    from idempotent_messaging.components.monthly_fanout import MonthlyFanoutArgs

    with pytest.raises(TypeError, match="schedule_expression_timezone"):
        MonthlyFanoutArgs()  # type: ignore[call-arg]


def test_the_functions_environments_satisfy_the_handlers_own_settings(default_run: Run) -> None:
    from handlers.charges import CHARGES
    from idempotent_messaging.dispatch.settings import Settings as DispatchSettings
    from idempotent_messaging.runtime import Settings as RuntimeSettings

    dispatcher_env = function(default_run, "monthly-charge-dispatcher").inputs["environment"]
    settings = DispatchSettings.from_env(dispatcher_env["variables"])
    assert settings.scan_segments == 16 and settings.schedule_timezone == "Asia/Tokyo"
    assert settings.control_queue_url and settings.work_queue_url.endswith(".fifo")
    consumer_env = function(default_run, "monthly-charge-charges-consumer").inputs["environment"]
    runtime_settings = RuntimeSettings.from_env(consumer_env["variables"])
    CHARGES.check(runtime_settings)  # raises ConfigurationError when the wiring is wrong
    assert runtime_settings.tenant_layout and runtime_settings.source_fifo


def test_the_work_queue_may_opt_out_of_high_throughput_fifo(run_fanout: FanoutRunner) -> None:
    run = run_fanout(work_queue_high_throughput=False)
    queue = run.one("aws:sqs/queue:Queue", "monthly-charge-charges-queue")
    assert queue.inputs["fifoQueue"] is True
    assert "deduplicationScope" not in queue.inputs and "fifoThroughputLimit" not in queue.inputs


def test_a_given_alarm_topic_receives_every_alarm_and_no_topic_is_created(
    run_fanout: FanoutRunner,
) -> None:
    shared = f"arn:aws:sns:{REGION}:{ACCOUNT}:stack-alarms"
    run = run_fanout(alarm_topic_arn=shared)
    topics = {r.name for r in run.of_type("aws:sns/topic:Topic")}
    assert topics == {"monthly-charge-charges-notifications"}  # no alarm topic of its own
    alarms = run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
    # schedule DLQ, control DLQ, dispatcher errors/throttles + the consumer child's five
    assert len(alarms) == 9  # + the consumer's conflicting duplicates
    for alarm in alarms:
        assert alarm.inputs["alarmActions"] == [shared] == alarm.inputs["okActions"], alarm.name
