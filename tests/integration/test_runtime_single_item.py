"""Claims kept in the business item (SingleItemEffect): every branch against moto, with the
transaction items and AWS calls each costs. The crash x duplicate enumerations run for this
placement too (test_runtime_crashes.py, test_runtime_enumeration.py)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from handlers.orders import ORDER_KEY, order_notification, order_writes
from idempotent_messaging.runtime import Consumer, SingleItemEffect, WriteContext, env
from tests.integration.runtime_faults import answer_with, rewrite_parsed
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    STATE_TABLE,
    Aws,
    FakeContext,
    assert_exactly_once,
    order_body,
    put_legacy_row,
    record,
    single_item_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

ORDERS_IN_ITEM = single_item_orders()


@pytest.fixture
def world(aws: Aws) -> Aws:
    aws.claims_in_items = True
    return aws


def run(world: Aws, *records: dict[str, Any], consumer: Consumer = ORDERS_IN_ITEM) -> Any:
    world.reset_counts()
    return consumer.process(sqs_event(*records), FakeContext(), world.runtime())


def transaction_sizes(world: Aws) -> list[int]:
    sizes: list[int] = []
    world.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.TransactWriteItems",
        lambda params, **_: sizes.append(len(params["TransactItems"])),
    )
    return sizes


def dlq_kinds(world: Aws) -> dict[str, tuple[str, str]]:
    out = {}
    for m in world.dlq_messages():
        attrs = {k: v["StringValue"] for k, v in m["MessageAttributes"].items()}
        out[attrs["original_message_id"]] = (attrs["failure_kind"], attrs["failure_reason"])
    return out


def inserts(world: Aws) -> list[list[str]]:
    """The statements of every BatchExecuteStatement the runtime sends, per call."""
    sent: list[list[str]] = []
    world.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.BatchExecuteStatement",
        lambda params, **_: sent.append([s["Statement"] for s in params["Statements"]]),
    )
    return sent


def test_ten_fresh_events_cost_one_insert_each_and_three_calls(world: Aws) -> None:
    """Standard queue: the claim is the row's own key; ONE PartiQL INSERT per record (1 write
    unit) in one BatchExecuteStatement, no transaction (2 units per item)."""
    sizes = transaction_sizes(world)
    statements = inserts(world)
    records = [record(order_body(f"e{i}")) for i in range(10)]
    assert run(world, *records) == {"batchItemFailures": []}
    # The published events go into ONE receipt item of the state table (PutItem), never one
    # UPDATE per row: 1 write unit per message plus 1 per batch.
    assert world.calls == ["BatchExecuteStatement", "PublishBatch", "PutItem"]
    assert sizes == []
    assert [[s.split()[0] for s in call] for call in statements] == [["INSERT"] * 10]
    assert_exactly_once(world, {f"e{i}": f"order-e{i}" for i in range(10)})
    row = world.order_rows()[0]
    assert row[env.ITEM_CLAIM_STATUS] == {"S": env.STATUS_PENDING}  # the receipt says sent
    assert {"claim_message_id", env.ITEM_CLAIM_RECEIPT} <= set(row)
    assert "ttl" not in row  # the claim lives as long as the row
    (receipt,) = world.dynamodb.scan(TableName=STATE_TABLE)["Items"]
    assert receipt[env.EVENT_ID_KEY]["S"] == row[env.ITEM_CLAIM_RECEIPT]["S"]
    assert set(receipt[env.RECEIPT_PUBLISHED]["SS"]) == {f"e{i}" for i in range(10)}
    assert "ttl" not in receipt  # like the claim in the row: no TTL


def test_on_a_fifo_queue_the_claims_keep_one_transaction(world: Aws) -> None:
    """FIFO: all-or-nothing keeps a group's order (statements fail one by one)."""
    sizes = transaction_sizes(world)
    records = [record(order_body(f"e{i}"), group_id="g") for i in range(10)]
    batch = sqs_event(*records)
    response = ORDERS_IN_ITEM.process(batch, FakeContext(), world.runtime(source_fifo=True))
    assert response == {"batchItemFailures": []}
    assert world.calls[0] == "TransactWriteItems" and sizes == [10]
    assert_exactly_once(world, {f"e{i}": f"order-e{i}" for i in range(10)})


