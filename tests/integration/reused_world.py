"""One moto world per property TEST, emptied before each hypothesis example.

Starting moto and creating the world (tables, topic, queues, a subscription, three clients)
was most of an example's cost, ~80 ms of ~130. A test now creates its world once; each
example starts from `emptied(world)`: every item of every table deleted and every queue
drained through the AWS API (what an example left behind) and the world's call records reset,
so an example never sees another's claims, rows or messages (`tests/integration/
test_runtime_properties.py` proves the emptied world is indistinguishable from a new one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from moto import mock_aws

from tests.integration.test_runtime_world import Aws, scan

_KEYS: dict[tuple[int, str], list[str]] = {}


def _keys(client: Any, table: str) -> list[str]:
    """The table's key attributes (read once per client and table)."""
    key = (id(client), table)
    if key not in _KEYS:
        schema = client.describe_table(TableName=table)["Table"]["KeySchema"]
        _KEYS[key] = [k["AttributeName"] for k in schema]
    return _KEYS[key]


def emptied(world: Aws) -> Aws:
    """`world` with no item in any table, no message in any queue and no call recorded."""
    dynamodb = world.dynamodb
    for table in dynamodb.list_tables()["TableNames"]:
        keys = _keys(dynamodb, table)
        items = scan(dynamodb, table)
        for start in range(0, len(items), 25):
            unprocessed = dynamodb.batch_write_item(
                RequestItems={
                    table: [
                        {"DeleteRequest": {"Key": {k: item[k] for k in keys}}}
                        for item in items[start : start + 25]
                    ]
                }
            )["UnprocessedItems"]
            assert unprocessed == {}, f"{table} not emptied: {unprocessed}"
    for url in world.sqs.list_queues().get("QueueUrls", []):
        _drain(world.sqs, url)
    world.reset_counts()
    return world


def _drain(sqs: Any, url: str) -> None:
    """Receive and delete every message (SQS allows one PurgeQueue a minute per queue)."""
    while got := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
            ],
        )
    hidden = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]["ApproximateNumberOfMessagesNotVisible"]
    assert hidden == "0", f"{url}: {hidden} message(s) in flight cannot be emptied"


@contextmanager
def reused_world(create: Callable[[], Aws]) -> Iterator[Callable[[], Aws]]:
    """Inside one moto mock: a callable giving the world `create()` made, emptied."""
    with mock_aws():
        world = create()
        yield lambda: emptied(world)
