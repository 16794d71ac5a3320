"""Exhaustive enumeration on a batch with two message groups and a poison record, on a FIFO
queue and on a standard one (where single-item claims are PartiQL INSERTs, not a transaction):
{no publish fault, one PublishBatch entry refused (for each event), a whole PublishBatch call
failed} x {DLQ send works, DLQ send fails} x {no crash, a process death before every AWS call
of the first delivery, after its last call}, for both claim placements. After redelivery, each
time:

* every valid event has exactly one row, a ``sent`` claim and at least one notification;
* FIFO: within each group, the first acknowledgement of each event follows the queue order;
* the poison record is in the DLQ exactly once, with its reason.

``make crash-check`` runs the whole product (placement x queue x publish fault x quarantine
fault, each at every crash point). ``make test`` runs every fault combination at every crash
point, the placements and queues cycled through them so that each one meets at least one
combination (``combinations``); tests/integration/test_runtime_crashes.py enumerates every
crash point of every placement on its own.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from handlers.orders import order_notification, order_writes
from idempotent_messaging.runtime import Consumer
from tests.integration.runtime_faults import drop_publish_entries, fail_sends
from tests.integration.test_runtime_crashes import CrashAt
from tests.integration.test_runtime_world import (
    Aws,
    Crash,
    FakeContext,
    SimQueue,
    Worlds,
    article_orders,
    assert_exactly_once,
    order_body,
    single_item_orders,
)

pytestmark = pytest.mark.integration

CONSUMER = Consumer(writes=order_writes, notification=order_notification, sleep=lambda _s: None)
# Where the claim lives: a separate claim item, in the order row (SingleItemEffect), or in the
# state table before the row keyed by order_id (DomainKeyedCreate; on FIFO it takes the separate
# claim's transaction, so it runs on the standard queue only).
PLACEMENTS = {
    "separate-claim": (CONSUMER, False),
    "claim-in-item": (single_item_orders(sleep=lambda _s: None), True),
    "claim-then-row": (article_orders(sleep=lambda _s: None), False),
}
QUEUE = [("a1", "a"), ("b1", "b"), ("POISON", "a"), ("a2", "a"), ("b2", "b")]
EXPECTED = {e: f"order-{e}" for e, _ in QUEUE if e != "POISON"}
PUBLISH_FAULTS = ["none", "chunk"] + [f"entry:{e}" for e in EXPECTED]
QUARANTINE_FAULTS = ["none", "dlq-down"]


@pytest.fixture(scope="module")
def worlds() -> Iterator[Worlds]:
    """One moto world for the module; each scenario gets it emptied, on new clients."""
    with mock_aws():
        yield Worlds()


def acknowledgements(world: Aws) -> list[str]:
    acked: list[str] = []
    sent: dict[str, str] = {}

    def remember(params: dict[str, Any], **_: Any) -> None:
        import json

        for entry in params.get("PublishBatchRequestEntries", []):
            sent[entry["Id"]] = json.loads(entry["Message"])["event_id"]

    def collect(parsed: dict[str, Any], **_: Any) -> None:
        acked.extend(sent[ok["Id"]] for ok in parsed.get("Successful", []) if ok["Id"] in sent)

    world.sns.meta.events.register("before-parameter-build.sns.PublishBatch", remember)
    world.sns.meta.events.register("after-call.sns.PublishBatch", collect)
    return acked


def first_delivery(
    world: Aws,
    queue: SimQueue,
    publish: str,
    quarantine: str,
    crash: Any,
    consumer: Consumer,
    fifo: bool = True,
) -> int:
    """The faulty first delivery; returns how many AWS calls it made."""
    if publish == "chunk":
        fail_sends(world.sns, "PublishBatch", 3)  # botocore's 3 attempts all fail
    elif publish.startswith("entry:"):
        drop_publish_entries(world.sns, {publish.split(":", 1)[1]})
    if quarantine == "dlq-down":
        fail_sends(world.sqs, "SendMessageBatch", 3)
    start = len(world.calls)
    if crash is not None:
        if crash.after:
            world.crash_after_call = start + crash.call
        else:
            world.crash_before_call = start + crash.call
    runtime = world.runtime(source_fifo=fifo)
    try:
        queue.deliver(lambda event: consumer.process(event, FakeContext(), runtime))
    except Crash:  # pragma: no cover - SimQueue.deliver absorbs it
        raise
    finally:
        world.crash_before_call = world.crash_after_call = None
    return len(world.calls) - start


def scenario(
    worlds: Worlds,
    publish: str,
    quarantine: str,
    crash: Any,
    placement: str = "separate-claim",
    fifo: bool = True,
) -> int:
    consumer, claims_in_items = PLACEMENTS[placement]
    # AWS: a FIFO source needs a FIFO DLQ; its dedup id (the original messageId) makes a
    # re-quarantine after a crash a no-op within SQS's 5-minute deduplication window.
    world = worlds.fresh(
        fifo_dlq=fifo,
        claims_in_items=claims_in_items,
        rows_by_order=placement == "claim-then-row",
    )
    queue = SimQueue(fifo=fifo)
    acked = acknowledgements(world)
    poison_id = ""
    for event_id, group in QUEUE:
        body = "not json" if event_id == "POISON" else order_body(event_id)
        message_id = queue.send(body, group_id=group if fifo else None)
        if event_id == "POISON":
            poison_id = message_id
    calls = first_delivery(world, queue, publish, quarantine, crash, consumer, fifo)
    # Every fault is gone: SQS redelivers until the queue is empty.
    runtime = world.runtime(source_fifo=fifo)
    queue.drain(lambda event: consumer.process(event, FakeContext(), runtime))
    assert_exactly_once(world, EXPECTED)
    for group in "ab" if fifo else "":
        order = [e for e, g in QUEUE if g == group and e != "POISON"]
        firsts = list(dict.fromkeys(e for e in acked if e in order))
        assert firsts == order, (group, acked)
    originals = Counter(
        m["MessageAttributes"]["original_message_id"]["StringValue"] for m in world.dlq_messages()
    )
    # A standard DLQ has no deduplication: a crash after the DLQ send and before the
    # acknowledgement quarantines the poison again on redelivery (at-least-once).
    assert set(originals) == {poison_id} and (not fifo or originals[poison_id] == 1)
    return calls


PLACED = [
    (placement, queue)
    for placement in PLACEMENTS
    for queue in ("fifo", "standard")
    # FIFO: DomainKeyedCreate commits claim and row in the separate claim's transaction
    if not (placement == "claim-then-row" and queue == "fifo")
]
FULL = os.environ.get("ENUMERATION") == "full"
"""``make crash-check``: the whole product. ``make test``: ``combinations()``'s sample."""


