"""The consumer runtime's moto world: resources named from the runtime's env.py constants,
AWS call counting, fault and crash injection, a simulated SQS queue and the invariants.

Imported by tests as ``tests.integration.test_runtime_world`` (it holds no tests itself).
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.awsrequest
import botocore.session
from moto.core.models import botocore_stubber

from handlers.orders import ORDER_KEY
from idempotent_messaging.runtime import Runtime, Settings, env, lambda_handler
from idempotent_messaging.runtime.claims import is_receipt, published_status
from idempotent_messaging.runtime.clients import BOTOCORE_CONFIG

REGION = "ap-northeast-1"
STATE_TABLE = "processed_events"
TENANT_STATE_TABLE = "tenant_state"
BUSINESS_TABLE = "order_records"
ARTICLE_TABLE = "article_order_records"
"""The source article's business table: ``order_records`` keyed by ``order_id``
(handlers.orders_by_order, DomainKeyedCreate)."""
TOPIC = "order-notifications"
DLQ = "orders-dlq"


class Crash(BaseException):
    """A process death: ``except Exception`` cannot swallow it."""


@dataclass
class FakeContext:
    """The parts of the Lambda context the runtime and Powertools read."""

    # Lambda's maximum timeout (15 minutes): a test that is not about the deadline never meets
    # it, however slow a loaded machine runs the batch; the deadline tests set their own.
    remaining_ms: int = 900_000
    function_name: str = "orders-consumer"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:orders-consumer"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def record(
    body: str,
    *,
    message_id: str | None = None,
    receive_count: int = 1,
    group_id: str | None = None,
    attributes: dict[str, str] | None = None,
    fifo: bool = False,
) -> dict[str, Any]:
    """One SQS record as Lambda delivers it."""
    # SQS stamps SentTimestamp (epoch ms) on every message it accepts: now, as a fresh send.
    attrs = {
        "ApproximateReceiveCount": str(receive_count),
        "SentTimestamp": str(int(time.time() * 1000)),
    }
    if group_id is not None:
        attrs["MessageGroupId"] = group_id
    queue = "orders.fifo" if fifo else "orders"
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": "handle",
        "body": body,
        "attributes": attrs,
        "messageAttributes": {
            name: {"stringValue": value, "dataType": "String"}
            for name, value in (attributes or {}).items()
        },
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:123456789012:{queue}",
        "awsRegion": REGION,
    }


def order_body(event_id: str, order_id: str | None = None, **fields: Any) -> str:
    order = {"order_id": order_id or f"order-{event_id}", "amount": 1200, **fields}
    return json.dumps({"event_id": event_id, "order": order})


def sqs_event(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


@dataclass
class Aws:
    """Resources and clients of one moto world, plus call counting and fault/crash hooks."""

    dynamodb: Any
    sns: Any
    sqs: Any
    topic_arn: str
    dlq_url: str
    notifications_url: str
    calls: list[str] = field(default_factory=list)
    sends: list[str] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)
    """HTTP sends per API call (botocore retries included), in call order."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    crash_before_call: int | None = None
    crash_after_call: int | None = None
    fault_rate: float = 0.0
    fault_rng: random.Random = field(default_factory=lambda: random.Random(7))
    faults: int = 0
    ambiguous_share: float = 0.5
    """Share of injected faults that moto applies before the client sees the 5xx."""
    claims_in_items: bool = False
    """The consumer under test declares SingleItemEffect: its claims live in the order rows."""
    rows_by_order: bool = False
    """The consumer under test declares DomainKeyedCreate: its rows are ``ARTICLE_TABLE``'s,
    keyed by ``order_id``, its claims in the state table."""

    @property
    def business_table(self) -> str:
        return ARTICLE_TABLE if self.rows_by_order else BUSINESS_TABLE

    def settings(self, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "state_table": STATE_TABLE,
            "business_table": self.business_table,
            "topic_arn": self.topic_arn,
            "dlq_url": self.dlq_url,
            "remaining_time_guard_ms": 1_000,
        }
        values.update(overrides)
        return Settings(**values)

    def runtime(self, **overrides: Any) -> Runtime:
        return Runtime(self.settings(**overrides), self.dynamodb, self.sns, self.sqs)

    def env(self, **overrides: str) -> dict[str, str]:
        values = {
            env.STATE_TABLE: STATE_TABLE,
            env.BUSINESS_TABLE: self.business_table,
            env.NOTIFICATION_TOPIC_ARN: self.topic_arn,
            env.DLQ_URL: self.dlq_url,
            env.REMAINING_TIME_GUARD_MS: "1000",
        }
        values.update(overrides)
        return values

    # --- hooks -------------------------------------------------------------------------------
    def instrument(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", self._before_call)
        client.meta.events.register("after-call.*.*", self._after_call)
        # botocore runs EVERY before-send handler and uses the first response. moto's stub is
        # one of them, so wrap it: a "rejected" fault answers an error without letting moto
        # apply the request (a throttle), an "ambiguous" one lets moto apply it and still
        # answers 5xx (a timeout after commit). botocore's retry handler then runs exactly as
        # against AWS.
        client.meta.events.unregister("before-send", botocore_stubber)
        client.meta.events.register("before-send", self._before_send)

    def reset_counts(self) -> None:
        with self._lock:
            self.calls.clear()
            self.sends.clear()
            self.attempts.clear()

    def _before_call(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.calls.append(model.name)
            self.attempts.append(0)
            n = len(self.calls)
        if self.crash_before_call is not None and n == self.crash_before_call:
            raise Crash(f"crash before call {n} ({model.name})")

    def _after_call(self, model: Any, **_: Any) -> None:
        with self._lock:
            n = len(self.calls)
        if self.crash_after_call is not None and n == self.crash_after_call:
            raise Crash(f"crash after call {n} ({model.name})")

    def _before_send(self, request: Any, **kwargs: Any) -> Any:
        if getattr(request, "rejected_by_test", False):
            return None  # another handler answers it; moto must not apply it
        with self._lock:
            self.sends.append(request.url)
            if self.attempts:
                self.attempts[-1] += 1
            inject = bool(self.fault_rate) and self.fault_rng.random() < self.fault_rate
            ambiguous = inject and self.fault_rng.random() < self.ambiguous_share
            if inject:
                self.faults += 1
        if inject and not ambiguous:
            return _error_response(request)
        response = botocore_stubber(request=request, **kwargs)  # None outside mock_aws
        if ambiguous:
            return _error_response(request)
        return response

    # --- observation ---------------------------------------------------------------------------
    def order_rows(self) -> list[dict[str, Any]]:
        return scan(self.dynamodb, self.business_table)

    def receipts(self, table: str = STATE_TABLE) -> dict[str, frozenset[str]]:
        """The publication receipts of the state table: {receipt id: entries listed}."""
        out = {}
        for item in scan(self.dynamodb, table):
            if is_receipt(item):
                key = item.get(env.TENANT_PARTITION_KEY) or item[env.EVENT_ID_KEY]
                out[key["S"]] = frozenset(item[env.RECEIPT_PUBLISHED]["SS"])
        return out

    def stored_claims(self, table: str = STATE_TABLE) -> list[dict[str, Any]]:
        """The claim items as stored (receipts left out), status as written."""
        if not self.claims_in_items or table != STATE_TABLE:
            return [item for item in scan(self.dynamodb, table) if not is_receipt(item)]
        if [item for item in scan(self.dynamodb, STATE_TABLE) if not is_receipt(item)]:
            raise AssertionError("a single-item consumer wrote a claim to the state table")
        return [
            {
                **row,
                env.EVENT_ID_KEY: row[env.ITEM_CLAIM_EVENT_ID],
                "status": row[env.ITEM_CLAIM_STATUS],
            }
            for row in self.order_rows()
            if env.ITEM_CLAIM_EVENT_ID in row
        ]

    def claims(self, table: str = STATE_TABLE) -> list[dict[str, Any]]:
        """Claims as the state table holds them (``event_id``, ``status``, ...); with claims in
        the order rows, each row's claim attributes under those names. ``status`` is the
        status the runtime reads (``claims.published_status``): a ``pending`` claim its
        receipt lists is ``sent``; receipts are not claims and are left out."""
        receipts = self.receipts(table)
        out = []
        for claim in self.stored_claims(table):
            raw = dict(claim)
            if self.claims_in_items and table == STATE_TABLE:
                raw.pop(env.EVENT_ID_KEY, None)
                raw.pop("status", None)
            status = published_status(raw, receipts)
            out.append({**claim, "status": {"S": status}} if status is not None else claim)
        return out

    def notifications(self) -> list[dict[str, Any]]:
        """Every notification delivered so far (SNS -> subscribed SQS queue), drained."""
        return [json.loads(m["Body"]) for m in _drain(self.sqs, self.notifications_url)]

    def dlq_messages(self) -> list[dict[str, Any]]:
        return _drain(self.sqs, self.dlq_url, attributes=True)


def _error_response(request: Any) -> botocore.awsrequest.AWSResponse:
    """A 500 InternalServerError / 503 in the protocol of the target service."""
    headers = dict(request.headers)
    target = headers.get("X-Amz-Target", b"")
    target = target.decode() if isinstance(target, bytes) else str(target)
    if "DynamoDB" in target:
        body = json.dumps(
            {"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "x"}
        ).encode()
        return botocore.awsrequest.AWSResponse(
            request.url, 500, {"x-amzn-RequestId": "f"}, _Raw(body)
        )
    if "AmazonSQS" in target:
        body = json.dumps(
            {"__type": "com.amazonaws.sqs#ServiceUnavailable", "message": "x"}
        ).encode()
        return botocore.awsrequest.AWSResponse(
            request.url, 503, {"x-amzn-query-error": "ServiceUnavailable;Receiver"}, _Raw(body)
        )
    body = (
        b"<ErrorResponse><Error><Type>Receiver</Type><Code>InternalFailure</Code>"
        b"<Message>x</Message></Error><RequestId>f</RequestId></ErrorResponse>"
    )
    return botocore.awsrequest.AWSResponse(request.url, 500, {}, _Raw(body))


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any) -> bytes:
        body, self._body = self._body, b""
        return body


def scan(client: Any, table: str, key: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every item of `table` (only its `key` attributes, when given), read consistently and
    page by page with botocore's own paginator."""
    names = {f"#k{n}": name for n, name in enumerate(key)}
    projection = {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}
    pages = client.get_paginator("scan").paginate(
        TableName=table, ConsistentRead=True, **(projection if key else {})
    )
    return [item for page in pages for item in page["Items"]]


def _drain(client: Any, url: str, *, attributes: bool = False) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while True:
        answer = client.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"] if attributes else [],
            AttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        messages = answer.get("Messages", [])
        if not messages:
            return out
        out.extend(messages)
        client.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )


# One botocore session for every world: it caches the loaded service models, which makes a
# fresh client cost milliseconds instead of ~0.1 s.
_BOTOCORE = botocore.session.get_session()


def create_world(
    endpoint_url: str | None = None,
    *,
    fifo_dlq: bool = False,
    claims_in_items: bool = False,
    rows_by_order: bool = False,
) -> Aws:
    """Tables, topic, DLQ and a queue subscribed to the topic, named as the stack names them."""
    dynamodb, sns, sqs = _clients(endpoint_url)
    _create_tables(dynamodb)
    topic_arn = sns.create_topic(Name=TOPIC)["TopicArn"]
    dlq_url = _create_queue(sqs, DLQ + (".fifo" if fifo_dlq else ""))
    notifications_url = _create_queue(sqs, NOTIFICATIONS)
    _subscribe(sns, sqs, topic_arn, notifications_url)
    return _world(
        (dynamodb, sns, sqs),
        topic_arn,
        dlq_url,
        notifications_url,
        claims_in_items=claims_in_items,
        rows_by_order=rows_by_order,
    )


NOTIFICATIONS = "notifications"
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    STATE_TABLE: (env.EVENT_ID_KEY,),
    TENANT_STATE_TABLE: (env.TENANT_PARTITION_KEY, env.TENANT_SORT_KEY),
    # The reference orders table as the stack creates it: keyed by the event (ORDER_KEY).
    BUSINESS_TABLE: (ORDER_KEY,),
    ARTICLE_TABLE: ("order_id",),
}
"""Every table of a world and its key (hash, then range)."""


def _clients(endpoint_url: str | None = None) -> tuple[Any, Any, Any]:
    session = boto3.session.Session(botocore_session=_BOTOCORE, region_name=REGION)
    kwargs: dict[str, Any] = {"config": BOTOCORE_CONFIG}
    if endpoint_url:
        kwargs["endpoint_url"] = endpoint_url
    dynamodb, sns, sqs = (session.client(name, **kwargs) for name in ("dynamodb", "sns", "sqs"))
    return dynamodb, sns, sqs


def _create_tables(dynamodb: Any) -> None:
    for table, key in TABLE_KEYS.items():
        dynamodb.create_table(
            TableName=table,
            KeySchema=[
                {"AttributeName": name, "KeyType": kind}
                for name, kind in zip(key, ("HASH", "RANGE"), strict=False)
            ],
            AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in key],
            BillingMode="PAY_PER_REQUEST",
        )


