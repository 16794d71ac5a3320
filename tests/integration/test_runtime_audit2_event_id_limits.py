"""Issue 22, item 8: docs, code and tests say the same about event id limits.

The rule is the one AWS's key limits imply, counted in UTF-8 bytes on the key the event id
becomes (DynamoDB Developer Guide, "Service, account, and table quotas": "The minimum length
of a partition key value is 1 byte. The maximum length is 2048 bytes"; "The minimum length of
a sort key value is 1 byte. The maximum length is 1024 bytes"):

* event-id layout (and a business row keyed by the event, as the orders row): the event id is
  the partition key: at most 2,048 bytes;
* tenant layout: the sort key is ``<namespace>#<event id>``: at most 1,024 bytes with the prefix;
* there is no character limit (the docs once said "> 512 chars" is poison; the code never had
  one). SQS carries the id as a body field or a message attribute value, both counted toward
  the 256 KiB message size and nothing else, so SQS adds no tighter bound.

An id over the limit is quarantined as ``invalid_event_id`` with the byte count, before any
AWS call, and its neighbours are processed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.runtime import Consumer, env, lambda_handler
from tests.integration.test_runtime_audit2_world import attributes_of, entry_point
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

DOCS = Path(__file__).resolve().parents[2] / "docs" / "runtime.md"
PARTITION_KEY_BYTES = 2048
SORT_KEY_BYTES = 1024


def _id_of_bytes(size: int, unit: str = "a") -> str:
    """An event id of exactly ``size`` UTF-8 bytes made of ``unit`` characters and ASCII."""
    width = len(unit.encode("utf-8"))
    count = size // width
    return unit * count + "b" * (size - count * width)


def _run(handler: Any, *event_ids: str) -> dict[str, Any]:
    records = [record(order_body(e, order_id=f"o-{i}")) for i, e in enumerate(event_ids)]
    response: dict[str, Any] = handler(sqs_event(*records), FakeContext())
    return response


def _orders() -> Any:
    from handlers import orders

    return orders.handler


@pytest.mark.parametrize("unit", ["a", "あ"], ids=["ascii", "3-byte"])
@pytest.mark.parametrize("in_item", [True, False], ids=["orders-row", "state-table"])
def test_an_event_id_is_a_partition_key_of_at_most_2048_bytes(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, in_item: bool, unit: str
) -> None:
    aws.claims_in_items = in_item
    at_limit = _id_of_bytes(PARTITION_KEY_BYTES, unit)
    over = _id_of_bytes(PARTITION_KEY_BYTES + 1, unit)
    long_in_characters = "c" * 513  # once documented as poison: it is a valid key
    with entry_point(aws, monkeypatch):
        handler = _orders() if in_item else lambda_handler(separate_claim_orders())
        assert _run(handler, at_limit, over, long_in_characters) == {"batchItemFailures": []}
    assert {c["event_id"]["S"] for c in aws.claims()} == {at_limit, long_in_characters}
    (copy,) = aws.dlq_messages()
    attributes = attributes_of(copy)
    assert attributes["failure_kind"] == "invalid_event_id"
    assert f"is {PARTITION_KEY_BYTES + 1} bytes in UTF-8" in attributes["failure_reason"]
    assert f"at most {PARTITION_KEY_BYTES}" in attributes["failure_reason"]
    assert json.loads(copy["Body"])["event_id"] == over  # the body unchanged, for a redrive


def test_in_the_tenant_layout_the_prefixed_sort_key_is_at_most_1024_bytes(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handlers.orders import order_notification, order_writes

    consumer = Consumer(
        writes=order_writes,
        notification=order_notification,
        namespace="charge",
        tenant=lambda message: "t1",
    )
    prefix = len(b"charge#")
    at_limit = _id_of_bytes(SORT_KEY_BYTES - prefix)
    over = _id_of_bytes(SORT_KEY_BYTES - prefix + 1)
    with entry_point(
        aws,
        monkeypatch,
        **{env.STATE_TABLE: TENANT_STATE_TABLE, env.STATE_KEY_LAYOUT: env.LAYOUT_TENANT},
    ):
        assert _run(lambda_handler(consumer), at_limit, over) == {"batchItemFailures": []}
    items = aws.dynamodb.scan(TableName=TENANT_STATE_TABLE)["Items"]
    keys = [c["sk"]["S"] for c in items if not c["sk"]["S"].startswith("receipt")]
    assert keys == [f"charge#{at_limit}"]  # the batch's publish receipt aside
    (copy,) = aws.dlq_messages()
    reason = attributes_of(copy)["failure_reason"]
    assert attributes_of(copy)["failure_kind"] == "invalid_event_id"
    assert f"is {SORT_KEY_BYTES + 1} bytes in UTF-8" in reason and "sort key" in reason


def test_an_event_id_from_a_message_attribute_has_the_same_byte_limit(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handlers.orders import order_notification, order_writes
    from idempotent_messaging.runtime import EventIdFromAttribute

    consumer = Consumer(
        writes=order_writes,
        notification=order_notification,
        event_id=EventIdFromAttribute("event-id"),
    )
    body = json.dumps({"order": {"order_id": "o"}})
    at_limit = _id_of_bytes(PARTITION_KEY_BYTES, "é")
    over = _id_of_bytes(PARTITION_KEY_BYTES + 1, "é")
    records = [record(body, attributes={"event-id": e}) for e in (at_limit, over)]
    with entry_point(aws, monkeypatch):
        response = lambda_handler(consumer)(sqs_event(*records), FakeContext())
    assert response == {"batchItemFailures": []}
    assert {c["event_id"]["S"] for c in aws.claims()} == {at_limit}
    (copy,) = aws.dlq_messages()
    # The id's own attribute rides with the copy, so a redrive extracts the same id.
    assert attributes_of(copy)["event-id"] == over
    assert attributes_of(copy)["failure_kind"] == "invalid_event_id"


def test_the_documented_rule_is_the_byte_rule_the_code_applies() -> None:
    """docs/runtime.md states the byte limits (2,048 / 1,024 with the prefix) and no
    character limit, in the event-id table and in the Keys section alike."""
    text = DOCS.read_text()
    assert not re.search(r">\s*512\s*chars", text), "docs still state a 512-character limit"
    table_row = next(line for line in text.splitlines() if "`EventIdFromBody(" in line)
    assert "2,048 bytes" in table_row and "1,024" in table_row
    assert "There is no character limit" in text
