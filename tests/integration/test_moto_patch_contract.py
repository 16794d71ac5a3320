"""The emulator's DynamoDB obeys the BatchExecuteStatement contract, and its SQS the
ReceiveMessage / DeleteMessage / visibility contract, it claims (local/moto_patches.py).

A lenient emulator hides defects (a batch of 26 statements that AWS refuses passes here) or
invents them (a whole call failing where AWS fails one statement). Each test states the AWS rule
it holds the patched moto to; the patch is what `make test`, the demo and the benchmarks run on.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.core.utils import unix_time_millis as unix_time_millis_real
from moto.dynamodb.models.table import Table
from moto.server import ThreadedMotoServer
from moto.sqs import models as sqs_models

from idempotent_messaging.local import moto_patches

TABLE = "patch-contract"


@pytest.fixture(scope="module")
def dynamodb() -> Iterator[Any]:
    """A threaded moto server (requests are served concurrently, as DynamoDB serves them)."""
    moto_patches.install()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    client = boto3.client(
        "dynamodb",
        endpoint_url=f"http://{host}:{port}",
        region_name="ap-northeast-1",
        config=Config(max_pool_connections=32, retries={"max_attempts": 1}),
    )
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield client
    server.stop()


def insert(key: str, value: str = "v") -> dict[str, Any]:
    return {
        "Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'k': ?, 'v': ?}}",
        "Parameters": [{"S": key}, {"S": value}],
    }


def update(key: str, value: str) -> dict[str, Any]:
    return {
        "Statement": f'UPDATE "{TABLE}" SET "v" = ? WHERE "k" = ?',
        "Parameters": [{"S": value}, {"S": key}],
    }


def test_at_most_25_statements_per_call(dynamodb: Any) -> None:
    """AWS: BatchExecuteStatement's Statements has 1 to 25 members; 26 fail the whole call."""
    answers = dynamodb.batch_execute_statement(
        Statements=[insert(f"limit-{i}") for i in range(25)]
    )["Responses"]
    assert len(answers) == 25 and not [a for a in answers if "Error" in a]
    with pytest.raises(ClientError) as refused:
        dynamodb.batch_execute_statement(Statements=[insert(f"over-{i}") for i in range(26)])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "25" in refused.value.response["Error"]["Message"]
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "over-0"}})


def test_a_statement_over_8192_characters_is_refused(dynamodb: Any) -> None:
    """AWS: BatchStatementRequest.Statement is at most 8,192 characters long."""
    padded = dict(insert("long"))
    padded["Statement"] = padded["Statement"] + " " * (8193 - len(padded["Statement"]))
    assert len(padded["Statement"]) == 8193
    with pytest.raises(ClientError) as refused:
        dynamodb.batch_execute_statement(Statements=[padded])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    exact = dict(insert("exact"))
    exact["Statement"] = exact["Statement"] + " " * (8192 - len(exact["Statement"]))
    assert "Error" not in dynamodb.batch_execute_statement(Statements=[exact])["Responses"][0]


def test_an_update_past_400_kb_fails_that_statement_alone(dynamodb: Any) -> None:
    """AWS: each statement of a batch gets its own answer; an item may not exceed 400 KB."""
    dynamodb.batch_execute_statement(Statements=[insert("big"), insert("small")])
    answers = dynamodb.batch_execute_statement(
        Statements=[update("big", "x" * (410 * 1024)), update("small", "changed")]
    )["Responses"]
    assert answers[0]["Error"]["Code"] == "ValidationError"
    assert "Error" not in answers[1]
    small = dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "small"}})["Item"]
    assert small["v"] == {"S": "changed"}
    big = dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "big"}})["Item"]
    assert big["v"] == {"S": "v"}


