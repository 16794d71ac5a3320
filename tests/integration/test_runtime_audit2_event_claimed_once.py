"""Issue 22, item 1: an event id is claimed once, whatever else its body says.

AWS facts:
* SQS delivers at least once and a producer re-send is a new message (new messageId), so the
  only thing two copies of one event share is the producer's event id.
* A DynamoDB conditional write (``attribute_not_exists`` on the key, a PartiQL INSERT refusing
  an existing key with ``DuplicateItem``) guards ONE item: the item named by the key in the
  request. A claim kept in the business item therefore claims the EVENT only if the event id
  alone decides that key. Before this fix the orders row was keyed by ``order_id`` from the
  body: the same ``event_id`` re-sent with another ``order_id`` named another item, so it was
  written a second time and notified a second time, in separate batches, in one batch and on
  FIFO alike.

The decision: an in-item claim is accepted only where the consumer declares how the item's key
derives from the event id (``SingleItemEffect(key=..., key_of_event=...)``,
``SingleItemEffect.keyed_by_event_id``); the runtime refuses a Put whose key is not that
derivation (``schema`` poison naming the rule) and refuses a declaration without one at
construction. The reference orders row is keyed by the event (1 write unit per fresh message
for row and claim together); the charges declare their ledger key's derivation. With the
state-table claim the business keys are the consumer's own: an event whose business key is
already recorded fails its write's condition visibly (``semantic``), never a duplicate.
"""

from __future__ import annotations

from typing import Any

import pytest

from idempotent_messaging.runtime import (
    Consumer,
    SingleItemEffect,
    WriteContext,
    env,
    lambda_handler,
)
from tests.integration.test_runtime_audit2_world import attributes_of, entry_point
from tests.integration.test_runtime_world import (
    HANDLER_PLACEMENTS,
    Aws,
    invoke_handler,
    order_body,
    orders_handler,
    record,
    records_of,
)

pytestmark = pytest.mark.integration

USER_KEYED_TABLE = "orders_by_order_id"


def _effects(world: Aws) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the consumer's rows, the notifications delivered) so far."""
    rows = [r for r in world.order_rows() if "source_event_id" in r]
    return rows, world.notifications()


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@pytest.mark.parametrize("placement", sorted(HANDLER_PLACEMENTS))
@pytest.mark.parametrize("together", [False, True], ids=["separate-batches", "one-batch"])
def test_one_event_id_with_another_order_in_its_body_is_one_effect_and_one_notification(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, placement: str, fifo: bool, together: bool
) -> None:
    aws.claims_in_items = placement == "in-item"
    extra = {env.SOURCE_QUEUE_FIFO: "true"} if fifo else {}
    with entry_point(aws, monkeypatch, **extra):
        handler = HANDLER_PLACEMENTS[placement]()
        first, again = records_of(
            [order_body("evt-1", order_id="o-1"), order_body("evt-1", order_id="o-2")], fifo
        )
        if together:
            assert invoke_handler(handler, first, again) == {"batchItemFailures": []}
        else:
            assert invoke_handler(handler, first) == {"batchItemFailures": []}
            assert invoke_handler(handler, again) == {"batchItemFailures": []}
    rows, notes = _effects(aws)
    assert len(rows) == 1, f"the event evt-1 was applied {len(rows)} times"
    assert rows[0]["order_id"] == {"S": "o-1"}  # the first copy's effect stands
    assert [n["event_id"] for n in notes] == ["evt-1"]
    # Issue 27: other content under the same event id is a conflict, never a silent duplicate
    # (tests/integration/test_runtime_conflicts.py).
    (copy,) = aws.dlq_messages()
    assert attributes_of(copy)["failure_kind"] == "conflicting_duplicate"