def _create_queue(sqs: Any, name: str) -> str:
    attributes = {"FifoQueue": "true"} if name.endswith(".fifo") else {}
    url: str = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    return url


def _subscribe(sns: Any, sqs: Any, topic_arn: str, queue_url: str) -> None:
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true"},
    )


def _world(
    clients: tuple[Any, Any, Any],
    topic_arn: str,
    dlq_url: str,
    notifications_url: str,
    *,
    claims_in_items: bool,
    rows_by_order: bool,
) -> Aws:
    dynamodb, sns, sqs = clients
    world = Aws(dynamodb, sns, sqs, topic_arn, dlq_url, notifications_url)
    world.claims_in_items = claims_in_items
    world.rows_by_order = rows_by_order
    for client in clients:
        world.instrument(client)
    world.reset_counts()
    return world


class Worlds:
    """Fresh worlds, one after another, from ONE moto world (create it inside ``mock_aws``,
    e.g. in a module fixture): ``fresh()`` empties what the previous world held and hands out
    an ``Aws`` on new clients (a test's hooks and faults stay on its own clients), as
    ``create_world`` would have made it. A scenario costs its own calls, not a world's
    creation (tables, topic, queues: about two thirds of a short scenario's CPU)."""

    def __init__(self) -> None:
        self._admin = _clients()
        dynamodb, sns, sqs = self._admin
        _create_tables(dynamodb)
        self.topic_arn = sns.create_topic(Name=TOPIC)["TopicArn"]
        self._queues = {
            name: _create_queue(sqs, name) for name in (DLQ, DLQ + ".fifo", NOTIFICATIONS)
        }
        _subscribe(sns, sqs, self.topic_arn, self._queues[NOTIFICATIONS])
        self._used: set[str] = set()

    def fresh(
        self, *, fifo_dlq: bool = False, claims_in_items: bool = False, rows_by_order: bool = False
    ) -> Aws:
        """A world as ``create_world`` makes it (the same names, keys and subscription)."""
        self.empty()
        dlq = DLQ + (".fifo" if fifo_dlq else "")
        self._used = {dlq, NOTIFICATIONS}
        return _world(
            _clients(),
            self.topic_arn,
            self._queues[dlq],
            self._queues[NOTIFICATIONS],
            claims_in_items=claims_in_items,
            rows_by_order=rows_by_order,
        )

    def empty(self) -> None:
        """Every table emptied (through the API: scan, then delete each key), and the queues
        the last world used deleted and created again under their names (their URLs, ARNs
        and the topic's subscription stay; no message, in flight or not, and no FIFO
        deduplication id remains)."""
        dynamodb, _, sqs = self._admin
        for table, key in TABLE_KEYS.items():
            keys = [{name: item[name] for name in key} for item in scan(dynamodb, table, key)]
            for start in range(0, len(keys), 25):
                left = dynamodb.batch_write_item(
                    RequestItems={
                        table: [{"DeleteRequest": {"Key": k}} for k in keys[start : start + 25]]
                    }
                )["UnprocessedItems"]
                if left:
                    raise AssertionError(f"{table}: emptying the world left {left}")
        for name in sorted(self._used):
            sqs.delete_queue(QueueUrl=self._queues[name])
            if _create_queue(sqs, name) != self._queues[name]:
                raise AssertionError(f"queue {name} came back under another URL")
        self._used = set()