def combinations() -> list[tuple[str, str, str, str]]:
    """(publish, quarantine, placement, queue): every fault combination once, the placements
    and queues cycled through them (each one at least once); with ``FULL``, the product."""
    faults = list(itertools.product(PUBLISH_FAULTS, QUARANTINE_FAULTS))
    if FULL:
        return [(p, q, placement, queue) for p, q in faults for placement, queue in PLACED]
    assert len(faults) >= len(PLACED)  # so the cycle reaches every placement and queue
    return [(p, q, *PLACED[n % len(PLACED)]) for n, (p, q) in enumerate(faults)]


def test_the_sample_meets_every_fault_combination_placement_and_queue() -> None:
    sample = combinations()
    assert {(p, q) for p, q, _, _ in sample} == set(
        itertools.product(PUBLISH_FAULTS, QUARANTINE_FAULTS)
    )
    assert {(placement, queue) for _, _, placement, queue in sample} == set(PLACED)


@pytest.mark.parametrize(("publish", "quarantine", "placement", "queue"), combinations())
def test_publish_and_quarantine_faults_times_every_crash_point_keep_the_promise(
    worlds: Worlds,
    aws_env: dict[str, str],
    publish: str,
    quarantine: str,
    placement: str,
    queue: str,
) -> None:
    fifo = queue == "fifo"
    n_calls = scenario(worlds, publish, quarantine, None, placement, fifo)
    assert n_calls >= 2
    points = [CrashAt(k) for k in range(1, n_calls + 1)] + [CrashAt(n_calls, after=True)]
    for crash in points:
        scenario(worlds, publish, quarantine, crash, placement, fifo)
