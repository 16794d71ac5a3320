"""runtime/grants.py: the role a consumer's declaration derives, and its vocabulary checked
against AWS's IAM database (parliament)."""

from __future__ import annotations

import pytest
from parliament import expand_action

from idempotent_messaging.runtime import grants


def every_action() -> set[str]:
    actions = {*grants.ESM_POLL_ACTIONS, grants.SQS_SEND, grants.SNS_PUBLISH}
    actions |= set(grants.TRANSACT_ITEM_ACTIONS.values())
    for calls in grants.PLACEMENTS.values():
        for group in (
            calls.state_always,
            calls.state_standard_only,
            calls.state_notifying,
            calls.business_always,
            calls.business_standard_only,
            calls.business_notifying,
        ):
            actions |= set(group)
    return actions


@pytest.mark.parametrize("action", sorted(every_action()))
def test_every_action_the_grants_name_exists_in_aws_database(action: str) -> None:
    assert expand_action(action) == [
        {"service": action.split(":")[0], "action": action.split(":")[1]}
    ]


def test_an_undeclared_placement_gets_the_union_of_every_placements_calls() -> None:
    union = grants.consumer_grants(
        placement=None, fifo=False, notifies=True, has_business_table=True
    )
    for name in grants.PLACEMENTS:
        one = grants.consumer_grants(
            placement=name, fifo=False, notifies=True, has_business_table=True
        )
        assert set(one.state_table) <= set(union.state_table)
        assert set(one.business_table) <= set(union.business_table)


def test_without_a_topic_no_receipt_marking_or_owed_grant_and_no_publish() -> None:
    role = grants.consumer_grants(
        placement=grants.PLACEMENT_BUSINESS_ITEM,
        fifo=True,
        notifies=False,
        has_business_table=True,
    )
    assert role.state_table == ()
    assert role.topic == ()
    assert role.business_table == ("dynamodb:BatchGetItem", "dynamodb:PutItem")


def test_an_unknown_placement_or_item_kind_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="claim_placement='row'"):
        grants.consumer_grants(
            placement="row", fifo=False, notifies=False, has_business_table=False
        )
    with pytest.raises(ValueError, match=r"\['Upsert'\]"):
        grants.business_write_actions(["Upsert"])
