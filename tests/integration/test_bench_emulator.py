"""The benchmark's faster TransactWriteItems backup keeps moto's all-or-nothing semantics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from bench import emulator_fixes

pytestmark = pytest.mark.integration


@pytest.fixture(params=["fast", "stock"])
def ddb(request: pytest.FixtureRequest, aws_env: dict[str, str]) -> Iterator[Any]:
    """The same assertions hold with moto's own backup and with the benchmark's."""
    with mock_aws():
        client = boto3.client("dynamodb")
        client.create_table(
            TableName="h",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.create_table(
            TableName="hr",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="h", Item={"pk": {"S": "a"}, "n": {"N": "1"}})
        client.put_item(TableName="h", Item={"pk": {"S": "gone"}})
        client.put_item(TableName="hr", Item={"pk": {"S": "t"}, "sk": {"S": "1"}})
        if request.param == "fast":
            with emulator_fixes.fast_transactions():
                yield client
        else:
            yield client


def _state(ddb: Any) -> dict[str, Any]:
    return {
        table: sorted(
            (str(sorted((k, str(v)) for k, v in item.items())))
            for item in ddb.scan(TableName=table)["Items"]
        )
        for table in ("h", "hr")
    }


def test_a_cancelled_transaction_leaves_every_table_unchanged(ddb: Any) -> None:
    before = _state(ddb)
    with pytest.raises(ClientError) as raised:
        ddb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": "h",
                        "Key": {"pk": {"S": "a"}},
                        "UpdateExpression": "SET n = :v",
                        "ExpressionAttributeValues": {":v": {"N": "2"}},
                    }
                },
                {"Put": {"TableName": "h", "Item": {"pk": {"S": "new"}}}},
                {"Delete": {"TableName": "h", "Key": {"pk": {"S": "gone"}}}},
                {"Put": {"TableName": "hr", "Item": {"pk": {"S": "t"}, "sk": {"S": "2"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "hr",
                        "Key": {"pk": {"S": "t"}, "sk": {"S": "1"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert _state(ddb) == before


def test_a_committed_transaction_applies_every_write(ddb: Any) -> None:
    ddb.transact_write_items(
        TransactItems=[
            {
                "Update": {
                    "TableName": "h",
                    "Key": {"pk": {"S": "a"}},
                    "UpdateExpression": "SET n = :v",
                    "ExpressionAttributeValues": {":v": {"N": "2"}},
                }
            },
            {"Put": {"TableName": "hr", "Item": {"pk": {"S": "t"}, "sk": {"S": "2"}}}},
        ]
    )
    assert ddb.get_item(TableName="h", Key={"pk": {"S": "a"}})["Item"]["n"] == {"N": "2"}
    assert ddb.scan(TableName="hr")["Count"] == 2


def test_the_fix_is_removed_again_after_use() -> None:
    import moto.dynamodb.models as models

    with emulator_fixes.fast_transactions():
        assert models.copy is not __import__("copy")
    assert models.copy is __import__("copy")


@pytest.mark.parametrize("order", ["fix, then emulator patches", "emulator patches, then fix"])
def test_the_fast_backup_and_the_emulator_s_write_lock_compose_in_either_order(
    order: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark applies its fix, then starts the emulator (which installs moto_patches):
    each must wrap what it finds, or the later one silently drops the earlier (the bench ran
    with moto's per-item table copies again, and the lock is what makes a write atomic)."""
    from moto.dynamodb.models import DynamoDBBackend

    from idempotent_messaging.local import moto_patches

    seen: list[tuple[bool, bool]] = []

    def stock(self: Any, transact_items: list[dict[str, Any]]) -> None:
        # Inside moto: is the write lock held, and is the fast copy's state set?
        held = moto_patches._write_lock._is_owned()  # type: ignore[attr-defined]
        seen.append((held, emulator_fixes._state.transact_items is not None))

    was_installed = moto_patches._installed
    moto_patches.uninstall()
    monkeypatch.setattr(DynamoDBBackend, "transact_write_items", stock)
    try:
        if order.startswith("fix"):
            emulator_fixes.fast_transaction_backup()
            moto_patches.install()
        else:
            moto_patches.install()
            emulator_fixes.fast_transaction_backup()
        DynamoDBBackend.transact_write_items(object(), [{"Put": {}}])  # type: ignore[arg-type]
    finally:
        if order.startswith("fix"):
            moto_patches.uninstall()
            emulator_fixes.restore()
        else:
            emulator_fixes.restore()
            moto_patches.uninstall()
        assert DynamoDBBackend.transact_write_items is stock
    monkeypatch.undo()
    if was_installed:
        moto_patches.install()
    assert seen == [(True, True)]
