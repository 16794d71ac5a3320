"""Which single-item claims may skip the transaction: a PartiQL INSERT enforces exactly "no item
with this key exists" (DynamoDB developer guide, "PartiQL insert statements":
DuplicateItemException when the key exists), so only a Put that adds no condition of its own to
the declared effect becomes one. The declaration decides, not a parse of the expression: a Put
with no condition, or restating the effect's own guard (``SingleItemEffect.new_item_conditions``),
is a create; any other condition is DynamoDB's to evaluate, in the transaction."""

from __future__ import annotations

from typing import Any

import pytest

from idempotent_messaging.runtime import Settings, SingleItemEffect
from idempotent_messaging.runtime.claims import ItemClaims, StateTableClaims, state_key

pytestmark = pytest.mark.unit

EFFECT = SingleItemEffect(
    key=("tenant_id", "ledger_key"),
    key_of_event=lambda event_id: dict(
        zip(("tenant_id", "ledger_key"), event_id.split(":"), strict=True)
    ),
)
SETTINGS = Settings(state_table="state", dlq_url="dlq", business_table="t")


def put(condition: str | None, names: dict[str, str] | None = None, **extra: Any) -> dict:
    out: dict[str, Any] = {
        "TableName": "t",
        "Item": {"tenant_id": {"S": "a"}, "ledger_key": {"S": "b"}},
    }
    if condition is not None:
        out["ConditionExpression"] = condition
    if names:
        out["ExpressionAttributeNames"] = names
    out.update(extra)
    return out


def test_the_effect_spells_its_own_guard_over_the_declared_key() -> None:
    both = "attribute_not_exists(tenant_id) AND attribute_not_exists(ledger_key)"
    assert EFFECT.condition == both
    assert SingleItemEffect.keyed_by_event_id().condition == "attribute_not_exists(event_id)"


@pytest.mark.parametrize(
    "condition",
    [
        None,  # the runtime adds the key guard itself
        "",
        "attribute_not_exists(tenant_id) AND attribute_not_exists(ledger_key)",  # charges
        "attribute_not_exists(tenant_id)",  # no item has half a key
        "attribute_not_exists(ledger_key)",
    ],
)
def test_a_put_adding_nothing_to_the_declared_effect_is_a_create(condition: Any) -> None:
    assert EFFECT.creates(put(condition))


@pytest.mark.parametrize(
    ("condition", "names", "extra"),
    [
        ("attribute_not_exists(amount)", None, {}),
        ("attribute_not_exists(#a)", {"#a": "amount"}, {}),
        # Key absence spelled otherwise is not the declared guard: DynamoDB evaluates it.
        ("attribute_not_exists(#k)", {"#k": "tenant_id"}, {}),
        ("attribute_not_exists(ledger_key) AND attribute_not_exists(tenant_id)", None, {}),
        ("attribute_not_exists(tenant_id) OR attribute_exists(x)", None, {}),
        ("NOT attribute_exists(tenant_id)", None, {}),
        (
            "attribute_not_exists(tenant_id) AND amount < :cap",
            None,
            {"ExpressionAttributeValues": {":cap": {"N": "1"}}},
        ),
        (None, None, {"ExpressionAttributeValues": {":cap": {"N": "1"}}}),
        ("attribute_not_exists(tenant_id.sub)", None, {}),
    ],
)
def test_any_condition_of_its_own_keeps_the_transaction(
    condition: Any, names: Any, extra: Any
) -> None:
    assert not EFFECT.creates(put(condition, names, **extra))


def key() -> Any:
    return state_key(tenant_layout=False, event_id="e1", namespace="n", tenant=None)


def claim_of(placement: Any, own: dict[str, Any]) -> Any:
    return placement.claim(
        key=key(), event_id="e1", message_id="m1", items=[{"Put": own}], status="pending", now=1
    )


def test_an_item_claim_carries_an_insert_only_for_a_create() -> None:
    claims = ItemClaims(object(), SETTINGS, EFFECT)
    create = claim_of(claims, put(EFFECT.condition))
    assert create.insert is not None and create.insert["Statement"].startswith('INSERT INTO "t"')
    assert create.put["Put"]["ConditionExpression"] == (
        f"({EFFECT.condition}) AND attribute_not_exists(#claim_key0) AND "
        "attribute_not_exists(#claim_key1)"
    )
    assert claim_of(claims, put("attribute_exists(never_there)")).insert is None


def test_a_state_table_claim_never_carries_an_insert() -> None:
    claims = StateTableClaims(object(), SETTINGS)
    claim = claims.claim(key=key(), event_id="e1", message_id="m1", items=[], status="sent", now=1)
    assert claim.insert is None
    assert claim.put["Put"]["TableName"] == "state"
