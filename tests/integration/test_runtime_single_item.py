"""Claims kept in the business item (SingleItemEffect): every branch against moto, with the
transaction items and AWS calls each costs. The crash x duplicate enumerations run for this
placement too (test_runtime_crashes.py, test_runtime_enumeration.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handlers.orders import order_notification, order_writes
from idempotent_messaging.runtime import Consumer, SingleItemEffect, WriteContext, env
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    STATE_TABLE,
    Aws,
    FakeContext,
    assert_exactly_once,
    order_body,
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


def test_ten_fresh_events_cost_one_transactional_item_each_and_three_calls(world: Aws) -> None:
    """The claim is the row's own condition: ONE transactional write per record (2 write
    units) instead of two (claim + row: 4)."""
    sizes = transaction_sizes(world)
    records = [record(order_body(f"e{i}")) for i in range(10)]
    assert run(world, *records) == {"batchItemFailures": []}
    assert world.calls == ["TransactWriteItems", "PublishBatch", "BatchExecuteStatement"]
    assert sizes == [10]
    assert_exactly_once(world, {f"e{i}": f"order-e{i}" for i in range(10)})
    row = world.order_rows()[0]
    assert row[env.ITEM_CLAIM_STATUS] == {"S": env.STATUS_SENT}
    assert {"claim_message_id", "claim_sent_at", "claim_notification_id"} <= set(row)
    assert "ttl" not in row  # the claim lives as long as the row
    assert world.dynamodb.scan(TableName=STATE_TABLE)["Items"] == []


def test_a_resent_event_is_skipped_with_one_call_from_the_returned_row(world: Aws) -> None:
    rec = record(order_body("e1"))
    run(world, rec)
    again = record(order_body("e1"))
    assert run(world, again) == {"batchItemFailures": []}
    assert world.calls == ["TransactWriteItems"]  # ALL_OLD carries the row: no read
    notes = assert_exactly_once(world, {"e1": "order-e1"})
    assert len(notes) == 1


def test_a_pending_row_is_republished_then_marked_sent(world: Aws) -> None:
    rec = record(order_body("e1"))
    response = run(world, rec)
    assert response == {"batchItemFailures": []}
    # Put the row back to pending: the first delivery died between commit and publish.
    world.dynamodb.update_item(
        TableName=BUSINESS_TABLE,
        Key={"order_id": {"S": "order-e1"}},
        UpdateExpression="SET #s = :p",
        ExpressionAttributeNames={"#s": env.ITEM_CLAIM_STATUS},
        ExpressionAttributeValues={":p": {"S": env.STATUS_PENDING}},
    )
    assert run(world, rec) == {"batchItemFailures": []}
    assert world.calls == ["TransactWriteItems", "PublishBatch", "BatchExecuteStatement"]
    notes = assert_exactly_once(world, {"e1": "order-e1"})
    assert len(notes) == 2  # at-least-once


def test_another_event_for_a_recorded_order_is_quarantined_as_semantic(world: Aws) -> None:
    run(world, record(order_body("e1", order_id="o1")))
    clash = record(order_body("e2", order_id="o1"))
    fresh = record(order_body("e3"))
    assert run(world, clash, fresh) == {"batchItemFailures": []}
    kind, reason = dlq_kinds(world)[clash["messageId"]]
    assert kind == "semantic" and "another event" in reason
    rows = {r["order_id"]["S"]: r[env.ITEM_CLAIM_EVENT_ID]["S"] for r in world.order_rows()}
    assert rows == {"o1": "e1", "order-e3": "e3"}


def test_two_events_for_one_order_in_one_batch_write_one_row_and_quarantine_the_other(
    world: Aws,
) -> None:
    """A transaction may not touch one item twice: DynamoDB refuses it as a whole, the
    runtime falls back to one transaction per record, and the second meets the first's row."""
    first = record(order_body("e1", order_id="o1"))
    second = record(order_body("e2", order_id="o1"))
    assert run(world, first, second) == {"batchItemFailures": []}
    rows = {r["order_id"]["S"]: r[env.ITEM_CLAIM_EVENT_ID]["S"] for r in world.order_rows()}
    assert rows == {"o1": "e1"}
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
        effect=SingleItemEffect(key=("order_id",)),
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
            "lacks the key attributes ['order_id']",
        ),
        (
            lambda m, ctx: [
                {
                    "Put": {
                        "TableName": ctx.business_table,
                        "Item": {"order_id": {"S": "o"}, "claim_status": {"S": "sent"}},
                    }
                }
            ],
            "sets the runtime's claim attributes ['claim_status']",
        ),
        (
            lambda m, ctx: [{"Put": {"TableName": "other", "Item": {"order_id": {"S": "o"}}}}],
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