@pytest.fixture
def slow_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every item read takes 2 ms, so a check-then-write that is not atomic loses the race
    every time instead of once in a hundred runs (the test can fail deterministically)."""
    read = Table.get_item

    def slow(self: Table, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.002)
        return read(self, *args, **kwargs)

    monkeypatch.setattr(Table, "get_item", slow)


def race(*writes: Callable[[], str]) -> list[str]:
    """Run the writes at the same instant (one thread each); their outcomes, in any order."""
    start = threading.Barrier(len(writes))
    outcomes: list[str] = []

    def run(write: Callable[[], str]) -> None:
        start.wait()
        outcomes.append(write())

    threads = [threading.Thread(target=run, args=(w,)) for w in writes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def by_insert(dynamodb: Any, key: str) -> str:
    answer = dynamodb.batch_execute_statement(Statements=[insert(key)])
    return str(answer["Responses"][0].get("Error", {}).get("Code", "ok"))


def by_put(dynamodb: Any, key: str) -> str:
    try:
        dynamodb.put_item(
            TableName=TABLE,
            Item={"k": {"S": key}, "v": {"S": "put"}},
            ConditionExpression="attribute_not_exists(k)",
        )
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])
    return "ok"


@pytest.mark.usefixtures("slow_reads")
def test_concurrent_inserts_of_one_key_succeed_exactly_once(dynamodb: Any) -> None:
    """AWS: an INSERT of an existing key fails with DuplicateItem, atomically: of two
    concurrent INSERTs of one key exactly one succeeds (the claim's whole guarantee)."""
    for round_ in range(20):
        key = f"race-{round_}"
        outcomes = race(*[functools.partial(by_insert, dynamodb, key)] * 4)
        assert sorted(outcomes) == ["DuplicateItem"] * 3 + ["ok"], (round_, outcomes)


@pytest.mark.usefixtures("slow_reads")
def test_insert_and_conditional_put_of_one_key_are_mutually_atomic(dynamodb: Any) -> None:
    """The lock covers moto's own writes too: an INSERT racing a PutItem with
    attribute_not_exists on the same key leaves exactly one winner."""
    for round_ in range(20):
        key = f"mixed-{round_}"
        outcomes = race(
            functools.partial(by_insert, dynamodb, key), functools.partial(by_put, dynamodb, key)
        )
        assert outcomes.count("ok") == 1, (round_, outcomes)


# --- SQS: receive, delete and visibility at any depth (moto_patches item 11) --------------------
#
# Each test states the SQS rule it holds the patched receive to (SQS API reference:
# ReceiveMessage, DeleteMessage, ChangeMessageVisibility; developer guide: "Amazon SQS
# visibility timeout", "FIFO queue logic", "Using dead-letter queues", "Message retention").
# Time is the test's: the emulator's clock is moved forward instead of waiting.


class Clock:
    """SQS's clock for these tests: real time plus an offset the test moves forward."""

    def __init__(self) -> None:
        self.offset_ms = 0.0

    def __call__(self) -> float:
        return unix_time_millis_real() + self.offset_ms

    def advance(self, seconds: float) -> None:
        self.offset_ms += seconds * 1000


@pytest.fixture(scope="module")
def sqs() -> Iterator[Any]:
    moto_patches.install()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    client = boto3.client(
        "sqs",
        endpoint_url=f"http://{host}:{port}",
        region_name="ap-northeast-1",
        config=Config(max_pool_connections=32, retries={"max_attempts": 1}),
    )
    yield client
    server.stop()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(moto_patches, "unix_time_millis", fake)
    monkeypatch.setattr(sqs_models, "unix_time_millis", fake)
    return fake


def queue(sqs: Any, name: str, *, dlq_after: int | None = None, **attributes: str) -> str:
    if name.endswith(".fifo"):
        attributes = {"FifoQueue": "true", **attributes}
    if dlq_after is not None:
        dead = sqs.create_queue(
            QueueName=name.replace(".fifo", "-dlq.fifo")
            if name.endswith(".fifo")
            else f"{name}-dlq",
            Attributes={"FifoQueue": "true"} if name.endswith(".fifo") else {},
        )["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": dlq_after}
        )
    return str(sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"])


def send(sqs: Any, url: str, *bodies: str, group: str | None = None) -> None:
    for body in bodies:
        extra = {"MessageGroupId": group, "MessageDeduplicationId": body} if group else {}
        sqs.send_message(QueueUrl=url, MessageBody=body, **extra)


def receive(sqs: Any, url: str, count: int = 10) -> list[dict[str, Any]]:
    return list(
        sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=count, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
    )


def bodies(messages: list[dict[str, Any]]) -> list[str]:
    return [m["Body"] for m in messages]


def test_a_received_message_stays_invisible_for_its_visibility_timeout(
    sqs: Any, clock: Clock
) -> None:
    """Visibility timeout: a received message is not returned again until the timeout passes;
    each receive adds one to ApproximateReceiveCount."""
    url = queue(sqs, "sqs-visibility", VisibilityTimeout="30")
    send(sqs, url, "m")
    (first,) = receive(sqs, url)
    assert first["Attributes"]["ApproximateReceiveCount"] == "1"
    clock.advance(29)
    assert receive(sqs, url) == []
    clock.advance(2)
    (again,) = receive(sqs, url)
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    assert again["ReceiptHandle"] != first["ReceiptHandle"]


def test_change_message_visibility_zero_returns_it_at_once(sqs: Any, clock: Clock) -> None:
    url = queue(sqs, "sqs-release", VisibilityTimeout="30")
    send(sqs, url, "m")
    (message,) = receive(sqs, url)
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )
    assert bodies(receive(sqs, url)) == ["m"]


