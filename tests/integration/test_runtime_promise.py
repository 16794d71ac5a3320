"""The eight ways the promise ("database exactly-once, notification at-least-once") broke,
one class per section, each driven through ``Consumer.process`` with faults injected at the
botocore level (tests/integration/runtime_faults.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handlers.orders import order_notification, order_writes
from idempotent_messaging.runtime import (
    Consumer,
    EventIdFromAttribute,
    SchemaError,
    WriteContext,
    env,
)
from tests.integration.runtime_faults import (
    answer_with,
    fail_sends,
    rewrite_parsed,
    strict_dynamodb,
)
from tests.integration.test_runtime_world import (
    TENANT_STATE_TABLE,
    Aws,
    FakeContext,
    order_body,
    record,
    separate_claim_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

# The runtime's separate-claim path: the orders plug-ins without their single-item declaration.
ORDERS = separate_claim_orders()


def run(world: Aws, *records: dict[str, Any], consumer: Consumer = ORDERS, **settings: Any):
    world.reset_counts()
    return consumer.process(sqs_event(*records), FakeContext(), world.runtime(**settings))


def failures(response: dict[str, Any]) -> set[str]:
    return {f["itemIdentifier"] for f in response["batchItemFailures"]}


def dlq_copies(world: Aws) -> dict[str, dict[str, Any]]:
    out = {}
    for m in world.dlq_messages():
        attrs = {k: v.get("StringValue") for k, v in m["MessageAttributes"].items()}
        out[attrs["original_message_id"]] = {**attrs, "body": m["Body"]}
    return out


def rows(world: Aws) -> set[str]:
    return {r["order_id"]["S"] for r in world.order_rows()}


def raw_order(event_id: str, order_json: str) -> str:
    """A body whose order object is given as raw JSON text (numbers json.dumps cannot write)."""
    return f'{{"event_id": "{event_id}", "order": {order_json}}}'


# --- 1. no poison pill fails a batch ---------------------------------------------------------
POISON_BODIES = {
    # CPython's JSON decoder raises RecursionError past ~1000 levels.
    "nested-5000": raw_order("p", '{"order_id": "o-p", "x": ' + "[" * 5000 + "]" * 5000 + "}"),
    # Decodes, but DynamoDB keeps at most 32 nested levels.
    "nested-40": raw_order("p", '{"order_id": "o-p", "x": ' + "[" * 40 + "]" * 40 + "}"),
    # DynamoDB numbers: at most 38 significant digits.
    "41-digits": raw_order("p", '{"order_id": "o-p", "amount": ' + "9" * 41 + "}"),
    # DynamoDB numbers: magnitude at most 9.9E+125 and at least 1E-130.
    "1e200": raw_order("p", '{"order_id": "o-p", "amount": 1e200}'),
    "1e-200": raw_order("p", '{"order_id": "o-p", "amount": 1e-200}'),
    # DynamoDB has no NaN / Infinity.
    "NaN": raw_order("p", '{"order_id": "o-p", "amount": NaN}'),
    "-Infinity": raw_order("p", '{"order_id": "o-p", "amount": -Infinity}'),
    # A lone surrogate escape decodes to text UTF-8 cannot encode.
    "lone-surrogate": raw_order("p", '{"order_id": "o-p", "note": "\\ud800"}'),
}


@pytest.mark.parametrize("name", sorted(POISON_BODIES))
def test_a_poison_body_is_quarantined_alone_and_its_neighbours_are_processed(
    aws: Aws, name: str
) -> None:
    before, poison, after = (
        record(order_body("n1")),
        record(POISON_BODIES[name]),
        record(order_body("n2")),
    )
    response = run(aws, before, poison, after)
    assert failures(response) == set()
    assert rows(aws) == {"order-n1", "order-n2"}
    copy = dlq_copies(aws)[poison["messageId"]]
    assert copy["failure_kind"] in ("not_json", "schema")
    assert copy["failure_reason"]
    assert copy["body"] == POISON_BODIES[name]  # unchanged, so a redrive replays it


def test_a_body_at_the_size_limit_is_processed_and_one_byte_more_is_oversize(aws: Aws) -> None:
    """256 KiB: the runtime's body limit (an SNS message and a 400 KB item can hold it)."""

    def padded(event_id: str, size: int) -> str:
        body = order_body(event_id, note="")
        return order_body(event_id, note="x" * (size - len(body)))

    at_limit = record(padded("big", 256 * 1024))
    over = record(padded("bigger", 256 * 1024 + 1))
    response = run(aws, at_limit, over)
    assert failures(response) == set()
    assert rows(aws) == {"order-big"}
    assert dlq_copies(aws)[over["messageId"]]["failure_kind"] == "oversize"


