"""``python -m idempotent_messaging.ops owed``: claims left pending are listed, stored owed
notifications are re-published and their claims marked sent; without a stored notification the
way back is the DLQ redrive, and nothing is marked sent that was not published. Claims are found
where the consumer keeps them: a state table, or its business items (SingleItemEffect)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handlers.orders import ORDERS as SINGLE_ITEM_ORDERS
from idempotent_messaging.ops import owed
from idempotent_messaging.runtime import env
from tests.integration.runtime_faults import answer_with, fail_sends
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    STATE_TABLE,
    Aws,
    FakeContext,
    order_body,
    record,
    separate_claim_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

ORDERS = separate_claim_orders()


def test_owed_notifications_are_listed_and_republished_once_sns_accepts_them(aws: Aws) -> None:
    refusing = {"on": True}

    def invalid(_request: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        if not refusing["on"]:
            return None
        return 400, {"Error": {"Code": "InvalidParameter", "Message": "KMS key disabled"}}

    answer_with(aws.sns, "PublishBatch", invalid)
    ORDERS.process(sqs_event(record(order_body("owed-1"))), FakeContext(), aws.runtime())
    # A second claim left pending by a transient outage (no stored notification).
    refusing["on"] = False
    fail_sends(aws.sns, "PublishBatch", 3)
    ORDERS.process(sqs_event(record(order_body("down-1"))), FakeContext(), aws.runtime())
    now = int(aws.claims()[0]["received_at"]["N"]) + 7200

    claims = {
        c.event_id: c
        for c in owed.owed_claims(aws.dynamodb, STATE_TABLE, older_than_s=3600, now=now)
    }
    assert set(claims) == {"owed-1", "down-1"}
    assert claims["owed-1"].notification is not None
    assert "KMS key disabled" in (claims["owed-1"].error or "")
    assert claims["down-1"].notification is None
    # Not yet past the threshold: nothing is listed.
    assert (
        list(owed.owed_claims(aws.dynamodb, STATE_TABLE, older_than_s=3600, now=now - 7200)) == []
    )

    owed.republish(aws.dynamodb, aws.sns, STATE_TABLE, aws.topic_arn, claims["owed-1"], now)
    with pytest.raises(ValueError, match="redrive"):
        owed.republish(aws.dynamodb, aws.sns, STATE_TABLE, aws.topic_arn, claims["down-1"], now)
    notes = aws.notifications()
    assert [n["event_id"] for n in notes] == ["owed-1"]
    statuses = {c["event_id"]["S"]: c["status"]["S"] for c in aws.claims()}
    assert statuses == {"owed-1": env.STATUS_SENT, "down-1": env.STATUS_PENDING}
    assert "owed_notification" not in next(
        c for c in aws.claims() if c["event_id"]["S"] == "owed-1"
    )


def test_the_cli_lists_owed_claims_as_json(
    aws: Aws, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from idempotent_messaging.ops import cli

    answer_with(
        aws.sns,
        "PublishBatch",
        lambda _r: (400, {"Error": {"Code": "InvalidParameter", "Message": "bad"}}),
    )
    ORDERS.process(sqs_event(record(order_body("owed-2"))), FakeContext(), aws.runtime())
    monkeypatch.setattr(cli, "_client", lambda args, service, **_: getattr(aws, service))
    code = cli.main(["owed", "--table", STATE_TABLE, "--older-than", "-100", "--json"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["event_id"] for r in rows] == ["owed-2"]
    assert rows[0]["notification_stored"] is True


def _refuse_then_outage(aws: Aws) -> None:
    """owed-1: SNS refuses for good (the notification is stored on the claim); down-1: SNS
    down through every retry (nothing stored: the DLQ copy is the way back)."""
    refusing = {"on": True}

    def invalid(_request: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        if not refusing["on"]:
            return None
        return 400, {"Error": {"Code": "InvalidParameter", "Message": "KMS key disabled"}}

    answer_with(aws.sns, "PublishBatch", invalid)
    SINGLE_ITEM_ORDERS.process(
        sqs_event(record(order_body("owed-1"))), FakeContext(), aws.runtime()
    )
    refusing["on"] = False
    fail_sends(aws.sns, "PublishBatch", 3)
    SINGLE_ITEM_ORDERS.process(
        sqs_event(record(order_body("down-1"))), FakeContext(), aws.runtime()
    )


def test_owed_claims_kept_in_business_rows_are_listed_and_republished(aws: Aws) -> None:
    aws.claims_in_items = True
    _refuse_then_outage(aws)
    rows = {row["order_id"]["S"]: row for row in aws.order_rows()}
    assert set(rows) == {"order-owed-1", "order-down-1"}
    now = int(rows["order-owed-1"][env.ITEM_CLAIM_RECEIVED_AT]["N"]) + 7200

    claims = {
        c.event_id: c
        for c in owed.owed_claims(
            aws.dynamodb, BUSINESS_TABLE, older_than_s=3600, now=now, receipts_table=STATE_TABLE
        )
    }
    assert set(claims) == {"owed-1", "down-1"}
    assert all(c.in_business_item for c in claims.values())
    # The business table's own key, read from its schema, not the state table's.
    assert claims["owed-1"].key == {"event_id": {"S": "owed-1"}}
    assert claims["owed-1"].notification is not None
    assert "KMS key disabled" in (claims["owed-1"].error or "")
    assert claims["down-1"].notification is None
    assert (
        list(
            owed.owed_claims(
                aws.dynamodb,
                BUSINESS_TABLE,
                older_than_s=3600,
                now=now - 7200,
                receipts_table=STATE_TABLE,
            )
        )
        == []
    )

    owed.republish(aws.dynamodb, aws.sns, BUSINESS_TABLE, aws.topic_arn, claims["owed-1"], now)
    with pytest.raises(ValueError, match="redrive"):
        owed.republish(aws.dynamodb, aws.sns, BUSINESS_TABLE, aws.topic_arn, claims["down-1"], now)
    assert [n["event_id"] for n in aws.notifications()] == ["owed-1"]
    rows = {row["order_id"]["S"]: row for row in aws.order_rows()}
    assert rows["order-owed-1"][env.ITEM_CLAIM_STATUS]["S"] == env.STATUS_SENT
    assert env.ITEM_CLAIM_OWED not in rows["order-owed-1"]
    assert rows["order-owed-1"]["source_event_id"]["S"] == "owed-1"  # the business row kept
    assert rows["order-down-1"][env.ITEM_CLAIM_STATUS]["S"] == env.STATUS_PENDING
    # Nothing left owed but the one only a redrive can publish.
    assert [
        c.event_id
        for c in owed.owed_claims(
            aws.dynamodb, BUSINESS_TABLE, older_than_s=3600, now=now, receipts_table=STATE_TABLE
        )
    ] == ["down-1"]


def test_republishing_a_business_row_claim_never_marks_another_events_claim(aws: Aws) -> None:
    """The marking is conditioned on the listed event's claim still pending in the row."""
    aws.claims_in_items = True
    _refuse_then_outage(aws)
    rows = {row["order_id"]["S"]: row for row in aws.order_rows()}
    now = int(rows["order-owed-1"][env.ITEM_CLAIM_RECEIVED_AT]["N"]) + 7200
    claim = next(
        c
        for c in owed.owed_claims(
            aws.dynamodb, BUSINESS_TABLE, older_than_s=3600, now=now, receipts_table=STATE_TABLE
        )
        if c.event_id == "owed-1"
    )
    forged = owed.OwedClaim(
        key=claim.key,
        event_id="another-event",
        received_at=claim.received_at,
        notification=claim.notification,
        error=None,
        in_business_item=True,
    )
    owed.republish(aws.dynamodb, aws.sns, BUSINESS_TABLE, aws.topic_arn, forged, now)
    row = next(r for r in aws.order_rows() if r["order_id"]["S"] == "order-owed-1")
    assert row[env.ITEM_CLAIM_STATUS]["S"] == env.STATUS_PENDING
    assert env.ITEM_CLAIM_OWED in row


def test_the_cli_lists_owed_claims_of_a_business_table(
    aws: Aws, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from idempotent_messaging.ops import cli

    aws.claims_in_items = True
    _refuse_then_outage(aws)
    monkeypatch.setattr(cli, "_client", lambda args, service, **_: getattr(aws, service))
    argv = ["owed", "--table", BUSINESS_TABLE, "--state-table", STATE_TABLE]
    code = cli.main([*argv, "--older-than", "-100", "--json"])
    assert code == 0
    rows = {r["event_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"owed-1", "down-1"}
    assert rows["owed-1"]["notification_stored"] is True
    assert rows["owed-1"]["claim_in_business_item"] is True
    assert rows["owed-1"]["key"] == {"event_id": "owed-1"}
