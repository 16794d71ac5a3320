"""The call recorder describes every call in billing units from what went on the wire.

Runs over moto's server on 127.0.0.1, as the benchmark does, so the request is the serialized
HTTP body whatever layer built it (client, boto3 resource) and retried throttles are real.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import boto3
import pytest
from botocore.exceptions import ClientError

from bench import counting
from bench.usage import aggregate
from idempotent_messaging.local.server import Emulator, start_emulator

pytestmark = pytest.mark.integration


@pytest.fixture
def emulator(aws_env: dict[str, str]) -> Iterator[Emulator]:
    saved = dict(os.environ)
    counting.install()
    emu = start_emulator()
    try:
        counting.exclude(emu.client("dynamodb")).create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield emu
    finally:
        emu.stop()
        counting.uninstall()
        os.environ.clear()
        os.environ.update(saved)


def _claim(key: str) -> dict[str, object]:
    return {
        "Put": {
            "TableName": "t",
            "Item": {"k": {"S": key}},
            "ConditionExpression": "attribute_not_exists(k)",
        }
    }


def test_transactions_cost_two_units_per_item_and_cancellations_are_flagged(
    emulator: Emulator,
) -> None:
    ddb = boto3.client("dynamodb")
    with counting.recording() as recorder:
        ddb.transact_write_items(TransactItems=[_claim("a"), _claim("b")])
        with pytest.raises(ClientError, match="TransactionCanceledException"):
            ddb.transact_write_items(TransactItems=[_claim("a"), _claim("c")])
    usage = aggregate(recorder.usage)["dynamodb.TransactWriteItems"]
    # Two transactions of 2 small items at 2 units per transactional item.
    assert usage["calls"] == 2 and usage["items"] == 4 and usage["failed_calls"] == 1
    assert usage["write_units"] == 8 and usage["cancelled_transaction_write_units"] == 4


def test_sizes_come_from_the_wire_request_also_through_a_boto3_resource(
    emulator: Emulator,
) -> None:
    table = boto3.resource("dynamodb").Table("t")
    ddb = boto3.client("dynamodb")
    with counting.recording() as recorder:
        # "k" + "big" + "blob" + 1,500 bytes: over 1 KB, so 2 write units.
        table.put_item(Item={"k": "big", "blob": "x" * 1500})
        ddb.get_item(TableName="t", Key={"k": {"S": "big"}}, ConsistentRead=True)
        ddb.get_item(TableName="t", Key={"k": {"S": "missing"}})
        # The resource deserializes the response in place: the recorder kept the wire body.
        assert table.get_item(Key={"k": "big"})["Item"]["blob"] == "x" * 1500
    usage = aggregate(recorder.usage)
    assert usage["dynamodb.PutItem"]["write_units"] == 2
    # Strongly consistent read of a < 4 KB item: 1; a missing item, eventually consistent:
    # 0.5; the resource's read of the same item, eventually consistent: 0.5.
    assert usage["dynamodb.GetItem"]["read_units"] == 2.0


def test_sns_batches_bill_per_64_kb_and_a_retried_throttle_bills_once(
    emulator: Emulator,
) -> None:
    topic = counting.exclude(emulator.client("sns")).create_topic(Name="n")["TopicArn"]
    sns = boto3.client("sns")
    entries = [{"Id": str(i), "Message": f"m{i}"} for i in range(3)]
    with counting.recording() as recorder:
        sns.publish_batch(TopicArn=topic, PublishBatchRequestEntries=entries)
    # One request for the batch: its 3 entries are far below 64 KB (SNS developer guide,
    # "Amazon SNS message batching").
    assert aggregate(recorder.usage)["sns.PublishBatch"]["billed_requests"] == 1

    ddb = boto3.client("dynamodb")
    # Throttle about half the attempts: botocore retries, the one call is billed once.
    with counting.recording(throttle_rate=0.5, seed=1) as recorder:
        for key in ("p", "q", "r", "s"):
            ddb.put_item(TableName="t", Item={"k": {"S": key}})
    assert recorder.injected > 0
    usage = aggregate(recorder.usage)["dynamodb.PutItem"]
    assert usage["calls"] == 4 and usage["write_units"] == 4
