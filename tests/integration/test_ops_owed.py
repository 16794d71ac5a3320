"""``python -m idempotent_messaging.ops owed``: claims left pending are listed, stored owed
notifications are re-published and their claims marked sent; without a stored notification the
way back is the DLQ redrive, and nothing is marked sent that was not published."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handlers.orders import ORDERS
from idempotent_messaging.ops import owed
from idempotent_messaging.runtime import env
from tests.integration.runtime_faults import answer_with, fail_sends
from tests.integration.test_runtime_world import (
    STATE_TABLE,
    Aws,
    FakeContext,
    order_body,
    record,
    sqs_event,
)

pytestmark = pytest.mark.integration


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
