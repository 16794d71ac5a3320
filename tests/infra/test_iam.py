"""The function's role: explicit actions on exactly the component's own ARNs."""

from __future__ import annotations

import re
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
    """Undeclared placement, no business table: the state table gets what either placement
    calls there; the source queue what the event source mapping polls with (Lambda developer
    guide, SQS execution role: ReceiveMessage, DeleteMessage, GetQueueAttributes; the runtime
    never changes a message's visibility, so no sqs:ChangeMessageVisibility)."""
    run = run_consumer(create_notification_topic=True)
    by_sid = {s["Sid"]: s for s in allow_statements(run)}
    queue = run.one("aws:sqs/queue:Queue", "orders-queue").outputs["arn"]
    dlq = run.one("aws:sqs/queue:Queue", "orders-queue-dlq").outputs["arn"]
    state = run.one("aws:dynamodb/table:Table", "orders-state").outputs["arn"]
    topic = run.one("aws:sns/topic:Topic", "orders-notifications").outputs["arn"]
    logs = run.one("aws:cloudwatch/logGroup:LogGroup").outputs["arn"]
    assert {sid: (s["Action"], s["Resource"]) for sid, s in by_sid.items()} == {
        "ConsumeSourceQueue": (
            ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"],
            [queue],
        ),
        "QuarantineToDeadLetterQueue": (["sqs:SendMessage"], [dlq]),
        "ClaimEvents": (
            [
                "dynamodb:BatchGetItem",
                # A domain-keyed consumer's claim INSERT and its release: an undeclared
                # consumer may have any placement (the documented fallback).
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


TABLE = BusinessTableArgs(name="order_records", hash_key="order_id")


def table_grants(run: Run) -> dict[str, list[str]]:
    return {
        s["Sid"]: s["Action"]
        for s in allow_statements(run)
        if s["Sid"] in ("ClaimEvents", "WriteBusinessRows")
    }


def test_an_undeclared_consumer_keeps_every_placements_business_table_grants(
    run_consumer: ConsumerRunner,
) -> None:
    """The documented fallback (runtime/grants.py): without claim_placement the role allows
    what either placement calls, so no consumer deployed before the declaration loses a call."""
    run = run_consumer(business_table=TABLE)
    assert table_grants(run)["WriteBusinessRows"] == [
        "dynamodb:BatchGetItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:DeleteItem",
        "dynamodb:PartiQLInsert",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
    ]


def test_a_domain_keyed_consumer_gets_the_claim_then_row_calls_and_no_declared_writes(
    run_consumer: ConsumerRunner,
) -> None:
    """claims.ClaimThenRow (DomainKeyedCreate): on a standard queue the claim is a PartiQL
    INSERT (a transaction Put as the fallback), released by a conditional DeleteItem when its
    row is refused; the row a PartiQL INSERT (a Put in the fallback), a refused one read back.
    No UpdateItem, ConditionCheckItem or DeleteItem on the business table: the placement writes
    its one row itself. FIFO: both Puts in the transaction, no INSERT, read or release."""
    run = run_consumer(
        business_table=TABLE, claim_placement="domain_keyed", create_notification_topic=True
    )
    assert table_grants(run) == {
        "ClaimEvents": [
            "dynamodb:BatchGetItem",
            "dynamodb:DeleteItem",
            "dynamodb:PartiQLInsert",
            "dynamodb:PartiQLUpdate",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        ],
        "WriteBusinessRows": [
            "dynamodb:BatchGetItem",
            "dynamodb:PartiQLInsert",
            "dynamodb:PutItem",
        ],
    }
    fifo = run_consumer(business_table=TABLE, claim_placement="domain_keyed", fifo=True)
    assert table_grants(fifo) == {
        "ClaimEvents": ["dynamodb:BatchGetItem", "dynamodb:PutItem"],
        "WriteBusinessRows": ["dynamodb:PutItem"],
    }


def test_an_in_item_consumer_gets_no_claim_writes_on_a_state_table_holding_only_receipts(
    run_consumer: ConsumerRunner,
) -> None:
    """claims.ItemClaims: the claim is the business Put (a transaction item; a PartiQL INSERT on
    a standard queue), read with BatchGetItem, marked with a PartiQL UPDATE, owed with an
    UpdateItem; the state table holds the receipts only (PutItem, BatchGetItem). No
    ConditionCheckItem/DeleteItem on the business table, no UpdateItem/PartiQLUpdate on the
    state table."""
    run = run_consumer(
        business_table=TABLE, claim_placement="business_item", create_notification_topic=True
    )
    assert table_grants(run) == {
        "ClaimEvents": ["dynamodb:BatchGetItem", "dynamodb:PutItem"],
        "WriteBusinessRows": [
            "dynamodb:BatchGetItem",
            "dynamodb:PartiQLInsert",
            "dynamodb:PartiQLUpdate",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        ],
    }


def test_a_fifo_in_item_consumer_gets_no_partiql_insert(run_consumer: ConsumerRunner) -> None:
    """On a FIFO source the runtime keeps the transaction for in-item claims (batch.py), so it
    never sends a PartiQL INSERT."""
    run = run_consumer(business_table=TABLE, claim_placement="business_item", fifo=True)
    assert "dynamodb:PartiQLInsert" not in table_grants(run)["WriteBusinessRows"]
    # No notification topic: no receipts, no sent marking, no owed notification.
    assert "ClaimEvents" not in table_grants(run)
    assert table_grants(run)["WriteBusinessRows"] == ["dynamodb:BatchGetItem", "dynamodb:PutItem"]


def test_a_state_table_consumer_gets_only_the_business_writes_it_declares(
    run_consumer: ConsumerRunner,
) -> None:
    run = run_consumer(
        business_table=TABLE,
        claim_placement="state_table",
        business_writes=["Update"],
        create_notification_topic=True,
    )
    assert table_grants(run) == {
        "ClaimEvents": [
            "dynamodb:BatchGetItem",
            "dynamodb:PartiQLUpdate",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        ],
        "WriteBusinessRows": ["dynamodb:UpdateItem"],
    }


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"claim_placement": "row"}, "claim_placement='row'"),
        ({"claim_placement": "business_item"}, "give business_table"),
        (
            {"claim_placement": "state_table", "business_writes": ["Upsert"]},
            "['Upsert'] are no TransactWriteItems item kinds",
        ),
        ({"business_writes": ["Put"], "business_table": TABLE}, "for claim_placement"),
        ({"claim_placement": "state_table", "business_writes": ["Put"]}, "business table"),
    ],
)
def test_a_bad_grant_declaration_is_refused_naming_the_field(
    run_consumer: ConsumerRunner, overrides: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(expected)):
        run_consumer(**overrides)


def test_policy_builder_refuses_wildcard_actions_and_empty_resources() -> None:
    with pytest.raises(ValueError, match=r"action='sqs:\*'"):
        iam.allow("Bad", ["sqs:*"], ["arn:aws:sqs:us-east-1:111122223333:q"])
    with pytest.raises(ValueError, match="at least one resource"):
        iam.allow("Bad", ["sqs:SendMessage"], [])


def test_role_trusts_only_lambda_for_its_own_account(run_consumer: ConsumerRunner) -> None:
    """IAM User Guide, "The confused deputy problem": the service principal may assume the
    role only on behalf of the deploying account (aws:SourceAccount)."""
    role = run_consumer().one("aws:iam/role:Role")
    assert role.json("assumeRolePolicy")["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "lambda.amazonaws.com"},
            "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"aws:SourceAccount": "111122223333"}},
        }
    ]
