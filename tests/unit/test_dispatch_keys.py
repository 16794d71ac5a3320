"""The charge message contract: keys, group ids, dedup ids, validation (pure)."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from idempotent_messaging.dispatch.keys import (
    BillableItem,
    InvalidItem,
    charge_message,
    deduplication_id,
    group_id,
    idempotency_key,
)

pytestmark = pytest.mark.unit

SQS_ID_CHARS = re.compile(r"^[A-Za-z0-9!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]{1,128}$")
ids = st.from_regex(r"[A-Za-z0-9._@-]{1,100}", fullmatch=True)


@given(ids, ids, st.integers(min_value=0, max_value=10**12))
def test_group_and_dedup_ids_are_valid_sqs_ids_and_deterministic(
    tenant: str, employee: str, amount: int
) -> None:
    item = BillableItem.parse(tenant, employee, amount, "JPY")
    first, again = charge_message(item, "2026-06"), charge_message(item, "2026-06")
    assert first == again  # a re-send is byte-identical
    key = f"{tenant}:{employee}:2026-06"
    assert first.key == key == idempotency_key(tenant, employee, "2026-06")
    assert first.group_id == f"{tenant}#2026-06" and SQS_ID_CHARS.match(first.group_id)
    assert first.deduplication_id == hashlib.sha256(key.encode()).hexdigest()
    assert SQS_ID_CHARS.match(first.deduplication_id)
    body = json.loads(first.body)
    assert body["event_id"] == body["idempotency_key"] == key
    assert (body["tenant_id"], body["employee_id"], body["month"]) == (tenant, employee, "2026-06")
    assert body["amount"] == amount and body["currency"] == "JPY"


def test_different_months_and_employees_never_share_a_dedup_id() -> None:
    a = deduplication_id(idempotency_key("acme", "alice", "2026-06"))
    b = deduplication_id(idempotency_key("acme", "alice", "2026-07"))
    c = deduplication_id(idempotency_key("acme", "bob", "2026-06"))
    assert len({a, b, c}) == 3
    assert group_id("acme", "2026-06") == "acme#2026-06"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (("ac:me", "alice", 1, "JPY"), "tenant_id='ac:me'"),
        (("acme", "al#ice", 1, "JPY"), "employee_id='al#ice'"),
        (("acme", "al ice", 1, "JPY"), "employee_id='al ice'"),
        (("acme", "アリス", 1, "JPY"), "employee_id="),
        (("", "alice", 1, "JPY"), "tenant_id=''"),
        (("a" * 101, "alice", 1, "JPY"), "tenant_id="),
        ((None, "alice", 1, "JPY"), "tenant_id=None"),
        (("acme", "alice", 1.5, "JPY"), "amount=1.5"),
        (("acme", "alice", True, "JPY"), "amount=True"),
        (("acme", "alice", -1, "JPY"), "amount=-1"),
        (("acme", "alice", 10**16, "JPY"), "amount="),
        (("acme", "alice", 1, "jpy"), "currency='jpy'"),
    ],
)
def test_items_that_cannot_become_charges_are_refused_naming_the_field(
    fields: tuple[object, object, object, object], message: str
) -> None:
    with pytest.raises(InvalidItem, match=message):
        BillableItem.parse(*fields)