class Boom(Exception):
    """An exception type the runtime has never heard of."""


@pytest.mark.parametrize(
    "error", [Boom("x"), ZeroDivisionError("x"), RuntimeError("x"), OverflowError("x")]
)
@pytest.mark.parametrize("plugin", ["writes", "notification"])
def test_any_exception_from_a_plugin_fails_only_its_own_record(
    aws: Aws, error: Exception, plugin: str
) -> None:
    def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        if plugin == "writes" and message["event_id"] == "bad":
            raise error
        return order_writes(message, ctx)

    def notification(message: Any, event_id: str) -> Any:
        if plugin == "notification" and event_id == "bad":
            raise error
        return order_notification(message, event_id)

    consumer = Consumer(writes=writes, notification=notification, namespace="order")
    good1, bad, good2 = (record(order_body(e)) for e in ("g1", "bad", "g2"))
    response = run(aws, good1, bad, good2, consumer=consumer)
    # Unexpected, possibly transient: reported failed for that record alone, nothing written.
    assert failures(response) == {bad["messageId"]}
    assert rows(aws) == {"order-g1", "order-g2"}
    assert {n["event_id"] for n in aws.notifications()} == {"g1", "g2"}


def test_a_failing_plugin_on_fifo_holds_back_only_its_own_group(aws: Aws) -> None:
    def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        if message["event_id"] == "a1":
            raise Boom("x")
        return order_writes(message, ctx)

    consumer = Consumer(writes=writes, notification=order_notification, namespace="order")
    a1, b1, a2, b2 = (
        record(order_body(e), group_id=e[0], fifo=True) for e in ("a1", "b1", "a2", "b2")
    )
    response = run(aws, a1, b1, a2, b2, consumer=consumer, source_fifo=True)
    assert failures(response) == {a1["messageId"], a2["messageId"]}
    assert rows(aws) == {"order-b1", "order-b2"}


# --- 2. FIFO order holds for notifications ----------------------------------------------------
def published_in_order(world: Aws) -> list[str]:
    """Event ids SNS acknowledged, in the order the client saw the acknowledgements (register
    response rewrites BEFORE calling this: after-call handlers run in registration order)."""
    acked: list[str] = []
    sent: dict[str, str] = {}

    def remember(params: dict[str, Any], **_: Any) -> None:
        for entry in params.get("PublishBatchRequestEntries", []):
            sent[entry["Id"]] = json.loads(entry["Message"])["event_id"]

    def collect(parsed: dict[str, Any], **_: Any) -> None:
        acked.extend(sent[ok["Id"]] for ok in parsed.get("Successful", []))

    world.sns.meta.events.register("before-parameter-build.sns.PublishBatch", remember)
    world.sns.meta.events.register("after-call.sns.PublishBatch", collect)
    return acked


