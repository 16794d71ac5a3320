"""Fuzzed items through the single-item INSERT path (standard queue, claim in the row): any
attribute names and values a consumer may write come back exactly, or the record alone is
quarantined with a reason. The names are quoted into the PartiQL tuple (``'...'``, a quote
doubled: DynamoDB developer guide, "PartiQL insert statements"), the values are parameters."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handlers.orders import RESERVED_FIELDS
from idempotent_messaging.runtime import env
from tests.integration.reused_world import reused_world
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    Aws,
    FakeContext,
    create_world,
    record,
    single_item_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

_deserialize = TypeDeserializer().deserialize
_TAKEN = {"order_id", *RESERVED_FIELDS, *env.ITEM_CLAIM_ATTRIBUTES}

NAMES = st.text(min_size=1, max_size=12).filter(lambda n: n not in _TAKEN)
VALUES = st.one_of(
    st.integers(-(10**12), 10**12),
    st.text(max_size=12),
    st.booleans(),
    st.lists(st.integers(-100, 100), max_size=3),
)
ORDERS = st.lists(st.dictionaries(NAMES, VALUES, max_size=4), min_size=1, max_size=12)


def _plain(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.fixture
def world(aws_env: dict[str, str]) -> Iterator[Callable[[], Aws]]:
    """One world per test, emptied for each example (`tests/integration/reused_world.py`)."""
    with reused_world(lambda: create_world(claims_in_items=True)) as fresh:
        yield fresh


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(orders=ORDERS)
def test_any_names_and_values_are_stored_exactly_or_quarantined_alone(
    world: Callable[[], Aws], orders: list[dict[str, Any]]
) -> None:
    world_ = world()
    statements: list[str] = []

    def record_statements(params: dict[str, Any], **_: Any) -> None:
        statements.extend(s["Statement"] for s in params["Statements"])

    event = "before-parameter-build.dynamodb.BatchExecuteStatement"
    world_.dynamodb.meta.events.register(event, record_statements)
    try:
        _check(world_, orders, statements)
    finally:  # the world outlives the example
        world_.dynamodb.meta.events.unregister(event, record_statements)


def _check(world: Aws, orders: list[dict[str, Any]], statements: list[str]) -> None:
    """The batch of `orders` through the single-item INSERT path, every record's ending."""
    records = [
        record(json.dumps({"event_id": f"e{i}", "order": {"order_id": f"o{i}", **fields}}))
        for i, fields in enumerate(orders)
    ]
    response = single_item_orders().process(
        sqs_event(*records), FakeContext(), world.runtime(source_fifo=False)
    )
    assert response == {"batchItemFailures": []}
    assert any(s.startswith("INSERT") for s in statements)  # the path under test
    rows = {r["order_id"]["S"]: r for r in world.dynamodb.scan(TableName=BUSINESS_TABLE)["Items"]}
    quarantined = {
        m["MessageAttributes"]["original_message_id"]["StringValue"]: m
        for m in world.dlq_messages()
    }
    for i, (rec, fields) in enumerate(zip(records, orders, strict=True)):
        row = rows.get(f"o{i}")
        if row is None:
            attrs = quarantined[rec["messageId"]]["MessageAttributes"]
            assert attrs["failure_kind"]["StringValue"] == "schema"
            assert attrs["failure_reason"]["StringValue"]
            continue
        assert rec["messageId"] not in quarantined
        stored = {name: _deserialize(value) for name, value in row.items()}
        assert {name: stored[name] for name in fields} == {
            name: _plain(value) for name, value in fields.items()
        }
        assert stored[env.ITEM_CLAIM_EVENT_ID] == f"e{i}"
        # Published: the claim names the batch's receipt (issue 26), which lists it.
        assert stored[env.ITEM_CLAIM_STATUS] == env.STATUS_PENDING
        assert stored[env.ITEM_CLAIM_RECEIPT].startswith(env.RECEIPT_KEY_PREFIX)
