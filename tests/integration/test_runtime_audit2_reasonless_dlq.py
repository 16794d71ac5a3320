"""Issue 22, item 10: what SQS can do behind the runtime's back, and how ops explains it.

AWS facts (SQS Developer Guide, "Using dead-letter queues" and "Visibility timeout"): when a
consumer neither deletes a message nor reports it as failed (the process died, or the function
timed out), the message becomes visible again after its visibility timeout; once its receive
count exceeds the redrive policy's ``maxReceiveCount``, SQS itself moves it to the DLQ, with
its body and the producer's attributes and NONE of the runtime's reason attributes. A death on
the LAST receive therefore leaves a bare DLQ copy that no code of the consumer can prevent or
annotate. A standard DLQ keeps the message's original enqueue time (SentTimestamp).

What the claim still knows: a death before the commit left no claim (nothing applied); a death
between commit and publish left the claim ``pending`` (applied, notification owed); a death
after the ``sent`` marking left it ``sent`` (nothing owed). ``ops explain`` (and ``ops peek``)
recognise the bare copy and look the claim up in whichever placement the consumer declared.
Driven end to end: a moto source queue with the stack's redrive policy, the consumers' Lambda
entry points, process deaths at botocore's level, SQS's own move to the DLQ.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from idempotent_messaging.ops import cli, dlq
from idempotent_messaging.runtime import env, lambda_handler
from tests.integration.test_runtime_audit2_world import (
    CrashPlan,
    Source,
    attributes_of,
    entry_point,
    source_queue,
)
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    STATE_TABLE,
    Aws,
    order_body,
    separate_claim_orders,
)

pytestmark = pytest.mark.integration

MAX_RECEIVES = 2

# event id -> where its process dies on its first receive, then on its later ones (so SQS
# dead-letters it bare): (before, after, nth) at the entry point's AWS calls.
Plan = tuple[str | None, str | None, int]
DEATHS: dict[str, tuple[Plan, Plan]] = {
    # before the commit (the in-item INSERT)
    "never-written": (("BatchExecuteStatement", None, 1), ("BatchExecuteStatement", None, 1)),
    # between commit and publish
    "owes-notification": (("PublishBatch", None, 1), ("PublishBatch", None, 1)),
    # after the batch's publication receipt (issue 26), then before anything
    "fully-done": ((None, "PutItem", 1), ("BatchExecuteStatement", None, 1)),
}
STATE_TABLE_DEATHS: dict[str, tuple[Plan, Plan]] = {
    "never-written": (("TransactWriteItems", None, 1), ("TransactWriteItems", None, 1)),
    "owes-notification": (("PublishBatch", None, 1), ("PublishBatch", None, 1)),
    "fully-done": ((None, "PutItem", 1), ("TransactWriteItems", None, 1)),
}


def _die_on_every_receive(source: Source, event_id: str, death: tuple[Plan, Plan]) -> None:
    """Send one event; its process dies as ``death`` says on each of its receives; SQS then
    moves it to the DLQ on the next receive (its count exceeds maxReceiveCount)."""
    source.send(order_body(event_id))
    crash = CrashPlan()
    crash.install()
    for receive in range(1, MAX_RECEIVES + 1):
        crash.clear()
        crash.before, crash.after, crash.nth = death[0] if receive == 1 else death[1]
        response, records = source.invoke()
        assert response is None and len(records) == 1
        assert records[0]["attributes"]["ApproximateReceiveCount"] == str(receive)
        source.visibility_timeout_passes()
    crash.clear()
    response, records = source.invoke()  # SQS moves it instead of delivering it
    assert records == []
    assert source.depth() == 0


def _explained(world: Aws, table: str, consumer: Any | None) -> dict[str, dlq.Explanation]:
    # The publication receipts a pending claim names live in the state table.
    explained = dlq.explain(
        world.sqs, world.dynamodb, world.dlq_url, table, consumer=consumer, state_table=STATE_TABLE
    )
    return {e.event_id or "?": e for e in explained}


@pytest.mark.parametrize("in_item", [True, False], ids=["in-item", "state-table"])
def test_a_death_on_the_last_receive_leaves_a_bare_copy_that_explain_reads_from_the_claim(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, in_item: bool
) -> None:
    from handlers import orders

    aws.claims_in_items = in_item
    extra = {env.MAX_RECEIVE_COUNT: str(MAX_RECEIVES)}
    with entry_point(aws, monkeypatch, **extra):
        handler = orders.handler if in_item else lambda_handler(separate_claim_orders())
        source = source_queue(aws, handler, max_receive_count=MAX_RECEIVES, name="orders-src")
        for event_id, death in (DEATHS if in_item else STATE_TABLE_DEATHS).items():
            _die_on_every_receive(source, event_id, death)
        # One copy the runtime quarantined itself, with its reason, for contrast.
        source.send("not json")
        response, _ = source.invoke()
        assert response == {"batchItemFailures": []}

    peeked = {m.message_id: m for m in dlq.peek(aws.sqs, aws.dlq_url, 10)}
    assert len(peeked) == 4
    assert sorted(m.reasonless for m in peeked.values()) == [False, True, True, True]

    table = BUSINESS_TABLE if in_item else STATE_TABLE
    consumer = orders.ORDERS if in_item else separate_claim_orders()
    explained = _explained(aws, table, consumer)
    never, owed, done = (
        explained["never-written"],
        explained["owes-notification"],
        explained["fully-done"],
    )
    assert all(e.reasonless for e in (never, owed, done))
    assert (never.claim, never.write_applied, never.notification_owed) == ("absent", False, False)
    assert (owed.claim, owed.write_applied, owed.notification_owed) == ("pending", True, True)
    assert (done.claim, done.write_applied, done.notification_owed) == ("sent", True, False)
    assert "SQS moved this copy with no reason" in owed.advice and "redrive" in owed.advice
    assert "can be deleted" in done.advice
    assert "NOT applied" in never.advice
    (ours,) = [e for e in explained.values() if not e.reasonless]
    assert ours.failure_kind == "not_json" and ours.event_id is None
    # The bare copies are still there: explain consumed none.
    assert len(dlq.peek(aws.sqs, aws.dlq_url, 10)) == 4


def test_the_cli_explains_a_bare_copy_as_json_and_peek_flags_it(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from handlers import orders

    aws.claims_in_items = True
    with entry_point(aws, monkeypatch, **{env.MAX_RECEIVE_COUNT: str(MAX_RECEIVES)}):
        source = source_queue(aws, orders.handler, max_receive_count=MAX_RECEIVES, name="src")
        _die_on_every_receive(source, "owes-notification", DEATHS["owes-notification"])
    monkeypatch.setattr(cli, "_client", lambda args, service, **_: getattr(aws, service))
    argv = ["--dlq-url", aws.dlq_url, "--json"]
    assert cli.main(["peek", *argv]) == 0
    (peeked,) = json.loads(capsys.readouterr().out)
    assert peeked["reasonless"] is True and peeked["reasons"] == {}
    code = ["--table", BUSINESS_TABLE, "--consumer-code", "handlers.orders:ORDERS"]
    code += ["--state-table", STATE_TABLE]  # where the claim's publication receipt lives
    assert cli.main(["explain", *argv, *code]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["event_id"] == "owes-notification"
    assert row["claim"] == "pending" and row["claim_key"] == {"event_id": "owes-notification"}
    assert row["write_applied"] is True and row["notification_owed"] is True
    assert cli.main(["peek", "--dlq-url", aws.dlq_url]) == 0
    assert "no reason attributes" in capsys.readouterr().out


def test_an_informed_redrive_of_a_bare_copy_publishes_the_owed_notification_once(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manual redrive stamps the bare copy's first-seen time (its DLQ SentTimestamp, the
    original enqueue time on a standard queue); the redelivery meets the pending claim and
    publishes only: one row, the notification now."""
    from handlers import orders

    aws.claims_in_items = True
    with entry_point(aws, monkeypatch, **{env.MAX_RECEIVE_COUNT: str(MAX_RECEIVES)}):
        source = source_queue(aws, orders.handler, max_receive_count=MAX_RECEIVES, name="src")
        _die_on_every_receive(source, "owes-notification", DEATHS["owes-notification"])
        (bare,) = aws.sqs.receive_message(QueueUrl=aws.dlq_url, AttributeNames=["All"])["Messages"]
        aws.sqs.change_message_visibility(
            QueueUrl=aws.dlq_url, ReceiptHandle=bare["ReceiptHandle"], VisibilityTimeout=0
        )
        assert dlq.redrive(aws.sqs, aws.dlq_url, source.url, method="manual").moved == 1
        response, records = source.invoke()
    assert response == {"batchItemFailures": []}
    first_seen = records[0]["messageAttributes"][env.FIRST_SEEN_ATTRIBUTE]["stringValue"]
    assert first_seen == bare["Attributes"]["SentTimestamp"]
    assert [n["event_id"] for n in aws.notifications()] == ["owes-notification"]
    (row,) = aws.order_rows()
    assert row[env.ITEM_CLAIM_STATUS] == {"S": env.STATUS_SENT}
    assert aws.dlq_messages() == []
    assert attributes_of(bare) == {}  # it was bare: no reason of ours
