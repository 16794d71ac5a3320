"""The orders entry point as Lambda runs it: env read per invocation, Powertools logs/metrics."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from handlers import orders
from idempotent_messaging.runtime import env, logger
from idempotent_messaging.runtime.clients import reset_clients
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    STATE_TABLE,
    Aws,
    FakeContext,
    assert_exactly_once,
    order_body,
    put_legacy_row,
    record,
    sqs_event,
)

pytestmark = pytest.mark.integration

MARKER = "BODY-MARKER-7f3a"


@pytest.fixture
def lambda_env(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name, value in aws.env().items():
        monkeypatch.setenv(name, value)
    aws.claims_in_items = True  # the orders consumer declares SingleItemEffect
    reset_clients()
    yield aws
    reset_clients()


@pytest.fixture
def log_lines() -> Iterator[list[dict[str, Any]]]:
    """Every JSON log line the Powertools logger emits during the test."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    target = logging.getLogger(logger.name)  # the stdlib logger behind Powertools' Logger
    target.addHandler(handler)
    lines: list[dict[str, Any]] = []
    yield lines
    target.removeHandler(handler)


def read_lines(stream_lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for handler in logging.getLogger(logger.name).handlers:
        if isinstance(handler, logging.StreamHandler) and isinstance(handler.stream, io.StringIO):
            stream_lines.extend(
                json.loads(line) for line in handler.stream.getvalue().splitlines() if line
            )
    return stream_lines


def test_handler_processes_orders_contract_end_to_end(lambda_env: Aws) -> None:
    body = json.dumps({"event_id": "evt-1", "order": {"order_id": "o-1", "qty": 2, "price": 9.5}})
    response = orders.handler(sqs_event(record(body)), FakeContext())
    assert response == {"batchItemFailures": []}
    row = lambda_env.order_rows()[0]
    assert row["order_id"] == {"S": "o-1"}
    assert row["qty"] == {"N": "2"} and row["price"] == {"N": "9.5"}
    assert row["source_event_id"] == {"S": "evt-1"}
    notes = assert_exactly_once(lambda_env, {"evt-1": "o-1"})
    assert notes[0] == {"event_id": "evt-1", "order_id": "o-1", "type": "order_recorded"}


def test_handler_reads_environment_per_invocation(
    lambda_env: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several functions share one process in the embedded demo: env changes must apply."""
    lambda_env.dynamodb.create_table(
        TableName="other_orders",
        KeySchema=[{"AttributeName": orders.ORDER_KEY, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": orders.ORDER_KEY, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    orders.handler(sqs_event(record(order_body("a"))), FakeContext())
    monkeypatch.setenv(env.BUSINESS_TABLE, "other_orders")
    orders.handler(sqs_event(record(order_body("b"))), FakeContext())
    # The claim lives in the order row, in whichever business table the function was given.
    assert {c["event_id"]["S"] for c in lambda_env.claims()} == {"a"}
    assert {row[env.ITEM_CLAIM_EVENT_ID]["S"] for row in lambda_env.claims("other_orders")} == {"b"}
    monkeypatch.delenv(env.DLQ_URL)
    rec = record(order_body("c"))
    assert orders.handler(sqs_event(rec), FakeContext()) == {
        "batchItemFailures": [{"itemIdentifier": rec["messageId"]}]
    }


def test_logs_carry_record_fields_and_never_the_body(
    lambda_env: Aws, log_lines: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    good = record(order_body("log-1", note=MARKER), receive_count=3)
    not_json = record(f"{{{MARKER}")
    schema = record(json.dumps({"event_id": "log-3", "order": {"amount": MARKER}}))
    put_legacy_row(lambda_env, "log-2")  # the clash's row key is already recorded
    clash = record(order_body("log-2", order_id="order-log-1", note=MARKER))
    orders.handler(sqs_event(good, not_json, schema, clash), FakeContext())
    orders.handler(sqs_event(good), FakeContext())
    lines = read_lines(log_lines)
    stdout = capsys.readouterr().out
    text = json.dumps(lines)
    assert lines
    assert MARKER not in text
    assert MARKER not in stdout
    outcomes = {
        line["message_id"]: line for line in lines if "outcome" in line and "message_id" in line
    }
    # The first delivery ends processed: listed on the batch's one processed line.
    summaries = [line for line in lines if line.get("outcome") == "processed"]
    assert [s["count"] for s in summaries] == [1]
    (listed,) = summaries[0]["records"]
    assert listed["message_id"] == good["messageId"]
    assert listed["event_id"] == "log-1"
    assert listed["receive_count"] == 3
    again = [line for line in lines if line.get("message_id") == good["messageId"]]
    assert [line["outcome"] for line in again] == ["duplicate_skipped"]
    assert outcomes[not_json["messageId"]]["failure_kind"] == "not_json"
    assert outcomes[schema["messageId"]]["failure_kind"] == "schema"
    assert outcomes[clash["messageId"]]["outcome"] == "quarantined"
    assert outcomes[clash["messageId"]]["failure_class"] == "permanent"
    emf = [json.loads(line) for line in stdout.splitlines() if '"_aws"' in line]
    names = {
        m["Name"] for doc in emf for d in doc["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]
    }
    assert {"processed", "quarantined", "duplicate_skipped"} <= names
    assert MARKER not in json.dumps(emf)


def test_handler_accepts_a_missing_context_from_local_drivers(
    lambda_env: Aws, log_lines: list[dict[str, Any]]
) -> None:
    assert orders.handler(sqs_event(record(order_body("nc-1"))), None) == {"batchItemFailures": []}
    orders.handler(sqs_event(record(order_body("nc-2"))), FakeContext())
    lines = [line for line in read_lines(log_lines) if line.get("outcome") == "processed"]
    assert "function_name" not in lines[0]
    assert lines[1]["function_name"] == "orders-consumer"
    assert_exactly_once(lambda_env, {"nc-1": "order-nc-1", "nc-2": "order-nc-2"})


# Each DynamoDB request the runtime makes, as the IAM actions AWS authorises it by: a
# transaction per item action, a PartiQL batch per statement verb (DynamoDB Developer Guide,
# "Using IAM with transactions" and "IAM policies with PartiQL for DynamoDB").
_TRANSACT_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}
_PARTIQL_ACTIONS = {
    "UPDATE": "dynamodb:PartiQLUpdate",
    "INSERT": "dynamodb:PartiQLInsert",
    "DELETE": "dynamodb:PartiQLDelete",
    "SELECT": "dynamodb:PartiQLSelect",
}


def _iam_actions(operation: str, params: dict[str, Any]) -> set[tuple[str, str]]:
    if operation == "TransactWriteItems":
        return {
            (_TRANSACT_ITEM_ACTIONS[kind], body["TableName"])
            for item in params["TransactItems"]
            for kind, body in item.items()
        }
    if operation == "BatchExecuteStatement":
        actions = set()
        for statement in params["Statements"]:
            verb, rest = statement["Statement"].split(None, 1)
            table = (
                rest.split()[1]
                if verb.upper() in ("DELETE", "SELECT", "INSERT")
                else rest.split()[0]
            )
            actions.add((_PARTIQL_ACTIONS[verb.upper()], table.strip('"')))
        return actions
    if operation == "BatchGetItem":
        return {("dynamodb:BatchGetItem", table) for table in params["RequestItems"]}
    return {(f"dynamodb:{operation}", params["TableName"])}


def test_every_dynamodb_action_the_runtime_uses_is_one_the_component_grants(
    lambda_env: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.client import BaseClient

    from idempotent_messaging.runtime import grants

    used: set[tuple[str, str]] = set()
    original = BaseClient._make_api_call

    def recording(client: Any, operation: str, params: dict[str, Any]) -> Any:
        if client.meta.service_model.service_name == "dynamodb":
            used.update(_iam_actions(operation, params))
        try:
            return original(client, operation, params)
        except ClientError as exc:
            # Without the refused item (ReturnValuesOnConditionCheckFailure not honoured), the
            # runtime reads the statuses with its BatchGetItem fallback: record it too.
            for reason in exc.response.get("CancellationReasons") or []:
                reason.pop("Item", None)
            raise

    monkeypatch.setattr(BaseClient, "_make_api_call", recording)
    fresh = [record(order_body(f"iam-{n}")) for n in range(3)]
    assert orders.handler(sqs_event(*fresh), FakeContext()) == {"batchItemFailures": []}
    assert orders.handler(sqs_event(*fresh), FakeContext()) == {"batchItemFailures": []}
    # The receipt gone (a death before it was written): the next copies republish and mark
    # their claims sent (PartiQL UPDATE on the business table).
    for item in original(lambda_env.dynamodb, "Scan", {"TableName": STATE_TABLE})["Items"]:
        original(
            lambda_env.dynamodb,
            "DeleteItem",
            {"TableName": STATE_TABLE, "Key": {"event_id": item["event_id"]}},
        )
    assert orders.handler(sqs_event(*fresh), FakeContext()) == {"batchItemFailures": []}

    # What the reference stack grants the orders consumer (claim_placement business_item).
    role = grants.consumer_grants(
        placement=grants.PLACEMENT_BUSINESS_ITEM,
        fifo=False,
        notifies=True,
        has_business_table=True,
    )
    granted = {(a, STATE_TABLE) for a in role.state_table} | {
        (a, BUSINESS_TABLE) for a in role.business_table
    }
    # The rows carrying their claims (PartiQL INSERTs on a standard queue), the duplicates'
    # status read and the sent marking on the business table (the orders consumer keeps its
    # claim in the row); the batch's publication receipt (PutItem) and its read on the
    # redelivery branch (BatchGetItem) on the STATE table (issue 26).
    assert {
        ("dynamodb:PartiQLInsert", BUSINESS_TABLE),
        ("dynamodb:BatchGetItem", BUSINESS_TABLE),
        ("dynamodb:PartiQLUpdate", BUSINESS_TABLE),
        ("dynamodb:PutItem", STATE_TABLE),
        ("dynamodb:BatchGetItem", STATE_TABLE),
    } <= used
    assert {table for _, table in used} == {BUSINESS_TABLE, STATE_TABLE}
    assert used <= granted, f"the function would be refused: {sorted(used - granted)}"
