"""The function's role: explicit actions on exactly the component's own ARNs."""

from __future__ import annotations

from typing import Any

import pytest

from idempotent_messaging.components import BusinessTableArgs, iam

from .conftest import ConsumerRunner, Run

pytestmark = pytest.mark.infra


def allow_statements(run: Run) -> list[dict[str, Any]]:
    policy = run.one("aws:iam/rolePolicy:RolePolicy").json("policy")
    assert policy["Version"] == "2012-10-17"
    return [s for s in policy["Statement"] if s["Effect"] == "Allow"]


def own_arns(run: Run) -> set[str]:
    arns = {r.outputs["arn"] for r in run.registered if r.custom and "arn" in r.outputs}
    log_group = run.one("aws:cloudwatch/logGroup:LogGroup").outputs["arn"]
    return arns | {f"{log_group}:*"}


@pytest.mark.parametrize("tracing", [False, True])
def test_role_policy_has_no_wildcard_action(run_consumer: ConsumerRunner, tracing: bool) -> None:
    run = run_consumer(
        tracing=tracing,
        create_notification_topic=True,
        business_table=BusinessTableArgs(name="order_records", hash_key="order_id"),
    )
    actions = [a for s in allow_statements(run) for a in s["Action"]]
    assert actions
    assert [a for a in actions if "*" in a] == []


def test_role_policy_names_only_the_components_arns(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(
        create_notification_topic=True,
        business_table=BusinessTableArgs(name="order_records", hash_key="order_id"),
    )
    resources = {r for s in allow_statements(run) for r in s["Resource"]}
    assert resources <= own_arns(run)
    assert "*" not in resources


def test_only_xray_gets_a_wildcard_resource(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(tracing=True)
    wildcard = [s["Sid"] for s in allow_statements(run) if "*" in s["Resource"]]
    assert wildcard == ["WriteTraces"]  # X-Ray write actions have no resource-level control


def test_each_resource_gets_exactly_the_runtime_actions(run_consumer: ConsumerRunner) -> None:
    run = run_consumer(create_notification_topic=True)
    by_sid = {s["Sid"]: s for s in allow_statements(run)}
    queue = run.one("aws:sqs/queue:Queue", "orders-queue").outputs["arn"]
    dlq = run.one("aws:sqs/queue:Queue", "orders-queue-dlq").outputs["arn"]
    state = run.one("aws:dynamodb/table:Table", "orders-state").outputs["arn"]
    topic = run.one("aws:sns/topic:Topic", "orders-notifications").outputs["arn"]
    logs = run.one("aws:cloudwatch/logGroup:LogGroup").outputs["arn"]
    assert {sid: (s["Action"], s["Resource"]) for sid, s in by_sid.items()} == {
        "ConsumeSourceQueue": (
            [
                "sqs:ChangeMessageVisibility",
                "sqs:DeleteMessage",
                "sqs:GetQueueAttributes",
                "sqs:ReceiveMessage",
            ],
            [queue],
        ),
        "QuarantineToDeadLetterQueue": (["sqs:SendMessage"], [dlq]),
        "ClaimEvents": (
            [
                "dynamodb:BatchGetItem",
                # DomainKeyedCreate: the claim INSERT and its release (issue 36), granted to
                # every consumer until grants are derived per consumer.
                "dynamodb:DeleteItem",
                "dynamodb:PartiQLInsert",
                "dynamodb:PartiQLUpdate",
                "dynamodb:PutItem",
                "dynamodb:UpdateItem",
            ],
            [state],
        ),
        "PublishNotifications": (["sns:Publish"], [topic]),
        "WriteOwnLogs": (["logs:CreateLogStream", "logs:PutLogEvents"], [f"{logs}:*"]),
    }


def test_the_business_table_gets_the_writes_and_the_claim_it_may_hold(
    run_consumer: ConsumerRunner,
) -> None:
    """A consumer declaring SingleItemEffect keeps its claim in the business item: besides the
    transaction's item actions (TransactWriteItems is authorised per item action), the runtime
    writes it as a PartiQL INSERT on a standard queue, reads it with BatchGetItem and marks it
    `sent` with a PartiQL UPDATE (BatchExecuteStatement is authorised per statement verb:
    dynamodb:PartiQLInsert, dynamodb:PartiQLUpdate)."""
    run = run_consumer(business_table=BusinessTableArgs(name="order_records", hash_key="order_id"))
    business = run.one("aws:dynamodb/table:Table", "orders-order_records").outputs["arn"]
    statement = {s["Sid"]: s for s in allow_statements(run)}["WriteBusinessRows"]
    assert statement["Resource"] == [business]
    assert statement["Action"] == [
        "dynamodb:BatchGetItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:DeleteItem",
        "dynamodb:PartiQLInsert",
        "dynamodb:PartiQLUpdate",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
    ]


def test_role_trusts_only_lambda(run_consumer: ConsumerRunner) -> None:
    role = run_consumer().one("aws:iam/role:Role")
    assert role.json("assumeRolePolicy")["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "lambda.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ]


def test_policy_builder_refuses_wildcard_actions_and_empty_resources() -> None:
    with pytest.raises(ValueError, match=r"action='sqs:\*'"):
        iam.allow("Bad", ["sqs:*"], ["arn:aws:sqs:us-east-1:111122223333:q"])
    with pytest.raises(ValueError, match="at least one resource"):
        iam.allow("Bad", ["sqs:SendMessage"], [])
