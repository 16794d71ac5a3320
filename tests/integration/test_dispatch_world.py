"""A moto world for the monthly fan-out (dispatcher + FIFO work queue + charge consumer), built
from the schema constants the component uses, plus the harness that drives it like Lambda does.

The helpers are imported by the other test_dispatch_*/test_charges_* modules; the tests here
prove the harness itself behaves like SQS -> Lambda (else the end-to-end claims prove nothing).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto import mock_aws

from idempotent_messaging.dispatch import app
from idempotent_messaging.dispatch import env as denv
from idempotent_messaging.runtime import env as renv
from idempotent_messaging.runtime.clients import clients_from_env, reset_clients

pytestmark = pytest.mark.integration

REGION = "ap-northeast-1"
ACCOUNT = "123456789012"
BILLING = "billing_accounts"
RUNS = "monthly_charge_runs"
WORK = "monthly-charge-work.fifo"
WORK_DLQ = "monthly-charge-work-dlq.fifo"
CONTROL = "monthly-charge-control.fifo"
STATE = "monthly-charge-state"
LEDGER = "monthly-charge-ledger"
TOPIC = "monthly-charge-notifications"
TZ = "Asia/Tokyo"


class Crash(BaseException):
    """A process death: ``except Exception`` cannot swallow it."""


@dataclass
class FakeContext:
    """The Lambda context: remaining time comes from a callable so tests can shrink it."""

    remaining: Callable[[], int] = lambda: 900_000
    function_name: str = "monthly-charge"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:monthly-charge"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining()


class PageBudget:
    """Remaining time that is plentiful for ``checks`` budget checks (after the one reading
    the invocation starts with), then below any reserve."""

    def __init__(self, checks: int) -> None:
        self._left = checks + 1
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            self._left -= 1
            return 900_000 if self._left >= 0 else 0


def account(tenant: str, employee: str, amount: int = 1000, active: bool = True) -> dict[str, Any]:
    return {
        denv.BILLING_HASH_KEY: {"S": tenant},
        denv.BILLING_RANGE_KEY: {"S": employee},
        "amount": {"N": str(amount)},
        "currency": {"S": "JPY"},
        "active": {"BOOL": active},
    }


def accounts(tenants: int, employees: int) -> list[dict[str, Any]]:
    return [
        account(f"t{t:03d}", f"e{e:05d}", amount=1000 + e)
        for t in range(tenants)
        for e in range(employees)
    ]


def lambda_record(message: dict[str, Any], queue: str) -> dict[str, Any]:
    """An SQS message as Lambda hands it to a function."""
    attributes = message.get("Attributes", {})
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {
            "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
            "SentTimestamp": attributes.get("SentTimestamp", "0"),
            **{
                k: attributes[k]
                for k in ("MessageGroupId", "MessageDeduplicationId", "SequenceNumber")
                if k in attributes
            },
        },
        "messageAttributes": {},
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}",
        "awsRegion": REGION,
    }


@dataclass
class World:
    dynamodb: Any
    sqs: Any
    sns: Any
    s3: Any
    work_url: str
    work_dlq_url: str
    control_url: str
    topic_arn: str
    notifications_url: str
    monkeypatch: pytest.MonkeyPatch
    batches: list[list[str]] = field(default_factory=list)

    # --- environment of the two functions (distinct variable names: both may be set) -------
    def dispatcher_env(self, **overrides: str) -> None:
        values = {
            denv.ITEM_SOURCE: denv.SOURCE_DYNAMODB,
            denv.BILLING_ACCOUNTS_TABLE: BILLING,
            denv.RUNS_TABLE: RUNS,
            denv.WORK_QUEUE_URL: self.work_url,
            denv.CONTROL_QUEUE_URL: self.control_url,
            denv.SCHEDULE_TIMEZONE: TZ,
            denv.SCAN_SEGMENTS: "4",
            denv.SCAN_PAGE_SIZE: "100",
            denv.TIME_RESERVE_MS: "1000",
        }
        values.update(overrides)
        for name, value in values.items():
            self.monkeypatch.setenv(name, value)

    def consumer_env(self) -> None:
        values = {
            renv.STATE_TABLE: STATE,
            renv.STATE_KEY_LAYOUT: renv.LAYOUT_TENANT,
            renv.BUSINESS_TABLE: LEDGER,
            renv.NOTIFICATION_TOPIC_ARN: self.topic_arn,
            renv.DLQ_URL: self.work_dlq_url,
            renv.SOURCE_QUEUE_FIFO: "true",
            renv.POWERTOOLS_SERVICE_NAME: "monthly-charge-consumer",
        }
        for name, value in values.items():
            self.monkeypatch.setenv(name, value)

    # --- seeding -----------------------------------------------------------------------------
    def seed(self, items: list[dict[str, Any]]) -> None:
        for start in range(0, len(items), 25):
            chunk = items[start : start + 25]
            self.dynamodb.batch_write_item(
                RequestItems={BILLING: [{"PutRequest": {"Item": item}} for item in chunk]}
            )

    # --- driving the dispatcher ----------------------------------------------------------------
    def dispatch(self, event: dict[str, Any], remaining: Callable[[], int] | None = None) -> Any:
        context = FakeContext(remaining=remaining) if remaining else FakeContext()
        return app.handler(event, context)

    def drain_control(self, remaining: Callable[[], int] | None = None) -> int:
        """Deliver control messages to the dispatcher until the control queue is empty.
        Returns the number of invocations."""
        invocations = 0
        while True:
            got = self.sqs.receive_message(
                QueueUrl=self.control_url,
                MaxNumberOfMessages=1,  # the component's mapping: batch size 1
                AttributeNames=["All"],
                VisibilityTimeout=60,
            ).get("Messages", [])
            if not got:
                return invocations
            invocations += 1
            message = got[0]
            response = self.dispatch(
                {"Records": [lambda_record(message, CONTROL)]}, remaining=remaining
            )
            failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
            if message["MessageId"] in failed:
                raise AssertionError(f"continuation failed: {message['Body']}")
            self.sqs.delete_message(
                QueueUrl=self.control_url, ReceiptHandle=message["ReceiptHandle"]
            )

    # --- driving the consumer ------------------------------------------------------------------
    def drain_work(
        self,
        handler: Callable[[dict[str, Any], Any], dict[str, Any]],
        max_rounds: int = 10_000,
    ) -> int:
        """Lambda's SQS poller: batches of <= 10 from the FIFO queue, partial batch responses
        honoured (successes deleted, failures made visible again, as after the visibility
        timeout); a Crash leaves the whole batch to reappear. Returns the number of batches."""
        rounds = 0
        while rounds < max_rounds:
            got = self.sqs.receive_message(
                QueueUrl=self.work_url,
                MaxNumberOfMessages=10,
                AttributeNames=["All"],
                VisibilityTimeout=300,
            ).get("Messages", [])
            if not got:
                return rounds
            rounds += 1
            self.batches.append([m["MessageId"] for m in got])
            event = {"Records": [lambda_record(m, WORK) for m in got]}
            try:
                response = handler(event, FakeContext(function_name="monthly-charge-consumer"))
                failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
            except Crash:
                failed = {m["MessageId"] for m in got}
            done = [m for m in got if m["MessageId"] not in failed]
            retry = [m for m in got if m["MessageId"] in failed]
            if done:
                self.sqs.delete_message_batch(
                    QueueUrl=self.work_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                        for i, m in enumerate(done)
                    ],
                )
            for m in retry:
                self.sqs.change_message_visibility(
                    QueueUrl=self.work_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
                )
        raise AssertionError(f"work queue not drained after {max_rounds} batches")

    # --- observation ---------------------------------------------------------------------------
    def take_work(self) -> list[dict[str, Any]]:
        """Receive and delete every work message (dispatcher-only tests)."""
        out: list[dict[str, Any]] = []
        while True:
            got = self.sqs.receive_message(
                QueueUrl=self.work_url, MaxNumberOfMessages=10, AttributeNames=["All"]
            ).get("Messages", [])
            if not got:
                return out
            out.extend(got)
            self.sqs.delete_message_batch(
                QueueUrl=self.work_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
                ],
            )

    def scan(self, table: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            page = self.dynamodb.scan(**kwargs)
            items.extend(page["Items"])
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def run_record(self, month: str) -> dict[str, Any]:
        item = self.dynamodb.get_item(
            TableName=RUNS, Key={denv.RUNS_HASH_KEY: {"S": month}}, ConsistentRead=True
        ).get("Item")
        assert item is not None, f"no run record for {month}"
        return item

    def notifications(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            got = self.sqs.receive_message(
                QueueUrl=self.notifications_url, MaxNumberOfMessages=10
            ).get("Messages", [])
            if not got:
                return out
            out.extend(json.loads(m["Body"]) for m in got)
            self.sqs.delete_message_batch(
                QueueUrl=self.notifications_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
                ],
            )

    def queue_depth(self, url: str) -> int:
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]) + int(
            attrs["ApproximateNumberOfMessagesNotVisible"]
        )


def _table(client: Any, name: str, hash_key: str, range_key: str | None = None) -> None:
    keys = [{"AttributeName": hash_key, "KeyType": "HASH"}]
    defs = [{"AttributeName": hash_key, "AttributeType": "S"}]
    if range_key:
        keys.append({"AttributeName": range_key, "KeyType": "RANGE"})
        defs.append({"AttributeName": range_key, "AttributeType": "S"})
    client.create_table(
        TableName=name, KeySchema=keys, AttributeDefinitions=defs, BillingMode="PAY_PER_REQUEST"
    )


def create_world(monkeypatch: pytest.MonkeyPatch) -> World:
    session = boto3.session.Session(region_name=REGION)
    dynamodb = session.client("dynamodb")
    sqs = session.client("sqs")
    sns = session.client("sns")
    s3 = session.client("s3")
    _table(dynamodb, BILLING, denv.BILLING_HASH_KEY, denv.BILLING_RANGE_KEY)
    _table(dynamodb, RUNS, denv.RUNS_HASH_KEY)
    _table(dynamodb, STATE, renv.TENANT_PARTITION_KEY, renv.TENANT_SORT_KEY)
    _table(dynamodb, LEDGER, denv.LEDGER_HASH_KEY, denv.LEDGER_RANGE_KEY)
    fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "false"}
    work_dlq_url = sqs.create_queue(QueueName=WORK_DLQ, Attributes=fifo)["QueueUrl"]
    work_url = sqs.create_queue(QueueName=WORK, Attributes=fifo)["QueueUrl"]
    control_url = sqs.create_queue(QueueName=CONTROL, Attributes=fifo)["QueueUrl"]
    topic_arn = sns.create_topic(Name=TOPIC)["TopicArn"]
    notifications_url = sqs.create_queue(QueueName="charge-notifications-sink")["QueueUrl"]
    sink_arn = sqs.get_queue_attributes(QueueUrl=notifications_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    sns.subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=sink_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    s3.create_bucket(
        Bucket="billing-manifests", CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    world = World(
        dynamodb,
        sqs,
        sns,
        s3,
        work_url,
        work_dlq_url,
        control_url,
        topic_arn,
        notifications_url,
        monkeypatch,
    )
    world.dispatcher_env()
    world.consumer_env()
    return world


@pytest.fixture
def world(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with mock_aws():
        # Both functions cache clients per environment: start from this moto world.
        reset_clients()
        app.reset_clients()
        yield create_world(monkeypatch)
        reset_clients()
        app.reset_clients()


class RecordingFifoQueue:
    """A thread-safe stand-in for the SQS client of the WORK queue in the scale test only.

    moto's FIFO queue is quadratic in queued messages (every send recomputes queue attributes
    over all messages; measured here: 10,000 sends 25 s, receiving them 180 s), so the
    10,000-item run records SendMessageBatch calls here, enforcing what SQS enforces: <= 10
    entries, <= 1 MiB per call, group and dedup ids present and <= 128 characters, distinct
    entry ids; FIFO dedup by id over the whole test (a superset of the 5-minute window).
    """

    def __init__(self) -> None:
        self.calls = 0
        self.bodies: dict[str, str] = {}
        self.duplicates = 0
        self.control: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        assert 1 <= len(Entries) <= 10, len(Entries)
        assert sum(len(e["MessageBody"].encode()) for e in Entries) <= 1_048_576
        assert len({e["Id"] for e in Entries}) == len(Entries)
        with self._lock:
            self.calls += 1
            for entry in Entries:
                assert 0 < len(entry["MessageGroupId"]) <= 128
                dedup = entry["MessageDeduplicationId"]
                assert 0 < len(dedup) <= 128
                if dedup in self.bodies:
                    self.duplicates += 1
                else:
                    self.bodies[dedup] = entry["MessageBody"]
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}

    def send_message(self, **kwargs: Any) -> Any:
        with self._lock:
            self.control.append(kwargs)
        return {"MessageId": str(uuid.uuid4())}


def consumer_clients() -> Any:
    """The exact clients handlers.charges.handler will use (the runtime's cache)."""
    return clients_from_env()


# --- the harness itself ---------------------------------------------------------------------


def test_drain_work_redelivers_reported_failures_and_crashed_batches(world: World) -> None:
    for i in range(3):
        world.sqs.send_message(
            QueueUrl=world.work_url,
            MessageBody=f"m{i}",
            MessageGroupId="g",
            MessageDeduplicationId=f"d{i}",
        )
    seen: list[str] = []
    calls = {"n": 0}

    def handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        calls["n"] += 1
        seen.extend(r["body"] for r in event["Records"])
        if calls["n"] == 1:
            raise Crash("process died")
        if calls["n"] == 2:
            return {"batchItemFailures": [{"itemIdentifier": event["Records"][2]["messageId"]}]}
        return {"batchItemFailures": []}

    world.drain_work(handler)
    assert seen[:3] == ["m0", "m1", "m2"]  # crashed batch, in group order
    assert seen[3:6] == ["m0", "m1", "m2"]  # redelivered whole
    assert seen[6:] == ["m2"]  # only the reported failure comes back
    assert world.queue_depth(world.work_url) == 0


def test_page_budget_runs_out_after_the_given_number_of_checks() -> None:
    budget = PageBudget(2)
    assert [budget(), budget(), budget(), budget()] == [900_000, 900_000, 900_000, 0]