@dataclass
class SimQueue:
    """An SQS queue as Lambda sees it: unacknowledged messages come back with a higher
    receive count; a crash acknowledges nothing (redelivery after the visibility timeout)."""

    fifo: bool = False
    messages: list[dict[str, Any]] = field(default_factory=list)

    def send(
        self,
        body: str,
        *,
        group_id: str | None = None,
        attributes: dict[str, str] | None = None,
    ) -> str:
        message_id = str(uuid.uuid4())
        self.messages.append(
            {
                "message_id": message_id,
                "body": body,
                "receive_count": 0,
                "group_id": group_id,
                "attributes": attributes,
            }
        )
        return message_id

    def receive(self, max_messages: int = 10) -> list[dict[str, Any]]:
        batch = self.messages[:max_messages]
        for m in batch:
            m["receive_count"] += 1
        return [
            record(
                m["body"],
                message_id=m["message_id"],
                receive_count=m["receive_count"],
                group_id=m["group_id"],
                attributes=m["attributes"],
                fifo=self.fifo,
            )
            for m in batch
        ]

    def ack(self, message_ids: set[str]) -> None:
        self.messages = [m for m in self.messages if m["message_id"] not in message_ids]

    def deliver(
        self, process: Callable[[dict[str, Any]], dict[str, Any]], max_messages: int = 10
    ) -> dict[str, Any] | None:
        """One invocation; returns its response, or None when the process crashed."""
        records = self.receive(max_messages)
        if not records:
            return {"batchItemFailures": []}
        try:
            response = process(sqs_event(*records))
        except Crash:
            return None
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        self.ack({r["messageId"] for r in records} - failed)
        return response

    def drain(self, process: Callable[[dict[str, Any]], dict[str, Any]], rounds: int = 50) -> None:
        for _ in range(rounds):
            if not self.messages:
                return
            self.deliver(process)
        raise AssertionError(f"queue not drained after {rounds} deliveries: {self.messages}")