def test_a_fresh_reference_order_costs_one_insert_for_row_and_claim(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1 write unit per fresh message for the claim: the row keyed by the event is the claim
    (a PartiQL INSERT, not a transaction, not a separate state-table item)."""
    statements: list[list[str]] = []
    with entry_point(aws, monkeypatch):
        from idempotent_messaging.runtime.clients import clients_from_env

        clients_from_env().dynamodb.meta.events.register(
            "before-parameter-build.dynamodb.*",
            lambda params, model, **_: statements.append(
                [s["Statement"].split()[0] for s in params.get("Statements", [])] or [model.name]
            ),
        )
        handler = orders_handler()
        assert invoke_handler(
            handler, *records_of([order_body(f"e{i}") for i in range(3)], False)
        ) == {"batchItemFailures": []}
    # Then ONE receipt for the batch (issue 26), the state table's only item: no claim there.
    assert statements == [["INSERT"] * 3, ["PutItem"]]
    items = aws.dynamodb.scan(TableName="processed_events")["Items"]
    assert [i["event_id"]["S"].split("#")[0] for i in items] == ["receipt"]


def test_a_single_item_declaration_without_a_key_derivation_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="key_of_event"):
        SingleItemEffect(key=("order_id",))
    by_event = SingleItemEffect.keyed_by_event_id("event_id").key_of_event
    with pytest.raises(ValueError, match="derives only"):
        SingleItemEffect(key=("order_id",), key_of_event=by_event)


def test_a_put_whose_key_is_not_the_declared_derivation_is_poison_naming_the_rule(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Declared keyed by the event, the Put keys the row by the body's order id: refused per
    record, quarantined with the rule, nothing written (never a silent skip)."""
    from handlers.orders import order_notification, order_writes

    def body_keyed(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        (put,) = order_writes(message, ctx)
        put["Put"]["Item"]["event_id"] = put["Put"]["Item"]["order_id"]
        return [put]

    consumer = Consumer(
        writes=body_keyed,
        notification=order_notification,
        effect=SingleItemEffect.keyed_by_event_id("event_id"),
    )
    aws.claims_in_items = True
    with entry_point(aws, monkeypatch):
        rec = record(order_body("evt-9", order_id="o-9"))
        assert invoke_handler(lambda_handler(consumer), rec) == {"batchItemFailures": []}
    (copy,) = aws.dlq_messages()
    attributes = attributes_of(copy)
    assert attributes["failure_kind"] == "schema"
    assert "event_id = the event id" in attributes["failure_reason"]
    assert "not the one the event id derives" in attributes["failure_reason"]
    assert aws.order_rows() == []


def test_the_charges_declare_how_their_ledger_key_derives_from_the_event_id() -> None:
    from handlers.charges import CHARGES, LEDGER_HASH_KEY, LEDGER_RANGE_KEY
    from idempotent_messaging.runtime import SingleItemEffect

    assert isinstance(CHARGES.effect, SingleItemEffect)
    assert CHARGES.effect.key_of_event is not None
    derived = CHARGES.effect.derived_key(CHARGES.effect.key_of_event("t1:emp-7:2026-05"))
    assert derived == {LEDGER_HASH_KEY: {"S": "t1"}, LEDGER_RANGE_KEY: {"S": "emp-7#2026-05"}}


# --- a DISTINCT event for an already recorded business key: visible, never a duplicate ----------


def _user_keyed_consumer() -> Consumer:
    """A state-table consumer whose business key is its own (the order id): one row per order,
    whichever event records it."""
    from handlers.orders import order_notification

    def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        order_id = message["order"]["order_id"]
        return [
            {
                "Put": {
                    "TableName": USER_KEYED_TABLE,
                    "Item": {"order_id": {"S": order_id}, "event_id": {"S": ctx.event_id}},
                    "ConditionExpression": "attribute_not_exists(order_id)",
                }
            }
        ]

    return Consumer(writes=writes, notification=order_notification)


@pytest.mark.parametrize("together", [False, True], ids=["separate-batches", "one-batch"])
def test_another_event_for_a_recorded_business_key_fails_visibly_with_the_state_table_claim(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, together: bool
) -> None:
    aws.dynamodb.create_table(
        TableName=USER_KEYED_TABLE,
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    with entry_point(aws, monkeypatch):
        handler = lambda_handler(_user_keyed_consumer())
        first = record(order_body("evt-1", order_id="o-1"))
        other = record(order_body("evt-2", order_id="o-1"))
        if together:
            assert invoke_handler(handler, first, other) == {"batchItemFailures": []}
        else:
            assert invoke_handler(handler, first) == {"batchItemFailures": []}
            assert invoke_handler(handler, other) == {"batchItemFailures": []}
    (copy,) = aws.dlq_messages()
    attributes = attributes_of(copy)
    assert attributes["original_message_id"] == other["messageId"]
    assert attributes["failure_kind"] == "semantic"
    assert "ConditionalCheckFailed" in attributes["failure_reason"]
    rows = aws.dynamodb.scan(TableName=USER_KEYED_TABLE)["Items"]
    assert [r["event_id"]["S"] for r in rows] == ["evt-1"]
    claims = {c["event_id"]["S"] for c in aws.claims()}
    assert claims == {"evt-1"}  # evt-2 claimed nothing: atomic with its refused write
    assert [n["event_id"] for n in aws.notifications()] == ["evt-1"]


def test_another_event_meeting_a_recorded_item_is_semantic_with_the_in_item_claim(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A declared derivation that is not one-to-one (two event ids, one item): the later event
    meets the earlier's claim in the item and is quarantined as semantic, not skipped."""
    from handlers.orders import order_notification, order_writes

    def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        (put,) = order_writes(message, ctx)
        put["Put"]["Item"]["event_id"] = {"S": ctx.event_id.split("/")[0]}
        return [put]

    consumer = Consumer(
        writes=writes,
        notification=order_notification,
        effect=SingleItemEffect(
            key=("event_id",), key_of_event=lambda event_id: {"event_id": event_id.split("/")[0]}
        ),
    )
    aws.claims_in_items = True
    with entry_point(aws, monkeypatch):
        handler = lambda_handler(consumer)
        assert invoke_handler(handler, record(order_body("o1/a"))) == {"batchItemFailures": []}
        other = record(order_body("o1/b"))
        assert invoke_handler(handler, other) == {"batchItemFailures": []}
    (copy,) = aws.dlq_messages()
    assert attributes_of(copy)["failure_kind"] == "semantic"
    assert "another event" in attributes_of(copy)["failure_reason"]
    rows = aws.order_rows()
    assert [r[env.ITEM_CLAIM_EVENT_ID]["S"] for r in rows] == ["o1/a"]
    assert [n["event_id"] for n in aws.notifications()] == ["o1/a"]
