"""Fault injection at botocore's HTTP stage (local.faults), the emulator's public failure seam.

Each fault acts where the real failure does, so botocore and the caller see what they see in
AWS: an error RESPONSE in the service's protocol (botocore parses it, its standard retry mode
retries throttles: "Retries in the AWS SDK for Python", botocore.retries.standard), answers
with failed entries inside a 200 (PublishBatch ``Failed``, BatchExecuteStatement per-statement
``Error``, BatchGetItem ``UnprocessedKeys``), a cancelled transaction's ``CancellationReasons``,
and process deaths before and after the service applied the call. Names are botocore's
operation names, checked when a fault is armed; a fault that never fires fails its run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from idempotent_messaging.local import faults as faults_module
from idempotent_messaging.local.faults import (
    FaultInjector,
    FaultNeverFired,
    SimulatedCrash,
    UnknownOperation,
    entry_mentions,
    mentions,
    resolve,
)
from idempotent_messaging.local.isolation import execution_environment
from idempotent_messaging.local.server import Emulator, start_emulator

pytestmark = pytest.mark.integration

TABLE = "faults"


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    emu = start_emulator(set_env=False)
    ddb = emu.client("dynamodb")
    ddb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        yield emu
    finally:
        emu.stop()


def item(key: str) -> dict[str, Any]:
    return {"k": {"S": key}}


def stored(emulator: Emulator, key: str) -> bool:
    return "Item" in emulator.client("dynamodb").get_item(TableName=TABLE, Key=item(key))


# --- names -------------------------------------------------------------------------------------


def test_names_are_botocore_operations_qualified_or_as_boto3_methods() -> None:
    """botocore's SNS model names the batch publish PublishBatch; the boto3 method is
    publish_batch. Every spelling a reader meets resolves to the same operation."""
    for name in ("PublishBatch", "sns:PublishBatch", "sns.PublishBatch", "publish_batch",
                 "sns.publish_batch"):  # fmt: skip
        assert resolve(name) == {("sns", "PublishBatch")}, name
    assert ("dynamodb", "TagResource") in resolve("TagResource")  # several services have it
    assert resolve("sns:TagResource") == {("sns", "TagResource")}


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("PublishBatches", "sns:PublishBatch"),
        ("sns:Publsh", "sns:Publish"),
        ("TransactWriteItem", "dynamodb:TransactWriteItems"),
        ("s3:PutObject", "not one the emulator serves"),
    ],
)
def test_an_operation_no_client_calls_is_refused_when_the_fault_is_armed(
    name: str, hint: str
) -> None:
    injector = FaultInjector()
    with pytest.raises(UnknownOperation) as refused:
        injector.crash_once(name)
    assert repr(name) in str(refused.value) and hint in str(refused.value)
    assert injector.armed == []


def test_a_fault_that_never_fired_fails_the_run_naming_it_and_the_calls_made(
    emulator: Emulator,
) -> None:
    """`crash_once("Publish")` is a valid SNS operation that the runtime never calls (it calls
    PublishBatch): the run that armed it must not pass as if it tested a crash."""
    sns = emulator.client("sns")
    topic = sns.create_topic(Name="never-fired")["TopicArn"]
    injector = FaultInjector()
    with pytest.raises(FaultNeverFired) as failed, injector.installed():
        injector.crash_once("Publish")
        sns.publish_batch(
            TopicArn=topic, PublishBatchRequestEntries=[{"Id": "1", "Message": "hello"}]
        )
    message = str(failed.value)
    assert "crash_before('Publish')" in message and "test_local_faults.py" in message
    assert "sns.PublishBatch x1" in message


# --- errors botocore retries -------------------------------------------------------------------


def test_a_throttle_is_an_error_response_botocore_retries(emulator: Emulator) -> None:
    """Two throttled attempts, then the third goes through: the caller sees success after
    botocore's own retries (RetryAttempts 2), as with a real throttle."""
    ddb = emulator.client("dynamodb", retries={"mode": "standard", "total_max_attempts": 3})
    injector = FaultInjector(retry_sleep_scale=0.01)
    with injector.installed():
        throttle = injector.throttle("PutItem", times=2)
        answer = ddb.put_item(TableName=TABLE, Item=item("retried"))
    assert throttle.fired == 2
    assert answer["ResponseMetadata"]["RetryAttempts"] == 2
    assert stored(emulator, "retried")


