"""Which single-item claims may skip the transaction: a PartiQL INSERT enforces exactly "no item
with this key exists" (DynamoDB developer guide, "PartiQL insert statements":
DuplicateItemException when the key exists), so only a Put whose condition says no more than
that may become one."""

from __future__ import annotations

from typing import Any

import pytest

from idempotent_messaging.runtime.item_store import only_key_absence

KEY = ("tenant_id", "ledger_key")


def put(condition: str | None, names: dict[str, str] | None = None, **extra: Any) -> dict:
    out: dict[str, Any] = {"TableName": "t", "Item": {}}
    if condition is not None:
        out["ConditionExpression"] = condition
    if names:
        out["ExpressionAttributeNames"] = names
    out.update(extra)
    return out


@pytest.mark.parametrize(
    ("condition", "names"),
    [
        ("attribute_not_exists(tenant_id)", None),
        ("attribute_not_exists(ledger_key)", None),  # no item has half a key
        ("attribute_not_exists(tenant_id) AND attribute_not_exists(ledger_key)", None),
        ("(attribute_not_exists(#k)) and attribute_not_exists( #s )", {"#k": KEY[0], "#s": KEY[1]}),
        # The runtime's own guard appended to the reference consumers' condition:
        (
            "(attribute_not_exists(tenant_id)) AND attribute_not_exists(#claim_key0)",
            {"#claim_key0": "tenant_id"},
        ),
    ],
)
def test_key_absence_alone_may_become_an_insert(condition: str, names: Any) -> None:
    assert only_key_absence(put(condition, names), KEY)


@pytest.mark.parametrize(
    ("condition", "names", "extra"),
    [
        (None, None, {}),  # no condition: the runtime always adds its own guard first
        ("attribute_not_exists(amount)", None, {}),
        ("attribute_not_exists(#a)", {"#a": "amount"}, {}),
        ("attribute_not_exists(tenant_id) OR attribute_exists(x)", None, {}),
        ("NOT attribute_exists(tenant_id)", None, {}),
        (
            "attribute_not_exists(tenant_id) AND amount < :cap",
            None,
            {"ExpressionAttributeValues": {":cap": {"N": "1"}}},
        ),
        ("attribute_not_exists(tenant_id.sub)", None, {}),
        ("", None, {}),
    ],
)
def test_anything_more_keeps_the_transaction(condition: Any, names: Any, extra: Any) -> None:
    assert not only_key_absence(put(condition, names, **extra), KEY)
