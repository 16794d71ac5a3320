"""Issue 36: exactly-once at the floor for the tables teams actually have: the source article's
state table + ``order_records`` keyed by ``order_id`` (handlers.orders_by_order,
``DomainKeyedCreate``).

AWS facts:
* PartiQL INSERT refuses an existing key with ``DuplicateItem``, for that statement alone
  (DynamoDB Developer Guide, "PartiQL insert statements"; BatchExecuteStatement answers per
  statement).
* A non-transactional write costs 1 write unit per KB, a transactional one 2 (Developer Guide,
  "Capacity management for transactions"); a refused conditional write is billed too ("Read
  and write operations").

Before this, a consumer with these tables declared no effect and took the transaction (claim
Put + row Put, 2 x 2 write units, and one duplicate cancelled the whole batch's transaction,
which was then resubmitted); ``DomainKeyedCreate`` did not exist.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from bench.usage import describe_dynamodb
from handlers.orders_by_order import ORDERS_BY_ORDER
from idempotent_messaging.runtime import (
    Consumer,
    DomainKeyedCreate,
    WriteContext,
    env,
    grants,
)
from tests.iam_calls import iam_calls
from tests.integration.test_runtime_world import (
    ARTICLE_TABLE,
    REGION,
    STATE_TABLE,
    Aws,
    Crash,
    FakeContext,
    SimQueue,
    article_orders,
    assert_exactly_once,
    create_world,
    event_rows,
    order_body,
    record,
    sqs_event,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def world(aws_env: dict[str, str]) -> Iterator[Aws]:
    with mock_aws():
        yield create_world(rows_by_order=True)


@pytest.fixture
def fifo_world(aws_env: dict[str, str]) -> Iterator[Aws]:
    with mock_aws():
        yield create_world(rows_by_order=True, fifo_dlq=True)


def _consumer() -> Consumer:
    return article_orders(sleep=lambda _s: None)


def _process(world: Aws, *records: dict[str, Any], fifo: bool = False) -> dict[str, Any]:
    runtime = world.runtime(source_fifo=fifo)
    response: dict[str, Any] = _consumer().process(sqs_event(*records), FakeContext(), runtime)
    return response


class Billing:
    """Every DynamoDB call of the runtime's client, billed as bench/usage.py bills the wire."""

    def __init__(self, client: Any) -> None:
        self.calls: list[Any] = []
        self._params: dict[str, Any] = {}
        client.meta.events.register("before-parameter-build.dynamodb.*", self._before)
        client.meta.events.register("after-call.dynamodb.*", self._after)

    def _before(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self._params = json.loads(json.dumps(params, default=str))

    def _after(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        error = (parsed.get("Error") or {}).get("Code")
        self.calls.append(describe_dynamodb(model.name, self._params, parsed, error))

    @property
    def write_units(self) -> float:
        return sum(c.write_units for c in self.calls)


def test_ten_fresh_messages_cost_four_calls_and_two_write_units_each_plus_a_receipt(
    world: Aws,
) -> None:
    """The floor the issue asks for: claims (ONE BatchExecuteStatement into the state table),
    rows (ONE into order_records), PublishBatch, the receipt's PutItem: 0.4 calls and 2.1
    write units per fresh message, no transaction."""
    billing = Billing(world.dynamodb)
    bodies = [order_body(f"e{i}") for i in range(10)]
    world.reset_counts()
    assert _process(world, *(record(b) for b in bodies)) == {"batchItemFailures": []}
    assert world.calls == [
        "BatchExecuteStatement",
        "BatchExecuteStatement",
        "PublishBatch",
        "PutItem",
    ]
    assert billing.write_units == pytest.approx(21.0)  # 10 claims + 10 rows + 1 receipt
    assert not any(c.transactional for c in billing.calls)
    assert_exactly_once(world, {f"e{i}": f"order-e{i}" for i in range(10)})
    rows = world.order_rows()
    assert {r["order_id"]["S"] for r in rows} == {f"order-e{i}" for i in range(10)}
    assert all(r[env.ROW_EVENT_ID] == r["source_event_id"] for r in rows)


def test_a_duplicate_costs_its_refused_claim_and_cancels_nobody_elses_write(world: Aws) -> None:
    """One re-sent event in a batch of ten: its claim INSERT alone is refused (DuplicateItem),
    the nine others are written in the same calls; it reads its claim and its receipt, and no
    row is written for it (the receipt lists it: its row was written before its publish)."""
    assert _process(world, record(order_body("e0"))) == {"batchItemFailures": []}
    billing = Billing(world.dynamodb)
    published: list[str] = []
    world.sns.meta.events.register(
        "before-parameter-build.sns.PublishBatch",
        lambda params, **_: published.extend(
            json.loads(e["Message"])["event_id"] for e in params["PublishBatchRequestEntries"]
        ),
    )
    world.reset_counts()
    batch = [record(order_body("e0"))] + [record(order_body(f"e{i}")) for i in range(1, 10)]
    assert _process(world, *batch) == {"batchItemFailures": []}
    assert world.calls == [
        "BatchExecuteStatement",  # 10 claims: 9 written, e0's refused
        "BatchGetItem",  # e0's claim
        "BatchGetItem",  # the receipt it names: listed
        "BatchExecuteStatement",  # 9 rows
        "PublishBatch",
        "PutItem",
    ]
    assert billing.write_units == pytest.approx(10 + 9 + 1)
    assert sorted(published) == [f"e{i}" for i in range(1, 10)]
    assert_exactly_once(world, {f"e{i}": f"order-e{i}" for i in range(10)})


@pytest.mark.parametrize(
    "before",
    ["BatchExecuteStatement#2", "PublishBatch", "PutItem"],
    ids=["between-claim-and-row", "between-row-and-publish", "before-the-receipt"],
)
def test_a_death_after_the_claim_never_applies_twice_nor_loses_the_row(
    world: Aws, before: str
) -> None:
    """The claim committed and the process died before its row (or before publishing): the
    redelivery finds its pending claim, unlisted, and completes the row (absent) or verifies
    it by its key and the event id it records (present); one row, one notification at least."""
    queue = SimQueue()
    queue.send(order_body("e1"))
    target, _, nth = before.partition("#")
    seen = 0

    def die(model: Any, **_: Any) -> None:
        nonlocal seen
        if model.name == target:
            seen += 1
            if seen == int(nth or 1):
                raise Crash(f"before {before}")

    for client in (world.dynamodb, world.sns):
        client.meta.events.register("before-call.*.*", die)
    assert queue.deliver(lambda e: _consumer().process(e, FakeContext(), world.runtime())) is None
    for client in (world.dynamodb, world.sns):
        client.meta.events.unregister("before-call.*.*", die)
    queue.drain(lambda e: _consumer().process(e, FakeContext(), world.runtime()))
    assert_exactly_once(world, {"e1": "order-e1"})


def test_a_resent_event_id_with_another_order_never_reaches_the_row_write(world: Aws) -> None:
    """Same event id, another order_id: another business key, so a row write would be a second
    row of one event. The claim's fingerprint makes it a conflicting_duplicate first: no row
    statement is sent for it."""
    assert _process(world, record(order_body("e1", order_id="o-1"))) == {"batchItemFailures": []}
    statements: list[str] = []
    world.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.BatchExecuteStatement",
        lambda params, **_: statements.extend(s["Statement"] for s in params["Statements"]),
    )
    assert _process(world, record(order_body("e1", order_id="o-2"))) == {"batchItemFailures": []}
    assert not [s for s in statements if ARTICLE_TABLE in s]
    (copy,) = world.dlq_messages()
    assert copy["MessageAttributes"]["failure_kind"]["StringValue"] == "conflicting_duplicate"
    assert [r["order_id"]["S"] for r in world.order_rows()] == ["o-1"]


def test_another_event_for_a_recorded_order_is_a_business_conflict_with_its_reason(
    world: Aws,
) -> None:
    """A different event id for an order_id already recorded: the row's own key refuses it,
    the row records another event: ``semantic``, to the DLQ with its reason, its claim
    released; the first row stands. In one batch too (the later row waits for a later call and
    meets the first)."""
    first = record(order_body("e1", order_id="o-1"))
    assert _process(world, first) == {"batchItemFailures": []}
    response = _process(
        world, record(order_body("e2", order_id="o-1")), record(order_body("e3", order_id="o-3"))
    )
    assert response == {"batchItemFailures": []}
    (copy,) = world.dlq_messages()
    attributes = {k: v["StringValue"] for k, v in copy["MessageAttributes"].items()}
    assert attributes["failure_kind"] == "semantic"
    assert attributes["event_id"] == "e2"
    assert "already holds another event's effect" in attributes["failure_reason"]
    rows = {r["order_id"]["S"]: r[env.ROW_EVENT_ID]["S"] for r in world.order_rows()}
    assert rows == {"o-1": "e1", "o-3": "e3"}
    in_one_batch = _process(
        world, record(order_body("e4", order_id="o-4")), record(order_body("e5", order_id="o-4"))
    )
    assert in_one_batch == {"batchItemFailures": []}
    assert {r["order_id"]["S"]: r[env.ROW_EVENT_ID]["S"] for r in world.order_rows()}["o-4"] == (
        "e4"
    )
    # Nothing of e2 or e5 was applied: their claims are released (ops explain would otherwise
    # say the write was applied), so a redrive after the conflict is resolved applies them.
    assert {c["event_id"]["S"] for c in world.claims()} == {"e1", "e3", "e4"}


def test_a_claim_expired_while_its_row_stays_is_verified_not_applied_again(world: Aws) -> None:
    """The claim's TTL passed and DynamoDB deleted it; a re-send with the same content (a new
    message, no history) claims anew, its row INSERT is refused and the row records this very
    event: verified, published, no second row (the event-keyed claim would have needed the
    event's own time to refuse it)."""
    assert _process(world, record(order_body("e1"))) == {"batchItemFailures": []}
    world.dynamodb.delete_item(
        TableName="processed_events", Key={env.EVENT_ID_KEY: {"S": "e1"}}
    )  # DynamoDB TTL (moto never expires items)
    world.notifications()
    assert _process(world, record(order_body("e1"))) == {"batchItemFailures": []}
    assert [n["event_id"] for n in world.notifications()] == ["e1"]
    assert len(event_rows(world)) == 1
    assert world.dlq_messages() == []


def test_on_a_fifo_queue_claim_and_row_commit_in_one_transaction(fifo_world: Aws) -> None:
    """Statements succeed one by one, which would let a later record of a group be written
    while an earlier one waits: FIFO keeps the transaction (claim Put + row Put recording the
    event); a recorded order is a semantic failure there too."""
    world = fifo_world
    world.reset_counts()
    fifo = [record(order_body("e1"), group_id="g", fifo=True)]
    assert _process(world, *fifo, fifo=True) == {"batchItemFailures": []}
    assert world.calls[0] == "TransactWriteItems"
    clash = record(order_body("e2", order_id="order-e1"), group_id="g", fifo=True)
    assert _process(world, clash, fifo=True) == {"batchItemFailures": []}
    (copy,) = world.dlq_messages()
    assert copy["MessageAttributes"]["failure_kind"]["StringValue"] == "semantic"
    (row,) = world.order_rows()
    assert row[env.ROW_EVENT_ID]["S"] == "e1"


def _writes(put: dict[str, Any]) -> Any:
    def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        return [{"Put": {"TableName": ctx.business_table, **put}}]

    return writes


@pytest.mark.parametrize(
    ("put", "why"),
    [
        (
            {
                "Item": {"order_id": {"S": "o"}},
                "ConditionExpression": "amount > :a",
                "ExpressionAttributeValues": {":a": {"N": "1"}},
            },
            "must be a create",
        ),
        ({"Item": {"other": {"S": "o"}}}, "lacks the key attributes"),
        ({"Item": {"order_id": {"S": "o"}, env.ROW_EVENT_ID: {"S": "x"}}}, env.ROW_EVENT_ID),
    ],
    ids=["not-a-create", "no-key", "sets-the-runtime-attribute"],
)
def test_a_put_that_is_not_one_create_of_the_declared_key_is_schema_poison(
    world: Aws, put: dict[str, Any], why: str
) -> None:
    consumer = Consumer(writes=_writes(put), effect=DomainKeyedCreate(key=("order_id",)))
    response = consumer.process(sqs_event(record(order_body("e1"))), FakeContext(), world.runtime())
    assert response == {"batchItemFailures": []}
    (copy,) = world.dlq_messages()
    assert copy["MessageAttributes"]["failure_kind"]["StringValue"] == "schema"
    assert why in copy["MessageAttributes"]["failure_reason"]["StringValue"]
    assert world.order_rows() == []


def test_the_declaration_names_its_key() -> None:
    with pytest.raises(ValueError, match="partition key"):
        DomainKeyedCreate(key=())
    with pytest.raises(ValueError, match=env.ROW_EVENT_ID):
        DomainKeyedCreate(key=(env.ROW_EVENT_ID,))
    assert ORDERS_BY_ORDER.effect == DomainKeyedCreate(key=("order_id",))


def test_ops_explain_says_a_pending_claims_row_may_not_be_written_yet(world: Aws) -> None:
    """A death between the claim and its row on the last receive: SQS moves the copy bare.
    Its claim is pending, so the notification is owed, but whether the row was written is not
    known from the claim alone (it is written after it): explain says so, and that a redrive
    completes or verifies it, instead of "the business write WAS applied"."""
    from idempotent_messaging.ops.dlq import PeekedMessage, explain_message

    queue = SimQueue()
    queue.send(order_body("e1"))
    seen = 0

    def die(model: Any, **_: Any) -> None:
        nonlocal seen
        if model.name == "BatchExecuteStatement":
            seen += 1
            if seen == 2:  # the rows' call
                raise Crash("before the row")

    world.dynamodb.meta.events.register("before-call.*.*", die)
    assert queue.deliver(lambda e: _consumer().process(e, FakeContext(), world.runtime())) is None
    world.dynamodb.meta.events.unregister("before-call.*.*", die)
    bare = PeekedMessage(
        message_id="dlq-1",
        body=order_body("e1"),
        attributes={"SentTimestamp": "1"},
        message_attributes={},
    )
    explained = explain_message(bare, world.dynamodb, "processed_events", consumer=ORDERS_BY_ORDER)
    assert (explained.claim, explained.write_applied, explained.notification_owed) == (
        "pending",
        None,
        True,
    )
    assert "may not be written yet" in explained.advice
    assert "redrive completes the row" in explained.advice


class TableCalls:
    """The IAM actions each table is called with (tests/iam_calls.py maps each call to the
    actions AWS authorises it by), with one-shot refusals, as AWS would answer them."""

    def __init__(self, client: Any) -> None:
        self.by_table: dict[str, set[str]] = {STATE_TABLE: set(), ARTICLE_TABLE: set()}
        self.refusals: list[tuple[str, str]] = []
        self.on = False  # only the runtime's calls, not the test's own reads and deletes
        client.meta.events.register("before-parameter-build.dynamodb.*", self._before)

    def refuse_once(self, operation: str, code: str) -> None:
        self.refusals.append((operation, code))

    def _before(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if not self.on:
            return
        for action, resource in iam_calls("dynamodb", model.name, params, REGION, "123456789012"):
            self.by_table[resource.rsplit("/", 1)[-1]].add(action)
        if (model.name, "ValidationException") in self.refusals:
            self.refusals.remove((model.name, "ValidationException"))
            raise ClientError({"Error": {"Code": "ValidationException"}}, model.name)


def test_every_table_call_is_granted_by_the_domain_keyed_role_and_every_grant_is_called(
    world: Aws,
) -> None:
    """runtime/grants.py's ``domain_keyed`` placement on a standard queue with a topic, against
    every path that calls something else: fresh (claim and row INSERTs, the receipt), copies
    (the claim and receipt reads), copies whose receipt is gone (the `sent` marking), another
    event's order (the row read, the claim's release), SNS refusing for good (the owed
    notification), a refused INSERT call (the transaction fallback: claim Put + row Put)."""
    calls = TableCalls(world.dynamodb)

    def process(*records: dict[str, Any]) -> dict[str, Any]:
        calls.on = True
        try:
            return _process(world, *records)
        finally:
            calls.on = False

    fresh = [record(order_body(f"e{i}")) for i in range(3)]
    assert process(*fresh) == {"batchItemFailures": []}
    assert process(*fresh) == {"batchItemFailures": []}
    for receipt in world.receipts():
        world.dynamodb.delete_item(TableName=STATE_TABLE, Key={env.EVENT_ID_KEY: {"S": receipt}})
    assert process(*fresh) == {"batchItemFailures": []}
    assert process(record(order_body("e9", order_id="order-e0"))) == {"batchItemFailures": []}
    world.sns.meta.events.register(
        "before-call.sns.PublishBatch",
        lambda **_: (_ for _ in ()).throw(
            ClientError({"Error": {"Code": "InvalidParameter"}}, "PublishBatch")
        ),
    )
    calls.refuse_once("BatchExecuteStatement", "ValidationException")
    process(record(order_body("e20")))

    granted = grants.consumer_grants(
        placement=grants.PLACEMENT_DOMAIN_KEYED,
        fifo=False,
        notifies=True,
        has_business_table=True,
    )
    assert calls.by_table == {
        STATE_TABLE: set(granted.state_table),
        ARTICLE_TABLE: set(granted.business_table),
    }
    assert "e20" in {c["event_id"]["S"] for c in world.claims()}  # the fallback wrote it