def test_a_failed_publish_entry_holds_back_later_notifications_of_its_group(aws: Aws) -> None:
    first_call: list[int] = []

    def fail_first_entry(parsed: dict[str, Any]) -> None:
        # PublishBatch answers per entry: the group's first entry fails (transient), once.
        if first_call:
            return
        first_call.append(1)
        ok = parsed["Successful"]
        victim = ok[0]["Id"]
        parsed["Successful"] = ok[1:]
        parsed["Failed"] = [
            {"Id": victim, "Code": "InternalError", "Message": "x", "SenderFault": False}
        ]

    rewrite_parsed(aws.sns, "PublishBatch", fail_first_entry)
    acked = published_in_order(aws)
    e1, e2, other = (
        record(order_body("e1"), group_id="g", fifo=True),
        record(order_body("e2"), group_id="g", fifo=True),
        record(order_body("o1"), group_id="h", fifo=True),
    )
    response = run(aws, e1, e2, other, source_fifo=True)
    assert failures(response) == {e1["messageId"], e2["messageId"]}
    assert "e2" not in acked  # never published before e1
    claims = {c["event_id"]["S"]: c["status"]["S"] for c in aws.claims()}
    assert claims["e2"] == env.STATUS_PENDING  # and never marked sent before e1
    response = run(aws, e1, e2, source_fifo=True)  # the redelivery
    assert failures(response) == set()
    assert acked.index("e1") < acked.index("e2")


def test_a_failed_publish_call_holds_back_later_chunks_of_its_group(aws: Aws) -> None:
    """More than 10 notifications of one group need several PublishBatch calls: when the
    first call fails (after botocore's 3 attempts), nothing later of the group goes out."""
    acked = published_in_order(aws)
    fail_sends(aws.sns, "PublishBatch", 3)
    records = [record(order_body(f"e{i:02d}"), group_id="g", fifo=True) for i in range(11)]
    response = run(aws, *records, source_fifo=True)
    assert failures(response) == {r["messageId"] for r in records}
    assert acked == []
    statuses = {c["status"]["S"] for c in aws.claims()}
    assert statuses == {env.STATUS_PENDING}


def test_a_poison_record_that_cannot_be_quarantined_holds_back_its_group(aws: Aws) -> None:
    acked = published_in_order(aws)
    fail_sends(aws.sqs, "SendMessageBatch", 3)
    poison = record("not json", group_id="g", fifo=True)
    later = record(order_body("g2"), group_id="g", fifo=True)
    other = record(order_body("h1"), group_id="h", fifo=True)
    response = run(aws, poison, later, other, source_fifo=True)
    assert failures(response) == {poison["messageId"], later["messageId"]}
    assert rows(aws) == {"order-h1"}  # nothing later of group g written...
    assert acked == ["h1"]  # ...or published in this invocation


def test_a_quarantined_record_is_never_reported_failed_again(aws: Aws) -> None:
    """Two poison records of one group in one SendMessageBatch: the first entry fails, the
    second is in the DLQ. Reporting the second failed too would quarantine it twice."""

    def first_entry_fails(parsed: dict[str, Any]) -> None:
        ok = parsed.get("Successful", [])
        if len(ok) == 2:
            parsed["Successful"] = ok[1:]
            parsed["Failed"] = [
                {"Id": ok[0]["Id"], "Code": "InternalError", "SenderFault": False, "Message": "x"}
            ]

    rewrite_parsed(aws.sqs, "SendMessageBatch", first_entry_fails)
    p1 = record("not json 1", group_id="g", fifo=True)
    p2 = record("not json 2", group_id="g", fifo=True)
    response = run(aws, p1, p2, source_fifo=True)
    assert p2["messageId"] not in failures(response)


# --- 3. a committed record is never labelled poison -------------------------------------------
def test_a_transient_sns_refusal_after_commit_leaves_the_claim_pending_for_redelivery(
    aws: Aws,
) -> None:
    fail_sends(aws.sns, "PublishBatch", 3)
    rec = record(order_body("t1"))
    response = run(aws, rec)
    assert failures(response) == {rec["messageId"]}
    assert aws.dlq_messages() == []
    assert [c["status"]["S"] for c in aws.claims()] == [env.STATUS_PENDING]
    assert failures(run(aws, rec)) == set()  # the redelivery publishes it
    assert [c["status"]["S"] for c in aws.claims()] == [env.STATUS_SENT]