def test_visibility_timeouts_run_on_the_emulators_accelerated_clock(sqs: Any, clock: Clock) -> None:
    """set_visibility_scale(0.01): a 30 s visibility timeout ends after 0.3 s of queue time;
    other times (delays, retention) keep SQS's."""
    url = queue(sqs, "sqs-scaled", VisibilityTimeout="30")
    send(sqs, url, "m")
    moto_patches.set_visibility_scale(0.01)
    try:
        receive(sqs, url)
        clock.advance(0.2)
        assert receive(sqs, url) == []
        clock.advance(0.2)
        assert bodies(receive(sqs, url)) == ["m"]
    finally:
        moto_patches.set_visibility_scale(1)
    with pytest.raises(ValueError, match="visibility scale"):
        moto_patches.set_visibility_scale(0)


def test_delete_with_an_older_receipt_handle_succeeds_and_deletes_nothing(
    sqs: Any, clock: Clock
) -> None:
    """DeleteMessage: "you must provide the most recently received ReceiptHandle for the
    message (otherwise, the request succeeds, but the message will not be deleted)". A slow
    consumer whose message was redelivered must not delete it from under the new receiver."""
    url = queue(sqs, "sqs-stale", VisibilityTimeout="10")
    send(sqs, url, "m")
    (old,) = receive(sqs, url)
    clock.advance(11)
    (new,) = receive(sqs, url)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=old["ReceiptHandle"])  # succeeds
    clock.advance(11)
    (latest,) = receive(sqs, url)  # still there
    assert latest["MessageId"] == new["MessageId"] == old["MessageId"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=latest["ReceiptHandle"])
    clock.advance(11)
    assert receive(sqs, url) == []


def test_stock_moto_deletes_with_an_older_receipt_handle(sqs: Any, clock: Clock) -> None:
    """The gap the patch fills: stock moto deletes the message whatever receipt handle of it
    is given. When moto follows SQS here, this test fails and the patch can go."""
    url = queue(sqs, "sqs-stale-stock", VisibilityTimeout="10")
    send(sqs, url, "m")
    with moto_patches.stock_moto():
        (old,) = receive(sqs, url)
    clock.advance(11)
    receive(sqs, url)
    with moto_patches.stock_moto():
        sqs.delete_message(QueueUrl=url, ReceiptHandle=old["ReceiptHandle"])
    clock.advance(11)
    assert receive(sqs, url) == []


def test_a_fifo_group_with_a_message_in_flight_delivers_nothing_else(
    sqs: Any, clock: Clock
) -> None:
    """FIFO: while a message of a group is in flight, no other message of that group is
    returned; other groups are; within a group, order is kept."""
    url = queue(sqs, "sqs-groups.fifo", VisibilityTimeout="30")
    send(sqs, url, "a1", "a2", group="a")
    send(sqs, url, "b1", group="b")
    first = receive(sqs, url, 1)
    assert bodies(first) == ["a1"]
    assert bodies(receive(sqs, url)) == ["b1"]  # group a is locked by a1
    assert receive(sqs, url) == []
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first[0]["ReceiptHandle"])
    assert bodies(receive(sqs, url)) == ["a2"]


