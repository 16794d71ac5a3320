"""Names people use deploy: every physical name the components derive fits its AWS limit
(idempotent_messaging.names.fit, the one derivation), the same on every run, the full name kept
in a tag when it had to be shortened; only a name that cannot be made to fit is refused."""

from __future__ import annotations

from typing import Any

import pytest

from idempotent_messaging import names

from .conftest import ConsumerRunner, PulumiHarness, Run, reference_code

pytestmark = pytest.mark.infra

NAME_LIMITS = {
    "aws:iam/role:Role": ("name", names.IAM_ROLE),
    "aws:iam/rolePolicy:RolePolicy": ("name", names.IAM_INLINE_POLICY),
    "aws:lambda/function:Function": ("name", names.LAMBDA_FUNCTION),
    "aws:sqs/queue:Queue": ("name", names.SQS_QUEUE),
    "aws:dynamodb/table:Table": ("name", names.DYNAMODB_TABLE),
    "aws:sns/topic:Topic": ("name", names.SNS_TOPIC),
    "aws:cloudwatch/metricAlarm:MetricAlarm": ("name", names.CLOUDWATCH_ALARM),
    "aws:cloudwatch/dashboard:Dashboard": ("dashboardName", names.CLOUDWATCH_DASHBOARD),
    "aws:cloudwatch/logGroup:LogGroup": ("name", names.LOG_GROUP),
    "aws:scheduler/schedule:Schedule": ("name", names.SCHEDULER_SCHEDULE),
}
"""Every named type the components create: its name property and AWS's limit."""
TEAM_FANOUT = "payroll-benefits-monthly-charge"
"""31 characters: refused in `dev` before (the fan-out prefix was capped at 32)."""


def physical_names(run: Run) -> list[tuple[str, str, int]]:
    """(type, name, limit) of every named child."""
    found = []
    for r in run.registered:
        if r.type in NAME_LIMITS:
            prop, limit = NAME_LIMITS[r.type]
            found.append((r.type, r.inputs[prop], limit))
    return found


def assert_every_name_fits(run: Run) -> None:
    named = physical_names(run)
    assert {typ for typ, _, _ in named} >= {
        "aws:iam/role:Role",
        "aws:lambda/function:Function",
        "aws:sqs/queue:Queue",
        "aws:dynamodb/table:Table",
    }
    too_long = [(typ, name, limit) for typ, name, limit in named if len(name) > limit]
    assert too_long == []
    queues = [name for typ, name, _ in named if typ == "aws:sqs/queue:Queue"]
    assert len(set(queues)) == len(queues)
    functions = {r.inputs["name"] for r in run.of_type("aws:lambda/function:Function")}
    log_groups = {r.inputs["name"] for r in run.of_type("aws:cloudwatch/logGroup:LogGroup")}
    assert {f"/aws/lambda/{f}" for f in functions} == log_groups  # where Lambda writes


def run_team_fanout(harness: PulumiHarness, **overrides: Any) -> Run:
    from idempotent_messaging.components.monthly_fanout import MonthlyFanout, MonthlyFanoutArgs

    args = MonthlyFanoutArgs(
        schedule_expression_timezone="Asia/Tokyo",
        consumer_handler="handlers.charges.handler",
        consumer_code=reference_code(),
        **overrides,
    )

    def program() -> dict[str, Any]:
        fanout = MonthlyFanout(TEAM_FANOUT, args)
        return {"schedule_name": fanout.schedule_name}

    return harness.run(program)


def test_a_fanout_named_as_a_team_names_it_deploys_in_dev(pulumi_harness: PulumiHarness) -> None:
    run = run_team_fanout(pulumi_harness, physical_name=f"{TEAM_FANOUT}-dev")
    assert_every_name_fits(run)
    # Every name fits as it is: nothing shortened, nothing tagged.
    roles = sorted(r.inputs["name"] for r in run.of_type("aws:iam/role:Role"))
    assert roles == [
        f"{TEAM_FANOUT}-dev-charges-consumer-role",
        f"{TEAM_FANOUT}-dev-dispatcher-role",
        f"{TEAM_FANOUT}-dev-scheduler-role",
    ]


def test_a_prefix_too_long_for_aws_is_shortened_stably_and_its_full_name_kept_in_a_tag(
    pulumi_harness: PulumiHarness,
) -> None:
    physical = f"{TEAM_FANOUT}-preproduction-eu-central-1-blue"
    run = run_team_fanout(pulumi_harness, physical_name=physical)
    assert_every_name_fits(run)
    again = run_team_fanout(PulumiHarness(), physical_name=physical)
    assert sorted(physical_names(again)) == sorted(physical_names(run))  # same on every run
    role = next(
        r
        for r in run.of_type("aws:iam/role:Role")
        if r.inputs["tags"].get(names.FULL_NAME_TAG, "").endswith("-charges-consumer-role")
    )
    full = role.inputs["tags"][names.FULL_NAME_TAG]
    assert full == f"{physical}-charges-consumer-role"
    assert role.inputs["name"] == names.fit(full, names.IAM_ROLE) != full
    (schedule,) = run.of_type("aws:scheduler/schedule:Schedule")
    assert schedule.inputs["name"] == names.fit(physical, names.SCHEDULER_SCHEDULE)


@pytest.mark.parametrize("fifo", [False, True])
def test_a_consumer_with_a_long_prefix_gets_every_name_within_its_limit(
    run_consumer: ConsumerRunner, fifo: bool
) -> None:
    from idempotent_messaging.components import BusinessTableArgs

    physical = "inventory-stock-adjustments-" + "w" * 100  # 128 characters: the cap
    run = run_consumer(
        physical_name=physical,
        fifo=fifo,
        business_table=BusinessTableArgs(name="stock_levels", hash_key="sku"),
        create_notification_topic=True,
    )
    assert_every_name_fits(run)
    queues = {r.name: r.inputs for r in run.of_type("aws:sqs/queue:Queue")}
    if fifo:
        assert all(q["name"].endswith(".fifo") for q in queues.values())
    tags = queues["orders-queue-dlq"]["tags"]
    assert tags[names.FULL_NAME_TAG] == f"{physical}-dlq" + (".fifo" if fifo else "")


def test_a_prefix_whose_full_names_no_tag_can_hold_is_refused(run_consumer: ConsumerRunner) -> None:
    with pytest.raises(ValueError, match=r"physical_name='x{129}'.*1\.\.128"):
        run_consumer(physical_name="x" * 129)