def test_a_lasting_throttle_outlasts_botocores_retries_with_the_services_own_code(
    emulator: Emulator,
) -> None:
    """DynamoDB's model declares ThrottlingException for PutItem (HTTP 400, retryable as a
    throttle); SNS's its own; the code reaches the caller after 3 attempts."""
    ddb = emulator.client("dynamodb", retries={"mode": "standard", "total_max_attempts": 3})
    injector = FaultInjector(retry_sleep_scale=0.01)
    with injector.installed():
        throttle = injector.throttle("dynamodb:PutItem")
        with pytest.raises(ClientError) as error:
            ddb.put_item(TableName=TABLE, Item=item("throttled"))
    assert throttle.fired == 3
    response = error.value.response
    assert response["Error"]["Code"] in faults_module.wire.THROTTLING_CODES
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["ResponseMetadata"]["RetryAttempts"] == 2
    assert not stored(emulator, "throttled")


def test_retry_sleeps_run_on_the_injectors_clock(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    ddb = emulator.client("dynamodb", retries={"mode": "standard", "total_max_attempts": 3})
    injector = FaultInjector(retry_sleep_scale=0.001)
    with injector.installed():
        injector.throttle("PutItem", times=2)
        ddb.put_item(TableName=TABLE, Item=item("scaled"))
    # botocore's throttle backoff is up to 1 s, then 2 s: scaled by 0.001.
    assert len(slept) == 2 and all(0 <= s <= 0.002 for s in slept), slept


def test_an_error_code_gets_its_modeled_class_and_http_status(emulator: Emulator) -> None:
    """The answer is written as the service writes it (moto's response serializer): SQS's
    JSON keeps the query-compatible header, so botocore raises the modeled exception class;
    EventBridge Scheduler's model gives ThrottlingException HTTP 429."""
    sqs, scheduler = emulator.client("sqs"), emulator.client("scheduler")
    url = sqs.create_queue(QueueName="faults-error")["QueueUrl"]
    injector = FaultInjector(retry_sleep_scale=0.01)
    with injector.installed():
        injector.error("GetQueueAttributes", code="QueueDoesNotExist")
        injector.throttle("scheduler:GetSchedule")
        with pytest.raises(sqs.exceptions.QueueDoesNotExist) as missing:
            sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
        with pytest.raises(ClientError) as throttled:
            scheduler.get_schedule(Name="any")
    assert missing.value.response["Error"]["QueryErrorCode"] == "QueueDoesNotExist"
    assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert throttled.value.response["Error"]["Code"] == "ThrottlingException"
    assert throttled.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429


# --- process deaths ---------------------------------------------------------------------------


@pytest.mark.parametrize("after", [False, True])
def test_a_death_before_the_call_applies_nothing_and_after_it_everything(
    emulator: Emulator, after: bool
) -> None:
    ddb = emulator.client("dynamodb")
    key = f"death-after-{after}"
    injector = FaultInjector()
    with injector.installed():
        injector.crash_once("PutItem", after=after, matcher=mentions(key))
        with pytest.raises(SimulatedCrash):
            ddb.put_item(TableName=TABLE, Item=item(key))
    assert stored(emulator, key) is after
    assert not issubclass(SimulatedCrash, Exception)  # no `except Exception` swallows it


# --- failures inside a 200 answer, and a cancelled transaction ---------------------------------


def test_publish_batch_entries_fail_one_by_one_with_the_models_sender_fault(
    emulator: Emulator,
) -> None:
    """PublishBatch answers 200 with the entries that failed in ``Failed``; KMSThrottling is
    modeled with senderFault true. The failed entry is not delivered, the others are."""
    sns, sqs = emulator.client("sns"), emulator.client("sqs")
    topic = sns.create_topic(Name="entries")["TopicArn"]
    queue = sqs.create_queue(QueueName="entries-subscriber")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=arn["QueueArn"],
        Attributes={"RawMessageDelivery": "true"},
    )
    injector = FaultInjector()
    with injector.installed():
        injector.fail_entries("PublishBatch", code="KMSThrottling", entry=entry_mentions("two"))
        answer = sns.publish_batch(
            TopicArn=topic,
            PublishBatchRequestEntries=[
                {"Id": str(i), "Message": text} for i, text in enumerate(("one", "two", "three"))
            ],
        )
    assert [s["Id"] for s in answer["Successful"]] == ["0", "2"]
    (failed,) = answer["Failed"]
    assert (failed["Id"], failed["Code"], failed["SenderFault"]) == ("1", "KMSThrottling", True)
    bodies = [
        m["Body"] for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    ]
    assert sorted(bodies) == ["one", "three"]


