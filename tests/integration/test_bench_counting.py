"""The call-counting harness counts every call on every client, and its throttles are real.

Runs against moto's server on 127.0.0.1 (the benchmark's setting): the transport cross-check
and the injected throttling responses only mean something over botocore's HTTP stack.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from bench import counting
from bench.dispatch import QueueSink
from idempotent_messaging.local.server import Emulator, start_emulator

pytestmark = pytest.mark.integration


@pytest.fixture
def emulator(aws_env: dict[str, str]) -> Iterator[Emulator]:
    saved = dict(os.environ)
    counting.install()
    emu = start_emulator()
    try:
        yield emu
    finally:
        emu.stop()
        counting.uninstall()
        os.environ.clear()
        os.environ.update(saved)


def _table(emu: Emulator, name: str = "t") -> None:
    counting.exclude(emu.client("dynamodb")).create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def test_every_client_is_counted_per_operation_and_per_http_attempt(emulator: Emulator) -> None:
    _table(emulator)
    ddb = boto3.client("dynamodb")
    # A client from its own session, as Powertools' persistence layer builds one.
    other = boto3.session.Session().client("dynamodb")
    with counting.recording() as recorder:
        ddb.put_item(TableName="t", Item={"k": {"S": "1"}})
        other.put_item(TableName="t", Item={"k": {"S": "2"}})
        ddb.get_item(TableName="t", Key={"k": {"S": "1"}})
    assert recorder.calls == {"dynamodb.PutItem": 2, "dynamodb.GetItem": 1}
    assert recorder.total_attempts == 3
    assert recorder.wire_requests == 3
    recorder.check_complete()


def test_a_call_that_bypasses_the_hooks_is_detected(emulator: Emulator) -> None:
    _table(emulator)
    hidden = counting.exclude(boto3.client("dynamodb"))
    with counting.recording() as recorder:
        hidden.put_item(TableName="t", Item={"k": {"S": "1"}})
    assert recorder.total_calls == 0
    with pytest.raises(RuntimeError, match="missed a client"):
        recorder.check_complete()


def test_calls_outside_a_recording_are_not_counted(emulator: Emulator) -> None:
    _table(emulator)
    ddb = boto3.client("dynamodb")
    ddb.put_item(TableName="t", Item={"k": {"S": "0"}})
    with counting.recording() as recorder:
        ddb.put_item(TableName="t", Item={"k": {"S": "1"}})
    assert recorder.total_calls == 1


@pytest.mark.parametrize(
    "service, call, code",
    [
        ("dynamodb", lambda c: c.describe_table(TableName="t"), "ThrottlingException"),
        ("sns", lambda c: c.list_topics(), "Throttling"),
        ("sqs", lambda c: c.list_queues(), "ThrottlingException"),
    ],
)
def test_injected_throttles_are_throttling_errors_in_each_wire_protocol(
    emulator: Emulator, service: str, call: Any, code: str
) -> None:
    _table(emulator)
    client = boto3.client(
        service, config=Config(retries={"mode": "standard", "total_max_attempts": 1})
    )
    failures = []
    with counting.recording(throttle_rate=0.9, seed=0) as recorder:
        for _ in range(10):
            try:
                call(client)
            except ClientError as error:
                failures.append(error.response["Error"]["Code"])
    assert failures == [code] * 9
    assert recorder.injected == 9
    assert recorder.wire_requests == 1  # only the unthrottled attempt reached the emulator
    recorder.check_complete()


def test_botocore_retries_injected_throttles_until_the_call_succeeds(emulator: Emulator) -> None:
    _table(emulator)
    ddb = boto3.client("dynamodb", config=Config(retries={"mode": "standard", "max_attempts": 10}))
    with counting.recording(throttle_rate=0.3, seed=2) as recorder:
        for i in range(7):
            ddb.put_item(TableName="t", Item={"k": {"S": str(i)}})
    assert recorder.calls == {"dynamodb.PutItem": 7}
    assert recorder.total_attempts == 7 + recorder.injected
    assert recorder.injected == 3  # 30 % of the 10 attempts
    recorder.check_complete()
    scan = counting.exclude(emulator.client("dynamodb")).scan(TableName="t")
    assert scan["Count"] == 7


def test_the_notification_ledger_holds_only_messages_sns_accepted(emulator: Emulator) -> None:
    sns = boto3.client("sns")
    topic = counting.exclude(emulator.client("sns")).create_topic(Name="n")["TopicArn"]
    with counting.recording() as recorder:
        sns.publish(TopicArn=topic, Message="evt-1")
        sns.publish_batch(
            TopicArn=topic,
            PublishBatchRequestEntries=[
                {"Id": "a", "Message": "evt-2"},
                {"Id": "b", "Message": "evt-3"},
            ],
        )
        with pytest.raises(ClientError):
            sns.publish(TopicArn=topic + "-missing", Message="evt-4")
    assert recorder.notifications == ["evt-1", "evt-2", "evt-3"]


def test_the_queue_sink_counts_accepted_messages_without_storing_them(emulator: Emulator) -> None:
    admin = counting.exclude(emulator.client("sqs"))
    url = admin.create_queue(QueueName="sink.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    other = admin.create_queue(QueueName="kept")["QueueUrl"]
    with QueueSink("sink.fifo").installed() as sink:
        admin.send_message_batch(
            QueueUrl=url,
            Entries=[
                {
                    "Id": str(i),
                    "MessageBody": "x",
                    "MessageGroupId": "g",
                    "MessageDeduplicationId": f"d{i}",
                }
                for i in range(10)
            ],
        )
        admin.send_message(QueueUrl=other, MessageBody="y")
        with pytest.raises(ClientError):  # moto still validates: FIFO needs a group id
            admin.send_message(QueueUrl=url, MessageBody="z")
    assert sink.accepted == 10
    depth = admin.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    assert depth["Attributes"]["ApproximateNumberOfMessages"] == "0"
    kept = admin.get_queue_attributes(
        QueueUrl=other, AttributeNames=["ApproximateNumberOfMessages"]
    )
    assert kept["Attributes"]["ApproximateNumberOfMessages"] == "1"
