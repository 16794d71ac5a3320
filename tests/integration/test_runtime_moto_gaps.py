"""The moto gaps the runtime's PartiQL requests meet, and the patch that fills them
(local/moto_patches.py). Each ``stock_moto`` test asserts the gap: once moto closes it, the
test fails and the patch goes. Each expectation is DynamoDB's documented behaviour."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from handlers.orders import ORDER_KEY
from idempotent_messaging.local import moto_patches
from idempotent_messaging.runtime import env
from tests.integration.test_runtime_world import BUSINESS_TABLE, STATE_TABLE, Aws

pytestmark = pytest.mark.integration

# The documented multi-attribute form: one SET clause per attribute (DynamoDB developer guide,
# "PartiQL update statements for DynamoDB").
MULTI_SET = f'UPDATE "{STATE_TABLE}" SET "status" = ? SET "sent_at" = ? WHERE "event_id" = ?'


def _claim(aws: Aws, event_id: str) -> None:
    aws.dynamodb.put_item(
        TableName=STATE_TABLE,
        Item={"event_id": {"S": event_id}, "status": {"S": env.STATUS_PENDING}},
    )


def _mark(aws: Aws, event_id: str) -> dict[str, Any]:
    response = aws.dynamodb.batch_execute_statement(
        Statements=[
            {
                "Statement": MULTI_SET,
                "Parameters": [{"S": env.STATUS_SENT}, {"N": "7"}, {"S": event_id}],
            }
        ]
    )
    answer: dict[str, Any] = response["Responses"][0]
    return answer


def _status(aws: Aws, event_id: str) -> str | None:
    item = aws.dynamodb.get_item(TableName=STATE_TABLE, Key={"event_id": {"S": event_id}})
    return item.get("Item", {}).get("status", {}).get("S")


def test_stock_moto_refuses_the_documented_multi_attribute_update(aws: Aws) -> None:
    _claim(aws, "e1")
    # moto's PartiQL parser fails an assertion on the second SET clause.
    with moto_patches.stock_moto(), pytest.raises((ClientError, AssertionError)):
        _mark(aws, "e1")
    assert _status(aws, "e1") == env.STATUS_PENDING


def test_stock_moto_updates_a_missing_item_without_the_conditional_failure(aws: Aws) -> None:
    """DynamoDB: "If the WHERE clause of the UPDATE statement does not evaluate to true for
    any item in the DynamoDB table, ConditionalCheckFailedException is returned"."""
    single = f'UPDATE "{STATE_TABLE}" SET "status" = ? WHERE "event_id" = ?'
    with moto_patches.stock_moto():
        response = aws.dynamodb.batch_execute_statement(
            Statements=[{"Statement": single, "Parameters": [{"S": "sent"}, {"S": "gone"}]}]
        )
    assert "Error" not in response["Responses"][0]


def test_patched_moto_runs_the_multi_attribute_update_as_dynamodb_does(aws: Aws) -> None:
    _claim(aws, "e1")
    assert "Error" not in _mark(aws, "e1")
    item = aws.dynamodb.get_item(TableName=STATE_TABLE, Key={"event_id": {"S": "e1"}})["Item"]
    assert item["status"] == {"S": env.STATUS_SENT} and item["sent_at"] == {"N": "7"}
    # No item matches the WHERE clause: ConditionalCheckFailed, and nothing is created.
    assert _mark(aws, "never-claimed")["Error"]["Code"] == "ConditionalCheckFailed"
    assert _status(aws, "never-claimed") is None


# --- INSERT: the single-item claim on a standard queue ----------------------------------------

# DynamoDB developer guide, "PartiQL insert statements": INSERT INTO table VALUE item, a tuple
# whose attribute names are single-quoted; values may be parameters ("Running batch operations
# with PartiQL"). A quote inside a name doubles.
INSERT = f"INSERT INTO \"{BUSINESS_TABLE}\" VALUE {{'{ORDER_KEY}': ?, 'it''s': ?, 'lines': ?}}"
ROW: list[dict[str, Any]] = [{"S": "o1"}, {"N": "1"}, {"L": [{"M": {"sku": {"S": "pen"}}}]}]


def _insert(aws: Aws, parameters: list[dict[str, Any]]) -> dict[str, Any]:
    response = aws.dynamodb.batch_execute_statement(
        Statements=[
            {
                "Statement": INSERT,
                "Parameters": parameters,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        ]
    )
    answer: dict[str, Any] = response["Responses"][0]
    return answer


def test_stock_moto_cannot_run_a_parameterised_insert(aws: Aws) -> None:
    with moto_patches.stock_moto(), pytest.raises((ClientError, TypeError)):
        _insert(aws, ROW)
    assert aws.dynamodb.scan(TableName=BUSINESS_TABLE)["Items"] == []


def test_patched_moto_inserts_once_then_answers_duplicate_item(aws: Aws) -> None:
    assert "Error" not in _insert(aws, ROW)
    item = aws.dynamodb.get_item(TableName=BUSINESS_TABLE, Key={ORDER_KEY: {"S": "o1"}})["Item"]
    assert item == {ORDER_KEY: {"S": "o1"}, "it's": {"N": "1"}, "lines": ROW[2]}
    # "If the DynamoDB table already has an item with the same primary key as the primary key
    # of the item being inserted, DuplicateItemException is returned"; nothing is overwritten.
    again = _insert(aws, [{"S": "o1"}, {"N": "2"}, {"L": []}])
    assert again["Error"]["Code"] == "DuplicateItem"
    assert "Item" not in again["Error"]  # the runtime reads the row instead
    item = aws.dynamodb.get_item(TableName=BUSINESS_TABLE, Key={ORDER_KEY: {"S": "o1"}})["Item"]
    assert item["it's"] == {"N": "1"}


def test_patched_moto_refuses_an_insert_without_its_key_or_with_a_parameter_missing(
    aws: Aws,
) -> None:
    no_key = f"INSERT INTO \"{BUSINESS_TABLE}\" VALUE {{'amount': ?}}"
    response = aws.dynamodb.batch_execute_statement(
        Statements=[{"Statement": no_key, "Parameters": [{"N": "1"}]}]
    )
    assert response["Responses"][0]["Error"]["Code"] == "ValidationError"
    assert _insert(aws, ROW[:2])["Error"]["Code"] == "ValidationError"
    assert aws.dynamodb.scan(TableName=BUSINESS_TABLE)["Items"] == []