def separate_claim_orders(**options: Any) -> Any:
    """The orders plug-ins WITHOUT the single-item declaration: the claim is a separate
    state-table item, the runtime's path for effects of any shape (several items, counters)."""
    from handlers.orders import order_notification, order_writes
    from idempotent_messaging.runtime import Consumer

    return Consumer(
        writes=order_writes,
        notification=order_notification,
        namespace="order",
        requires_business_table=True,
        **options,
    )


def single_item_orders(**options: Any) -> Any:
    """The orders plug-ins declaring their single-item effect (claim in the order row, keyed
    by the event)."""
    from handlers.orders import order_notification, order_writes
    from idempotent_messaging.runtime import Consumer, SingleItemEffect

    return Consumer(
        writes=order_writes,
        notification=order_notification,
        namespace="order",
        requires_business_table=True,
        effect=SingleItemEffect.keyed_by_event_id(ORDER_KEY),
        **options,
    )


def article_orders(**options: Any) -> Any:
    """The orders contract on the source article's tables (handlers.orders_by_order): rows
    keyed by ``order_id``, DomainKeyedCreate (the claim in the state table, then the row)."""
    from handlers.orders_by_order import ORDERS_BY_ORDER
    from idempotent_messaging.runtime import Consumer

    return Consumer(
        writes=ORDERS_BY_ORDER.writes,
        notification=ORDERS_BY_ORDER.notification,
        namespace="order",
        requires_business_table=True,
        effect=ORDERS_BY_ORDER.effect,
        **options,
    )


