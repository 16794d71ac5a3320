"""Dispatcher -> FIFO work queue -> handlers.charges.handler, end to end on moto.

The claim: however often the month is triggered (double-fired schedule, late retry, manual
re-run) and however the queue misbehaves (producer duplicates, a crash between commit and
publish), each (tenant, employee, month) has exactly one ledger row and at least one
notification, and nothing is lost.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from handlers import charges
from idempotent_messaging.dispatch import env as denv
from idempotent_messaging.dispatch.keys import deduplication_id
from idempotent_messaging.runtime import env as renv
from tests.integration.test_dispatch_world import (
    LEDGER,
    STATE,
    Crash,
    World,
    account,
    accounts,
    consumer_clients,
)
from tests.integration.test_dispatch_world import world as world

pytestmark = pytest.mark.integration

# 03:00 on June 1st in Tokyo = 18:00 UTC on May 31st.
SCHEDULED = {"trigger": "schedule", "scheduled_time": "2026-05-31T18:00:00Z"}


class CrashOnce:
    """Kills the consumer process once, at the given AWS operation (after the commit)."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self.fired = False

    def __call__(self, model: Any, **_: Any) -> None:
        if model.name == self.operation and not self.fired:
            self.fired = True
            raise Crash(f"process died before {model.name}")


def expected_keys(tenants: int, employees: int) -> set[str]:
    return {f"t{t:03d}:e{e:05d}:2026-06" for t in range(tenants) for e in range(employees)}


def ledger(world: World) -> Counter[tuple[str, str]]:
    return Counter(
        (row[denv.LEDGER_HASH_KEY]["S"], row[denv.LEDGER_RANGE_KEY]["S"])
        for row in world.scan(LEDGER)
    )


def test_repeated_triggers_duplicates_and_a_crash_leave_one_ledger_row_per_charge(
    world: World,
) -> None:
    world.seed([*accounts(3, 8), account("t000", "left", active=False)])
    crash = CrashOnce("PublishBatch")
    consumer_clients().sns.meta.events.register("before-call.sns.PublishBatch", crash)

    world.dispatch(SCHEDULED)
    world.dispatch(SCHEDULED)  # the schedule fired twice
    world.drain_work(charges.handler)  # includes one crash between commit and publish
    world.dispatch(SCHEDULED)  # Scheduler's late retry
    world.dispatch({"month": "2026-06"})  # an operator re-runs the month: re-sends all 24
    # A producer duplicate that FIFO dedup cannot catch (new dedup id, beyond the window).
    body = json.dumps(
        {
            "event_id": "t001:e00003:2026-06",
            "idempotency_key": "t001:e00003:2026-06",
            "tenant_id": "t001",
            "employee_id": "e00003",
            "month": "2026-06",
            "amount": 1003,
            "currency": "JPY",
        },
        sort_keys=True,
    )
    world.sqs.send_message(
        QueueUrl=world.work_url,
        MessageBody=body,
        MessageGroupId="t001#2026-06",
        MessageDeduplicationId="resend-" + deduplication_id("t001:e00003:2026-06"),
    )
    world.drain_work(charges.handler)

    assert crash.fired, "the crash must have happened for this test to mean anything"
    # The re-run's 24 re-sends and the producer duplicate really reached the consumer.
    assert sum(len(batch) for batch in world.batches) >= 2 * 24 + 1
    rows = ledger(world)
    want = {(key.split(":")[0], f"{key.split(':')[1]}#2026-06") for key in expected_keys(3, 8)}
    assert set(rows) == want and set(rows.values()) == {1}
    by_key = {row["idempotency_key"]["S"]: row for row in world.scan(LEDGER)}
    assert by_key["t002:e00005:2026-06"]["amount"]["N"] == "1005"
    assert by_key["t002:e00005:2026-06"]["currency"]["S"] == "JPY"
    notified = Counter(n["idempotency_key"] for n in world.notifications())
    assert set(notified) == expected_keys(3, 8)  # at least one each
    assert world.queue_depth(world.work_dlq_url) == 0  # nothing quarantined, nothing lost
    assert world.queue_depth(world.work_url) == 0
    record = world.run_record("2026-06")
    assert record["status"]["S"] == "finished" and record["generation"]["N"] == "2"


def test_the_charge_claim_lives_in_its_ledger_row_for_as_long_as_the_row(world: World) -> None:
    """The charges consumer declares SingleItemEffect over the ledger key: the claim is the
    row's ``claim_*`` attributes, with no TTL (it lives as long as the row), and the state
    table is not written."""
    world.seed([account("acme", "alice", amount=250_000)])
    world.dispatch(SCHEDULED)
    world.drain_work(charges.handler)
    rows = world.scan(LEDGER)
    assert len(rows) == 1
    row = rows[0]
    assert row[denv.LEDGER_HASH_KEY]["S"] == "acme"
    assert row[denv.LEDGER_RANGE_KEY]["S"] == "alice#2026-06"
    assert row[renv.ITEM_CLAIM_EVENT_ID]["S"] == "acme:alice:2026-06"
    assert renv.DEFAULT_TTL_ATTRIBUTE not in row
    # Published: the batch's receipt, the state table's only item, lists it; no TTL either.
    (receipt,) = world.scan(STATE)
    assert receipt["published"]["SS"] == ["acme:alice:2026-06"]
    assert row[renv.ITEM_CLAIM_RECEIPT]["S"] == receipt["pk"]["S"]
    assert renv.DEFAULT_TTL_ATTRIBUTE not in receipt