def test_a_resent_event_is_skipped_with_two_calls(world: Aws) -> None:
    rec = record(order_body("e1"))
    run(world, rec)
    again = record(order_body("e1"))
    assert run(world, again) == {"batchItemFailures": []}
    # DuplicateItem refuses the INSERT; one consistent read of the row names its receipt,
    # one of the receipt lists it: published.
    assert world.calls == ["BatchExecuteStatement", "BatchGetItem", "BatchGetItem"]
    notes = assert_exactly_once(world, {"e1": "order-e1"})
    assert len(notes) == 1


def test_a_refusal_carrying_the_row_needs_no_read(world: Aws) -> None:
    """If DynamoDB returns the existing item with the refusal (ALL_OLD), it is used."""
    run(world, record(order_body("e1")))
    row = world.order_rows()[0]

    def carry(parsed: dict[str, Any]) -> None:
        for answer in parsed.get("Responses", []):
            if answer.get("Error", {}).get("Code") == "DuplicateItem":
                answer["Error"]["Item"] = row

    rewrite_parsed(world.dynamodb, "BatchExecuteStatement", carry)
    assert run(world, record(order_body("e1"))) == {"batchItemFailures": []}
    assert world.calls == ["BatchExecuteStatement", "BatchGetItem"]  # the receipt only
    assert len(assert_exactly_once(world, {"e1": "order-e1"})) == 1


def test_a_resent_event_with_a_fifo_source_is_skipped_with_one_call(world: Aws) -> None:
    rec = record(order_body("e1"), group_id="g")
    runtime = world.runtime(source_fifo=True)
    ORDERS_IN_ITEM.process(sqs_event(rec), FakeContext(), runtime)
    world.reset_counts()
    again = record(order_body("e1"), group_id="g")
    assert ORDERS_IN_ITEM.process(sqs_event(again), FakeContext(), runtime) == {
        "batchItemFailures": []
    }
    # ALL_OLD carries the row: no read of it, one of its receipt.
    assert world.calls == ["TransactWriteItems", "BatchGetItem"]
    assert len(assert_exactly_once(world, {"e1": "order-e1"})) == 1


def test_a_pending_row_is_republished_then_marked_sent(world: Aws) -> None:
    rec = record(order_body("e1"))
    response = run(world, rec)
    assert response == {"batchItemFailures": []}
    # A row written before receipts, pending: the first delivery died between commit and
    # publish (old claims keep working).
    world.dynamodb.update_item(
        TableName=BUSINESS_TABLE,
        Key={ORDER_KEY: {"S": "e1"}},
        UpdateExpression="SET #s = :p REMOVE #r",
        ExpressionAttributeNames={"#s": env.ITEM_CLAIM_STATUS, "#r": env.ITEM_CLAIM_RECEIPT},
        ExpressionAttributeValues={":p": {"S": env.STATUS_PENDING}},
    )
    assert run(world, rec) == {"batchItemFailures": []}
    assert world.calls == [
        "BatchExecuteStatement",
        "BatchGetItem",
        "PublishBatch",
        "BatchExecuteStatement",
    ]
    notes = assert_exactly_once(world, {"e1": "order-e1"})
    assert len(notes) == 2  # at-least-once