def test_a_permanent_sns_refusal_after_commit_is_an_owed_notification(aws: Aws) -> None:
    """SNS refuses a whole PublishBatch with InvalidParameter (a 400 that no redelivery cures);
    the row IS written, so the DLQ copy must say so under its own kind."""

    def invalid(_request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 400, {"Error": {"Code": "InvalidParameter", "Message": "bad attribute"}}

    answer_with(aws.sns, "PublishBatch", invalid)
    rec = record(order_body("owed1"))
    response = run(aws, rec)
    assert failures(response) == set()
    copy = dlq_copies(aws)[rec["messageId"]]
    assert copy["failure_kind"] == "notification_owed"
    assert "WAS applied" in copy["failure_reason"]
    assert copy["event_id"] == "owed1"
    assert rows(aws) == {"order-owed1"}
    claim = aws.claims()[0]
    assert claim["status"]["S"] == env.STATUS_PENDING
    assert "owed_notification" in claim


# --- 4. event id provenance survives the DLQ ------------------------------------------------
def test_the_event_id_attribute_survives_quarantine_among_many_attributes_and_redrives(
    aws: Aws,
) -> None:
    """SQS allows 10 message attributes; ours take 6. The producer's 9 others must give way
    to the one the event id comes from, and the copy lists what was dropped."""
    broken = {"on": True}

    def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        if broken["on"]:
            raise SchemaError("amount must be positive")
        return order_writes(message, ctx)

    consumer = Consumer(
        writes=writes,
        notification=order_notification,
        event_id=EventIdFromAttribute("z-idem"),
        namespace="order",
    )
    attributes = {f"a{i}": f"v{i}" for i in range(9)} | {"z-idem": "attr-1"}
    rec = record(json.dumps({"order": {"order_id": "o-attr"}}), attributes=attributes)
    assert failures(run(aws, rec, consumer=consumer)) == set()
    [message] = aws.dlq_messages()
    kept = message["MessageAttributes"]
    assert len(kept) <= 10
    assert kept["z-idem"]["StringValue"] == "attr-1"
    assert kept["event_id"]["StringValue"] == "attr-1"  # extracted before writes() failed
    assert set(kept["dropped_attributes"]["StringValue"].split(",")) == {
        f"a{i}" for i in range(9)
    } - set(kept)
    # Redrive after the fix: the DLQ copy comes back as a source message.
    broken["on"] = False
    redriven = record(
        message["Body"],
        attributes={k: v["StringValue"] for k, v in kept.items()},
    )
    assert failures(run(aws, redriven, consumer=consumer)) == set()
    assert rows(aws) == {"o-attr"}


def test_every_dlq_copy_carries_the_event_id_when_a_plugin_rejected_the_message(
    aws: Aws,
) -> None:
    rec = record(json.dumps({"event_id": "body-1", "order": {"no_order_id": 1}}))
    assert failures(run(aws, rec)) == set()
    copy = dlq_copies(aws)[rec["messageId"]]
    assert copy["failure_kind"] == "schema"
    assert copy["event_id"] == "body-1"


# --- 5. key limits in UTF-8 bytes -------------------------------------------------------------
def test_a_sort_key_over_1024_utf8_bytes_is_an_invalid_event_id_before_any_call(
    aws: Aws,
) -> None:
    """DynamoDB: sort key <= 1,024 bytes. 400 x 'あ' is 400 characters but 1,200 bytes."""
    consumer = Consumer(
        writes=lambda message, ctx: [],
        namespace="charge",
        tenant=lambda message: message["tenant"],
    )
    long_id = record(json.dumps({"event_id": "あ" * 400, "tenant": "t1"}))
    fits = record(json.dumps({"event_id": "あ" * 300, "tenant": "t1"}))  # 7 + 900 bytes
    response = run(
        aws,
        long_id,
        fits,
        consumer=consumer,
        key_layout=env.LAYOUT_TENANT,
        state_table=TENANT_STATE_TABLE,
        topic_arn=None,
    )
    assert failures(response) == set()
    copy = dlq_copies(aws)[long_id["messageId"]]
    assert copy["failure_kind"] == "invalid_event_id"
    assert "1207 bytes" in copy["failure_reason"] and "1024" in copy["failure_reason"]
    assert aws.calls.count("TransactWriteItems") == 1
    assert len(aws.claims(TENANT_STATE_TABLE)) == 1


def test_a_partition_key_is_limited_to_2048_utf8_bytes_not_512_characters(aws: Aws) -> None:
    ascii_1000 = record(order_body("x" * 1000))  # 1,000 bytes: a valid DynamoDB key
    wide = record(order_body("é" * 1100))  # 1,100 characters, 2,200 bytes
    response = run(aws, ascii_1000, wide)
    assert failures(response) == set()
    assert rows(aws) == {"order-" + "x" * 1000}
    copy = dlq_copies(aws)[wide["messageId"]]
    assert copy["failure_kind"] == "invalid_event_id"
    assert "2200 bytes" in copy["failure_reason"]


# --- 6. requests valid on real DynamoDB -------------------------------------------------------
def test_status_reads_use_a_projection_dynamodb_accepts(aws: Aws) -> None:
    """Without ALL_OLD items in the cancellation, duplicates read their status with one
    BatchGetItem. DynamoDB rejects a projection naming event_id twice (moto does not)."""
    refused = strict_dynamodb(aws.dynamodb)
    rec = record(order_body("d1"))
    assert failures(run(aws, rec)) == set()

    def drop_items(parsed: dict[str, Any]) -> None:
        for reason in parsed.get("CancellationReasons", []):
            reason.pop("Item", None)

    rewrite_parsed(aws.dynamodb, "TransactWriteItems", drop_items)
    response = run(aws, record(order_body("d1")))
    assert failures(response) == set()
    assert "BatchGetItem" in aws.calls
    assert refused == []


def test_a_permanent_cancellation_reason_on_the_claim_is_not_blamed_on_a_business_item(
    aws: Aws,
) -> None:
    def cancel_claim(_request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 400, {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "CancellationReasons": [{"Code": "ValidationError", "Message": "bad claim"}],
        }

    answer_with(aws.dynamodb, "TransactWriteItems", cancel_claim)
    consumer = Consumer(writes=lambda message, ctx: [], namespace="order")
    rec = record(json.dumps({"event_id": "c1"}))
    response = run(aws, rec, consumer=consumer, topic_arn=None)
    assert failures(response) == set()
    copy = dlq_copies(aws)[rec["messageId"]]
    assert copy["failure_kind"] == "schema"
    assert "claim write was cancelled: ValidationError" in copy["failure_reason"]


def test_a_body_sqs_could_never_carry_fails_alone_instead_of_failing_the_dlq_call(
    aws: Aws,
) -> None:
    """Found by the fuzz target: text with a lone surrogate cannot be encoded for the DLQ
    request. It stays in SQS (its redrive policy moves it); its poison neighbour is still
    quarantined and the healthy one processed."""
    odd = record("\udc80 not text")
    poison = record("not json")
    good = record(order_body("u1"))
    response = run(aws, odd, poison, good)
    assert failures(response) == {odd["messageId"]}
    assert set(dlq_copies(aws)) == {poison["messageId"]}
    assert rows(aws) == {"order-u1"}


def test_a_body_of_the_sqs_maximum_size_ends_alone_and_neighbours_are_processed(
    aws: Aws,
) -> None:
    """SQS accepts bodies up to 1 MiB; the runtime's limit is 256 KiB (an SNS message and a
    400 KB item must hold it), so a 1 MiB body is oversize poison. SQS counts attributes toward
    the 1 MiB too, so no DLQ can hold it with a reason: it is reported failed alone (SQS's
    redrive policy moves it unchanged; the log line says why), its neighbours processed."""
    body = order_body("huge", note="")
    huge = record(order_body("huge", note="x" * (1024 * 1024 - len(body))))
    assert len(huge["body"].encode()) == 1024 * 1024
    before, after = record(order_body("s1")), record(order_body("s2"))
    response = run(aws, before, huge, after)
    assert failures(response) == {huge["messageId"]}
    assert rows(aws) == {"order-s1", "order-s2"}
    assert huge["messageId"] not in dlq_copies(aws)  # never sent for SQS to refuse