def orders_handler() -> Any:
    """The reference orders consumer's Lambda handler (the claim in its business row)."""
    from handlers import orders

    return orders.handler


# Handler-level placements, built when a test has its world (the handler reads it):
HANDLER_PLACEMENTS: dict[str, Callable[[], Any]] = {
    # The reference orders consumer: the claim in its business row (INSERT / transaction).
    "in-item": orders_handler,
    # The same plug-ins without the declaration: a claim item in the state table.
    "state-table": lambda: lambda_handler(separate_claim_orders()),
}


def invoke_handler(handler: Any, *records: dict[str, Any]) -> dict[str, Any]:
    """One invocation of a Lambda handler on these records, with a fake context."""
    response: dict[str, Any] = handler(sqs_event(*records), FakeContext())
    return response


def records_of(bodies: list[str], fifo: bool) -> list[dict[str, Any]]:
    """One SQS record per body (FIFO: all in group ``g1``)."""
    return [record(body, group_id="g1" if fifo else None, fifo=fifo) for body in bodies]


def put_legacy_row(world: Aws, event_id: str, order_id: str = "legacy") -> None:
    """A row already at the key the event ``event_id`` derives, holding no claim of that event
    (written before the consumer existed, or by another writer): the event's write meets an
    already recorded business key, a semantic failure in either placement."""
    world.dynamodb.put_item(
        TableName=BUSINESS_TABLE,
        Item={ORDER_KEY: {"S": event_id}, "order_id": {"S": order_id}},
    )


def event_rows(world: Aws) -> dict[str, dict[str, Any]]:
    """The order rows written by the consumer (legacy rows left out), by the event that wrote
    them; two rows of one event (a second effect) fail here."""
    rows = [row for row in world.order_rows() if "source_event_id" in row]
    by_event = {row["source_event_id"]["S"]: row for row in rows}
    assert len(by_event) == len(rows), f"an event wrote two rows: {rows}"
    if world.rows_by_order:  # the event each row records is the one that wrote it
        assert all(r[env.ROW_EVENT_ID] == r["source_event_id"] for r in rows), rows
    return by_event


def assert_exactly_once(world: Aws, event_to_order: dict[str, str]) -> list[dict[str, Any]]:
    """One row per distinct event, at least one notification each, every claim ``sent``."""
    by_event = event_rows(world)
    assert set(by_event) == set(event_to_order)
    for event_id, order_id in event_to_order.items():
        assert by_event[event_id]["order_id"]["S"] == order_id
        assert by_event[event_id]["source_event_id"]["S"] == event_id
    claims = {c["event_id"]["S"]: c["status"]["S"] for c in world.claims()}
    assert claims == {e: env.STATUS_SENT for e in event_to_order}
    notes = world.notifications()
    assert {n["event_id"] for n in notes} == set(event_to_order)
    for note in notes:
        assert note["order_id"] == event_to_order[note["event_id"]]
    return notes