def _statement_errors(world: Aws, codes: dict[str, list[str]]) -> None:
    """Answer the INSERT of an event with the next code in ``codes[event]`` (unapplied), as
    DynamoDB answers one statement of a BatchExecuteStatement; the rest run on moto."""
    # A client of its own: the world's client counts the runtime's calls only.
    plain = boto3.client("dynamodb", region_name=world.dynamodb.meta.region_name)

    def make(params: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        statements = json.loads(params["body"])["Statements"]
        if not statements[0]["Statement"].startswith("INSERT"):
            return None
        answers: list[dict[str, Any] | None] = []
        through = []
        for statement in statements:
            event = next((p["S"] for p in statement["Parameters"] if p.get("S") in codes), None)
            if event is not None and codes[event]:
                code = codes[event].pop(0)
                answers.append({"Error": {"Code": code, "Message": f"injected {code}"}})
            else:
                answers.append(None)
                through.append(statement)
        if len(through) == len(statements):
            return None
        real = plain.batch_execute_statement(Statements=through)["Responses"] if through else []
        return 200, {"Responses": [a if a is not None else real.pop(0) for a in answers]}

    answer_with(world.dynamodb, "BatchExecuteStatement", make)


def test_a_throttled_statement_alone_is_retried_and_the_rest_commit_once(world: Aws) -> None:
    _statement_errors(world, {"e1": ["ThrottlingError", "ProvisionedThroughputExceeded"]})
    statements = inserts(world)
    records = [record(order_body(f"e{i}")) for i in range(3)]
    assert run(world, *records) == {"batchItemFailures": []}
    # botocore retries calls, never one statement: the runtime re-sends e1's INSERT alone.
    assert [len(call) for call in statements] == [3, 1, 1]  # then ONE receipt (PutItem)
    assert_exactly_once(world, {f"e{i}": f"order-e{i}" for i in range(3)})


def test_a_statement_throttled_on_every_attempt_fails_only_its_record(world: Aws) -> None:
    _statement_errors(world, {"e1": ["ThrottlingError"] * 3})
    records = [record(order_body(f"e{i}")) for i in range(3)]
    response = run(world, *records)
    assert response == {"batchItemFailures": [{"itemIdentifier": records[1]["messageId"]}]}
    rows = {r["order_id"]["S"] for r in world.order_rows()}
    assert rows == {"order-e0", "order-e2"}
    # Redelivered without the fault: written once.
    assert run(world, records[1]) == {"batchItemFailures": []}
    assert_exactly_once(world, {f"e{i}": f"order-e{i}" for i in range(3)})


def test_a_statement_refused_as_invalid_is_schema_poison_alone(world: Aws) -> None:
    _statement_errors(world, {"e1": ["ValidationError"]})
    records = [record(order_body(f"e{i}")) for i in range(3)]
    assert run(world, *records) == {"batchItemFailures": []}
    kind, reason = dlq_kinds(world)[records[1]["messageId"]]
    assert kind == "schema" and "ValidationError" in reason
    assert {r["order_id"]["S"] for r in world.order_rows()} == {"order-e0", "order-e2"}


def test_access_denied_on_a_statement_is_left_to_redelivery_not_quarantined(world: Aws) -> None:
    """A deployment problem (the grant lacks PartiQLInsert) is no property of the message."""
    _statement_errors(world, {"e0": ["AccessDenied"]})
    rec = record(order_body("e0"))
    assert run(world, rec) == {"batchItemFailures": [{"itemIdentifier": rec["messageId"]}]}
    assert world.dlq_messages() == [] and world.order_rows() == []


def test_a_whole_call_refused_falls_back_to_one_transaction_per_record(world: Aws) -> None:
    answer_with(
        world.dynamodb,
        "BatchExecuteStatement",
        lambda params: (
            (400, {"Error": {"Code": "ValidationException", "Message": "bad statement"}})
            if json.loads(params["body"])["Statements"][0]["Statement"].startswith("INSERT")
            else None
        ),
    )
    records = [record(order_body(f"e{i}")) for i in range(2)]
    assert run(world, *records) == {"batchItemFailures": []}
    assert world.calls.count("TransactWriteItems") == 2
    assert_exactly_once(world, {"e0": "order-e0", "e1": "order-e1"})


def test_a_row_deleted_between_refusal_and_read_is_retried_not_poisoned(world: Aws) -> None:
    run(world, record(order_body("e1")))

    def vanish(params: dict[str, Any], **_: Any) -> None:
        world.dynamodb.delete_item(TableName=BUSINESS_TABLE, Key={ORDER_KEY: {"S": "e1"}})

    world.dynamodb.meta.events.register("before-call.dynamodb.BatchGetItem", vanish)
    rec = record(order_body("e1"))
    assert run(world, rec) == {"batchItemFailures": [{"itemIdentifier": rec["messageId"]}]}
    assert world.dlq_messages() == []


def test_a_condition_beyond_key_absence_keeps_the_transaction(world: Aws) -> None:
    def guarded(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        (put,) = order_writes(message, ctx)
        put["Put"]["ConditionExpression"] = f"attribute_not_exists({ORDER_KEY}) OR amount < :cap"
        put["Put"]["ExpressionAttributeValues"] = {":cap": {"N": "0"}}
        return [put]

    assert run(world, record(order_body("e1")), consumer=_consumer(guarded)) == {
        "batchItemFailures": []
    }
    assert world.calls[0] == "TransactWriteItems"
    assert_exactly_once(world, {"e1": "order-e1"})


def _prefix_key(event_id: str) -> dict[str, str]:
    """A derivation that is not one-to-one: ``o1/e1`` and ``o1/e2`` name one item ``o1``."""
    return {ORDER_KEY: event_id.split("/")[0]}


def _prefix_writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    (put,) = order_writes(message, ctx)
    put["Put"]["Item"][ORDER_KEY] = {"S": ctx.event_id.split("/")[0]}
    return [put]


PREFIX_KEYED = Consumer(
    writes=_prefix_writes,
    notification=order_notification,
    effect=SingleItemEffect(key=(ORDER_KEY,), key_of_event=_prefix_key),
)


def test_another_event_for_a_recorded_item_is_quarantined_as_semantic(world: Aws) -> None:
    """Two event ids whose declared derivation names one item: the later meets the earlier's
    claim in it and is a semantic failure, never a duplicate."""
    run(world, record(order_body("o1/e1")), consumer=PREFIX_KEYED)
    clash = record(order_body("o1/e2"))
    fresh = record(order_body("o3/e3"))
    assert run(world, clash, fresh, consumer=PREFIX_KEYED) == {"batchItemFailures": []}
    kind, reason = dlq_kinds(world)[clash["messageId"]]
    assert kind == "semantic" and "another event" in reason
    rows = {r[ORDER_KEY]["S"]: r[env.ITEM_CLAIM_EVENT_ID]["S"] for r in world.order_rows()}
    assert rows == {"o1": "o1/e1", "o3": "o3/e3"}


def test_a_row_recorded_before_the_declaration_is_a_semantic_failure(world: Aws) -> None:
    put_legacy_row(world, "e1")
    rec = record(order_body("e1"))
    assert run(world, rec) == {"batchItemFailures": []}
    assert dlq_kinds(world)[rec["messageId"]][0] == "semantic"
    assert world.order_rows() == [{ORDER_KEY: {"S": "e1"}, "order_id": {"S": "legacy"}}]


def test_two_events_for_one_item_in_one_batch_write_one_row_and_quarantine_the_other(
    world: Aws,
) -> None:
    """Never two statements on one item in a call: the second INSERT goes in a later call,
    where the first's row refuses it and names another event."""
    statements = inserts(world)
    first = record(order_body("o1/e1"))
    second = record(order_body("o1/e2"))
    assert run(world, first, second, consumer=PREFIX_KEYED) == {"batchItemFailures": []}
    assert [len(call) for call in statements[:2]] == [1, 1]
    rows = {r[ORDER_KEY]["S"]: r[env.ITEM_CLAIM_EVENT_ID]["S"] for r in world.order_rows()}
    assert rows == {"o1": "o1/e1"}
    assert dlq_kinds(world)[second["messageId"]][0] == "semantic"


def test_the_same_event_twice_in_one_batch_is_one_row_and_one_notification(world: Aws) -> None:
    body = order_body("e1")
    response = run(world, record(body), record(body))
    assert response == {"batchItemFailures": []}
    notes = assert_exactly_once(world, {"e1": "order-e1"})
    assert len(notes) == 1


def _consumer(writes: Any) -> Consumer:
    return Consumer(
        writes=writes,
        notification=order_notification,
        namespace="order",
        effect=SingleItemEffect.keyed_by_event_id(ORDER_KEY),
    )


@pytest.mark.parametrize(
    ("writes", "reason"),
    [
        (lambda m, ctx: order_writes(m, ctx) * 2, "returned 2 items; a single-item consumer"),
        (
            lambda m, ctx: [{"Update": {"TableName": ctx.business_table, "Key": {}}}],
            "returned 1 items; a single-item consumer returns one Put",
        ),
        (
            lambda m, ctx: [
                {"Put": {"TableName": ctx.business_table, "Item": {"amount": {"N": "1"}}}}
            ],
            "lacks the key attributes ['event_id']",
        ),
        (
            lambda m, ctx: [
                {
                    "Put": {
                        "TableName": ctx.business_table,
                        "Item": {ORDER_KEY: {"S": "e1"}, "claim_status": {"S": "sent"}},
                    }
                }
            ],
            "sets the runtime's claim attributes ['claim_status']",
        ),
        (
            lambda m, ctx: [{"Put": {"TableName": "other", "Item": {ORDER_KEY: {"S": "e1"}}}}],
            "must target BUSINESS_TABLE",
        ),
    ],
    ids=["two-items", "not-a-put", "no-key", "claim-attribute", "other-table"],
)
def test_writes_that_break_the_single_item_declaration_are_schema_poison(
    world: Aws, writes: Any, reason: str
) -> None:
    rec = record(order_body("e1"))
    assert run(world, rec, consumer=_consumer(writes)) == {"batchItemFailures": []}
    kind, why = dlq_kinds(world)[rec["messageId"]]
    assert kind == "schema" and reason in why
    assert world.order_rows() == []


def test_the_declaration_names_one_or_two_key_attributes() -> None:
    with pytest.raises(ValueError, match="partition key"):
        SingleItemEffect(key=())
    with pytest.raises(ValueError, match="reserved"):
        SingleItemEffect(key=("claim_status",))


def test_a_consumer_own_condition_failing_on_a_new_item_is_semantic(world: Aws) -> None:
    def guarded(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        (put,) = order_writes(message, ctx)
        put["Put"]["ConditionExpression"] = "attribute_exists(never_there)"
        return [put]

    rec = record(order_body("e1"))
    assert run(world, rec, consumer=_consumer(guarded)) == {"batchItemFailures": []}
    assert dlq_kinds(world)[rec["messageId"]][0] == "semantic"
    assert world.order_rows() == []


def test_an_owed_notification_is_kept_on_the_row(world: Aws) -> None:
    def refuse(**_: Any) -> dict[str, Any]:
        return {
            "Successful": [],
            "Failed": [
                {"Id": "r0", "Code": "InvalidParameter", "Message": "no", "SenderFault": True}
            ],
        }

    world.sns.publish_batch = refuse
    rec = record(order_body("e1"))
    assert run(world, rec) == {"batchItemFailures": []}
    assert dlq_kinds(world)[rec["messageId"]][0] == "notification_owed"
    (row,) = world.order_rows()
    assert row[env.ITEM_CLAIM_STATUS] == {"S": env.STATUS_PENDING}
    owed = row[env.ITEM_CLAIM_OWED]["M"]
    assert json.loads(owed["message"]["S"])["event_id"] == "e1"
