"""DynamoDB's value limits, FIFO publish chunking and DLQ attribute priority, as pure logic."""

from __future__ import annotations

from typing import Any

import pytest

from idempotent_messaging.runtime.consumer import (
    attribute_problem,
    check_transact_item,
    number_problem,
)
from idempotent_messaging.runtime.errors import SchemaError
from idempotent_messaging.runtime.notify import Notification, PublishEntry, chunk_entries
from idempotent_messaging.runtime.quarantine import ATTR_DROPPED, QuarantineEntry, _attributes

pytestmark = pytest.mark.unit


# DynamoDB numbers: up to 38 significant digits; positive magnitudes 1E-130 ..
# 9.9999999999999999999999999999999999999E+125; no NaN or Infinity.
@pytest.mark.parametrize(
    "text",
    [
        "0",
        "-0",
        "1E-130",
        "-1E-130",
        "9.9999999999999999999999999999999999999E+125",
        "9" * 38,
        "1" + "0" * 60,
    ],
)
def test_numbers_dynamodb_holds(text: str) -> None:
    assert number_problem(text) is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("9" * 39, "39 significant digits"),
        ("1E+126", "outside"),
        ("1E-131", "outside"),
        ("NaN", "NaN or Infinity"),
        ("-Infinity", "NaN or Infinity"),
        ("12abc", "not a number"),
    ],
)
def test_numbers_dynamodb_rejects(text: str, why: str) -> None:
    problem = number_problem(text)
    assert problem is not None and why in problem


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"S": "leaf"}
    for _ in range(depth):
        value = {"L": [value]}
    return value


def test_nesting_up_to_32_levels_below_the_attribute_is_allowed_and_deeper_is_not() -> None:
    assert attribute_problem(_nested(32))[0] is None
    problem = attribute_problem(_nested(33))[0]
    assert problem is not None and "32 levels" in problem


def test_thousands_of_levels_do_not_exhaust_the_stack() -> None:
    assert attribute_problem(_nested(50_000))[0] is not None


def test_a_write_names_its_position_attribute_and_rule_never_the_value() -> None:
    item = {"Put": {"TableName": "t", "Item": {"k": {"S": "a"}, "amount": {"N": "1" * 41}}}}
    with pytest.raises(SchemaError) as info:
        check_transact_item(3, item)
    assert "item 3" in info.value.reason and "'amount'" in info.value.reason
    assert "1" * 41 not in info.value.reason


def test_a_lone_surrogate_in_an_update_value_is_refused() -> None:
    item = {
        "Update": {
            "TableName": "t",
            "Key": {"k": {"S": "a"}},
            "UpdateExpression": "SET v = :v",
            "ExpressionAttributeValues": {":v": {"S": "\ud800"}},
        }
    }
    with pytest.raises(SchemaError, match="not valid Unicode"):
        check_transact_item(0, item)


def _entry(i: int, group: str | None) -> PublishEntry:
    return PublishEntry(f"r{i}", Notification(message=f"m{i}"), f"e{i}", group)


def test_fifo_chunks_hold_at_most_one_entry_per_group_in_order() -> None:
    entries = [_entry(i, g) for i, g in enumerate("aabab")]
    chunks = chunk_entries(entries, one_per_group=True)
    assert [[e.entry_id for e in c] for c in chunks] == [["r0"], ["r1", "r2"], ["r3", "r4"]]
    assert [len(c) for c in chunk_entries(entries)] == [5]


def test_the_event_id_attribute_is_kept_first_and_dropped_names_are_listed() -> None:
    original = {f"a{i}": {"stringValue": "v", "dataType": "String"} for i in range(9)}
    original["z"] = {"stringValue": "id-1", "dataType": "String"}
    entry = QuarantineEntry(
        entry_id="q0",
        body="{}",
        failure_class="permanent",
        kind="schema",
        reason="r",
        message_id="m",
        receive_count=1,
        event_id="id-1",
        group_id=None,
        original_attributes=original,
        event_id_attribute="z",
    )
    attributes = _attributes(entry)
    assert len(attributes) == 10
    assert attributes["z"]["StringValue"] == "id-1"
    kept = {name for name in original if name in attributes} - {"z"}
    dropped = set(attributes[ATTR_DROPPED]["StringValue"].split(","))
    assert kept | dropped == set(original) - {"z"} and not kept & dropped


def test_an_empty_attribute_name_at_any_depth_is_refused() -> None:
    """DynamoDB answers "Empty attribute name" for an empty name anywhere in an item (top
    level or a map key at any depth); moto stores it and then cannot scan the item back."""
    assert (
        attribute_problem({"M": {"": {"N": "0"}}})[0] == "has an empty attribute name (a map key)"
    )
    nested = {"M": {"a": {"L": [{"M": {"": {"S": "x"}}}]}}}
    assert attribute_problem(nested)[0] == "has an empty attribute name (a map key)"
    assert attribute_problem({"M": {"a": {"N": "0"}}})[0] is None
    with pytest.raises(SchemaError, match="empty attribute name"):
        check_transact_item(0, {"Put": {"TableName": "t", "Item": {"": {"S": "x"}}}})