def test_one_receive_returns_a_groups_messages_in_order(sqs: Any, clock: Clock) -> None:
    url = queue(sqs, "sqs-order.fifo", VisibilityTimeout="30")
    send(sqs, url, "a1", "a2", "a3", group="a")
    assert bodies(receive(sqs, url)) == ["a1", "a2", "a3"]


@pytest.mark.parametrize("name", ["sqs-redrive", "sqs-redrive.fifo"])
def test_a_message_received_max_receive_count_times_moves_to_the_dlq(
    sqs: Any, clock: Clock, name: str
) -> None:
    """Redrive policy: after maxReceiveCount receives, the next receive moves the message to
    the dead-letter queue instead of returning it (standard and FIFO alike)."""
    url = queue(sqs, name, dlq_after=2, VisibilityTimeout="10")
    group = "g" if name.endswith(".fifo") else None
    send(sqs, url, "poison", group=group)
    for count in ("1", "2"):
        (message,) = receive(sqs, url)
        assert message["Attributes"]["ApproximateReceiveCount"] == count
        clock.advance(11)
    assert receive(sqs, url) == []
    dlq = url.replace(".fifo", "-dlq.fifo") if group else f"{url}-dlq"
    assert bodies(receive(sqs, dlq)) == ["poison"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"


def test_a_delayed_message_is_not_received_until_its_delay_passes(sqs: Any, clock: Clock) -> None:
    url = queue(sqs, "sqs-delay")
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=5)
    assert receive(sqs, url) == []
    clock.advance(6)
    assert bodies(receive(sqs, url)) == ["later"]


def test_a_message_past_the_retention_period_is_deleted_not_received(
    sqs: Any, clock: Clock
) -> None:
    """ "Amazon SQS automatically deletes messages that have been in a queue for more than the
    maximum message retention period" (MessageRetentionPeriod, 60 s here)."""
    url = queue(sqs, "sqs-retention", MessageRetentionPeriod="60")
    send(sqs, url, "old")
    clock.advance(61)
    assert receive(sqs, url) == []
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"


def test_concurrent_receivers_never_get_the_same_message(sqs: Any, clock: Clock) -> None:
    """The threaded server serves pollers at once: each message goes to one receiver within
    its visibility timeout."""
    url = queue(sqs, "sqs-concurrent", VisibilityTimeout="60")
    for start in range(0, 200, 10):
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "MessageBody": f"m{start + i}"} for i in range(10)],
        )
    got: list[str] = []
    lock = threading.Lock()

    def poll() -> None:
        while True:
            batch = receive(sqs, url)
            if not batch:
                return
            with lock:
                got.extend(bodies(batch))

    threads = [threading.Thread(target=poll) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == sorted(f"m{i}" for i in range(200))


def test_filling_a_deep_queue_counts_each_message_once_and_receiving_counts_none(
    sqs: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What made moto slow with depth: each message sent re-read every queue attribute,
    counting every message (O(n^2) to fill a queue), and each message received re-read them
    again (retention check). Filling 1,000 messages here counts each about once; a receive
    counts none; the counts stay moto's (visible, in flight)."""
    url = queue(sqs, "sqs-deep", VisibilityTimeout="30")
    counted: list[int] = []
    add = moto_patches._Counts.add

    def counting(self: moto_patches._Counts, message: Any, now: float) -> None:
        counted.append(1)
        add(self, message, now)

    monkeypatch.setattr(moto_patches._Counts, "add", counting)
    for start in range(0, 1000, 10):
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "MessageBody": f"m{start + i}"} for i in range(10)],
        )
    assert len(counted) <= 1000 + 10, len(counted)
    counted.clear()
    assert bodies(receive(sqs, url)) == [f"m{i}" for i in range(10)]
    assert counted == []
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "990"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "10"
    clock.advance(31)
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "1000"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