def test_a_statement_of_a_batch_fails_alone_and_the_others_apply(emulator: Emulator) -> None:
    ddb = emulator.client("dynamodb")
    statements = [
        {
            "Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'k': ?}}",
            "Parameters": [{"S": f"statement-{i}"}],
        }
        for i in range(3)
    ]
    injector = FaultInjector()
    with injector.installed():
        injector.fail_entries(
            "BatchExecuteStatement",
            code="ProvisionedThroughputExceeded",
            entry=entry_mentions("statement-1"),
        )
        answer = ddb.batch_execute_statement(Statements=statements)["Responses"]
    assert ["Error" in a for a in answer] == [False, True, False]
    assert answer[1]["Error"]["Code"] == "ProvisionedThroughputExceeded"
    assert [stored(emulator, f"statement-{i}") for i in range(3)] == [True, False, True]


def test_batch_get_item_leaves_the_chosen_keys_unprocessed(emulator: Emulator) -> None:
    ddb = emulator.client("dynamodb")
    for key in ("read-a", "read-b"):
        ddb.put_item(TableName=TABLE, Item=item(key))
    injector = FaultInjector()
    with injector.installed():
        injector.fail_entries("BatchGetItem", entry=entry_mentions("read-b"))
        answer = ddb.batch_get_item(
            RequestItems={TABLE: {"Keys": [item("read-a"), item("read-b")], "ConsistentRead": True}}
        )
    assert [i["k"]["S"] for i in answer["Responses"][TABLE]] == ["read-a"]
    assert answer["UnprocessedKeys"] == {TABLE: {"Keys": [item("read-b")], "ConsistentRead": True}}


def test_a_transaction_is_cancelled_with_a_reason_per_item_and_applies_nothing(
    emulator: Emulator,
) -> None:
    ddb = emulator.client("dynamodb")
    puts = [{"Put": {"TableName": TABLE, "Item": item(f"tx-{i}")}} for i in range(2)]
    injector = FaultInjector()
    with injector.installed():
        injector.fail_entries(
            "TransactWriteItems", code="TransactionConflict", entry=entry_mentions("tx-1")
        )
        with pytest.raises(ClientError) as cancelled:
            ddb.transact_write_items(TransactItems=puts)
    response = cancelled.value.response
    assert response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in response["CancellationReasons"]] == ["None", "TransactionConflict"]
    assert not stored(emulator, "tx-0") and not stored(emulator, "tx-1")


def test_send_message_batch_entries_fail_one_by_one(emulator: Emulator) -> None:
    sqs = emulator.client("sqs")
    url = sqs.create_queue(QueueName="faults-send")["QueueUrl"]
    injector = FaultInjector()
    with injector.installed():
        injector.fail_entries("SendMessageBatch", code="InternalError", entry=entry_mentions("b"))
        answer = sqs.send_message_batch(
            QueueUrl=url,
            Entries=[{"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}],
        )
    assert [s["Id"] for s in answer["Successful"]] == ["a"]
    assert [(f["Id"], f["Code"], f["SenderFault"]) for f in answer["Failed"]] == [
        ("b", "InternalError", False)
    ]


def test_entries_of_a_call_without_entries_are_refused_when_armed() -> None:
    with pytest.raises(UnknownOperation, match="not a call whose entries fail one by one"):
        FaultInjector().fail_entries("PutItem")


# --- scope -------------------------------------------------------------------------------------


def test_a_functions_only_fault_spares_the_calls_outside_an_invocation(emulator: Emulator) -> None:
    ddb = emulator.client("dynamodb")
    injector = FaultInjector()
    with injector.installed():
        fault = injector.crash_once("PutItem", functions_only=True)
        ddb.put_item(TableName=TABLE, Item=item("outside"))  # the test's own call: spared
        with (
            execution_environment({"AWS_LAMBDA_FUNCTION_NAME": "fn"}),
            pytest.raises(SimulatedCrash),
        ):
            ddb.put_item(TableName=TABLE, Item=item("inside"))
    assert fault.fired == 1
    assert stored(emulator, "outside") and not stored(emulator, "inside")


def test_faults_act_at_the_http_stage_under_mock_aws_too() -> None:
    """moto's in-process mock answers at botocore's before-send (its BotocoreStubber): the
    injector acts there when no server is involved."""
    import boto3

    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="ap-northeast-1")
        ddb.create_table(
            TableName="in-process",
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        injector = FaultInjector(retry_sleep_scale=0.01)
        with injector.installed():
            throttle = injector.throttle("PutItem", times=1)
            answer = ddb.put_item(TableName="in-process", Item=item("x"))
        assert throttle.fired == 1 and answer["ResponseMetadata"]["RetryAttempts"] == 1
        assert json.dumps(ddb.get_item(TableName="in-process", Key=item("x"))["Item"])