def test_a_month_rerun_long_after_is_a_duplicate_not_a_second_charge(world: World) -> None:
    """However late the re-run, the row and its claim are still there: the redelivery meets
    this event's ``sent`` claim and is skipped, neither charged nor quarantined."""
    world.seed([account("acme", "alice")])
    world.dispatch(SCHEDULED)
    world.drain_work(charges.handler)
    first_notes = [n["idempotency_key"] for n in world.notifications()]
    assert first_notes == ["acme:alice:2026-06"]
    received = sum(len(batch) for batch in world.batches)
    world.dispatch({"month": "2026-06"})
    world.drain_work(charges.handler)
    # The re-run's message really reached the consumer.
    assert sum(len(batch) for batch in world.batches) > received
    assert ledger(world) == Counter({("acme", "alice#2026-06"): 1})
    assert world.queue_depth(world.work_dlq_url) == 0
    assert world.notifications() == []  # already sent: nothing published again
    assert all(item["pk"]["S"].startswith(renv.RECEIPT_KEY_PREFIX) for item in world.scan(STATE))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("amount", "12"),
        ("currency", "yen"),
        ("idempotency_key", "acme:bob:2026-06"),
        ("month", "2026-13"),
    ],
)
def test_malformed_charges_are_quarantined_while_their_neighbours_are_charged(
    world: World, field: str, value: Any
) -> None:
    good = {
        "event_id": "acme:alice:2026-06",
        "idempotency_key": "acme:alice:2026-06",
        "tenant_id": "acme",
        "employee_id": "alice",
        "month": "2026-06",
        "amount": 100,
        "currency": "JPY",
    }
    bad = dict(
        good,
        event_id="acme:carol:2026-06",
        idempotency_key="acme:carol:2026-06",
        employee_id="carol",
    )
    bad[field] = value
    for i, body in enumerate((bad, good)):
        world.sqs.send_message(
            QueueUrl=world.work_url,
            MessageBody=json.dumps(body),
            MessageGroupId=f"acme#2026-06-{i}",  # separate groups: the good one is not held
            MessageDeduplicationId=f"d{i}",
        )
    world.drain_work(charges.handler)
    assert ledger(world) == Counter({("acme", "alice#2026-06"): 1})
    assert world.queue_depth(world.work_dlq_url) == 1


def test_a_charge_re_sent_with_an_edited_amount_is_a_conflict_never_a_silent_duplicate(
    world: World,
) -> None:
    """Issue 27 through the charges entry point: a producer that re-sends a charge's
    idempotency key with another amount (an edited re-run, a counter reset) neither charges
    twice nor is dropped as a duplicate: the first charge stands and the copy is in the DLQ as
    ``conflicting_duplicate``. The unchanged re-send stays a plain duplicate."""
    world.seed([account("acme", "alice")])
    world.dispatch(SCHEDULED)
    world.drain_work(charges.handler)
    (row,) = world.scan(LEDGER)
    assert [n["idempotency_key"] for n in world.notifications()] == ["acme:alice:2026-06"]
    body = {
        "event_id": "acme:alice:2026-06",
        "idempotency_key": "acme:alice:2026-06",
        "tenant_id": "acme",
        "employee_id": "alice",
        "month": "2026-06",
        "amount": int(row["amount"]["N"]),
        "currency": row["currency"]["S"],
    }
    for dedup, amount in (("same", body["amount"]), ("edited", body["amount"] + 1)):
        world.sqs.send_message(
            QueueUrl=world.work_url,
            MessageBody=json.dumps(dict(body, amount=amount)),
            MessageGroupId="acme#2026-06",
            MessageDeduplicationId=dedup,
        )
    world.drain_work(charges.handler)
    assert world.scan(LEDGER) == [row]  # one charge, untouched
    assert world.notifications() == []
    (copy,) = world.sqs.receive_message(QueueUrl=world.work_dlq_url, MessageAttributeNames=["All"])[
        "Messages"
    ]
    assert json.loads(copy["Body"])["amount"] == body["amount"] + 1
    kind = copy["MessageAttributes"]["failure_kind"]["StringValue"]
    assert kind == "conflicting_duplicate"
    reason = copy["MessageAttributes"]["failure_reason"]["StringValue"]
    assert "acme:alice:2026-06" in reason  # the event named, never the amount
