"""Process deaths between every pair of AWS calls, transient faults, and random interleavings:
after redelivery, every event has exactly one business row and at least one notification."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from handlers.orders import order_notification, order_writes
from idempotent_messaging.runtime import Consumer
from tests.integration.test_runtime_world import (
    Aws,
    FakeContext,
    SimQueue,
    Worlds,
    article_orders,
    assert_exactly_once,
    order_body,
    put_legacy_row,
    single_item_orders,
)

pytestmark = pytest.mark.integration

# No real sleeping for app-level conflict backoff (botocore's own backoff still runs).
CONSUMER = Consumer(writes=order_writes, notification=order_notification, sleep=lambda _s: None)
CLAIMS_IN_ITEMS = False
ROWS_BY_ORDER = False


@pytest.fixture(params=["separate-claim", "claim-in-item", "claim-then-row"])
def placement(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test for every claim placement: a separate claim item, the claim in the order
    row (SingleItemEffect), or the claim then the row keyed by order_id (DomainKeyedCreate,
    the source article's tables). The helpers below read these module names at call time."""
    if request.param == "claim-in-item":
        monkeypatch.setattr(
            sys.modules[__name__], "CONSUMER", single_item_orders(sleep=lambda _s: None)
        )
        monkeypatch.setattr(sys.modules[__name__], "CLAIMS_IN_ITEMS", True)
    if request.param == "claim-then-row":
        monkeypatch.setattr(
            sys.modules[__name__], "CONSUMER", article_orders(sleep=lambda _s: None)
        )
        monkeypatch.setattr(sys.modules[__name__], "ROWS_BY_ORDER", True)
    return str(request.param)


@pytest.fixture(scope="module")
def worlds() -> Iterator[Worlds]:
    """One moto world for the module; each scenario gets it emptied, on new clients."""
    with mock_aws():
        yield Worlds()


def new_world(worlds: Worlds) -> Aws:
    return worlds.fresh(claims_in_items=CLAIMS_IN_ITEMS, rows_by_order=ROWS_BY_ORDER)


@dataclass(frozen=True)
class CrashAt:
    """Die before the ``call``-th AWS call of a delivery, or right after it when ``after``."""

    call: int
    after: bool = False


def processor(world: Aws) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda event: CONSUMER.process(event, FakeContext(), world.runtime())


def deliver(world: Aws, queue: SimQueue, crash: CrashAt | None, size: int = 10) -> int:
    """One delivery with an optional crash; returns how many AWS calls it made."""
    start = len(world.calls)
    world.crash_before_call = world.crash_after_call = None
    if crash is not None:
        if crash.after:
            world.crash_after_call = start + crash.call
        else:
            world.crash_before_call = start + crash.call
    try:
        queue.deliver(processor(world), size)
    finally:
        world.crash_before_call = world.crash_after_call = None
    return len(world.calls) - start


def seed_mixed(world: Aws, queue: SimQueue) -> dict[str, str]:
    """A batch that takes every batched branch: fresh, pending duplicate, sent duplicate,
    in-batch duplicate, semantic clash and poison."""
    proc = processor(world)
    pre = SimQueue()
    pre.send(order_body("sent"))
    pre.drain(proc)
    pre.send(order_body("pending"))
    world.crash_before_call = len(world.calls) + 2  # die before publishing
    assert pre.deliver(proc) is None
    world.crash_before_call = None
    queue.send(order_body("fresh"))
    queue.send(order_body("pending"))
    queue.send(order_body("sent"))
    queue.send(order_body("fresh"))
    put_legacy_row(world, "clash", order_id="order-sent")  # its key is already recorded
    queue.send(order_body("clash", order_id="order-sent"))
    queue.send("not json")
    return {"sent": "order-sent", "pending": "order-pending", "fresh": "order-fresh"}


def seed_fresh(world: Aws, queue: SimQueue, n: int = 3) -> dict[str, str]:
    for i in range(n):
        queue.send(order_body(f"e{i}"))
    return {f"e{i}": f"order-e{i}" for i in range(n)}


def check_final(world: Aws, queue: SimQueue, expected: dict[str, str], poison: int) -> None:
    queue.drain(processor(world))
    assert_exactly_once(world, expected)
    dlq = world.dlq_messages()
    originals = {m["MessageAttributes"]["original_message_id"]["StringValue"] for m in dlq}
    assert len(originals) == poison
    assert all(m["MessageAttributes"]["failure_reason"]["StringValue"] for m in dlq)


def calls_of_first_delivery(worlds: Worlds, seed: Callable[[Aws, SimQueue], dict[str, str]]) -> int:
    world, queue = new_world(worlds), SimQueue()
    seed(world, queue)
    return deliver(world, queue, None)


@pytest.mark.parametrize(
    ("seed", "poison"), [(seed_fresh, 0), (seed_mixed, 2)], ids=["fresh", "every-branch"]
)
def test_crash_between_every_pair_of_calls_then_redelivery_is_exactly_once(
    worlds: Worlds,
    aws_env: dict[str, str],
    seed: Callable[[Aws, SimQueue], dict[str, str]],
    poison: int,
    placement: str,
) -> None:
    n_calls = calls_of_first_delivery(worlds, seed)
    assert n_calls >= 3
    points = [CrashAt(k) for k in range(1, n_calls + 1)] + [CrashAt(n_calls, after=True)]
    for crash in points:
        world, queue = new_world(worlds), SimQueue()
        expected = seed(world, queue)
        waiting = len(queue.messages)
        deliver(world, queue, crash)
        assert len(queue.messages) == waiting  # a dead process acknowledges nothing
        check_final(world, queue, expected, poison)


def _explore(
    worlds: Worlds,
    path: tuple[CrashAt | None, ...],
    crashes_left: int,
    size: int,
    seen: list[tuple[Any, ...]],
) -> None:
    """Run the deliveries with crashes as ``path`` says, check the end state, then branch:
    every later delivery may die at each of its crash points (depth-first, up to the budget)."""
    seen.append(path)
    world, queue = new_world(worlds), SimQueue()
    expected = seed_fresh(world, queue, 3)
    counts: list[int] = []
    for step in range(200):
        if not queue.messages:
            break
        crash = path[step] if step < len(path) else None
        counts.append(deliver(world, queue, crash, size))
    assert not queue.messages
    assert_exactly_once(world, expected)
    if crashes_left == 0:
        return
    for step in range(len(path), len(counts)):
        if counts[step] == 0:
            continue
        for k in range(1, counts[step] + 2):
            crash = CrashAt(k) if k <= counts[step] else CrashAt(counts[step], after=True)
            prefix = path + (None,) * (step - len(path))
            _explore(worlds, (*prefix, crash), crashes_left - 1, size, seen)


@pytest.mark.parametrize(("size", "budget"), [(3, 2), (1, 1)], ids=["one-batch", "one-by-one"])
def test_exhaustive_crash_points_for_three_events(
    worlds: Worlds, aws_env: dict[str, str], size: int, budget: int, placement: str
) -> None:
    seen: list[tuple[Any, ...]] = []
    _explore(worlds, (), budget, size, seen)
    # one batch: 1 clean run + 4 single crashes + 4 x (points of each redelivery) doubles
    assert len(seen) >= (1 + 4 + 4 * 2 if size == 3 else 1 + 3 * 4)


def test_thirty_percent_transient_faults_still_give_exactly_once_with_bounded_retries(
    worlds: Worlds,
    aws_env: dict[str, str],
) -> None:
    world, queue = new_world(worlds), SimQueue()
    expected = seed_fresh(world, queue, 20)
    world.reset_counts()
    world.fault_rate = 0.3
    deliveries = 0
    while queue.messages and deliveries < 60:
        queue.deliver(processor(world))
        deliveries += 1
    world.fault_rate = 0.0
    assert not queue.messages, "faults must only delay, never lose or stall, messages"
    assert world.faults > 0
    assert max(world.attempts) <= 3  # botocore: 3 attempts in total, no stacked loop
    assert any(a > 1 for a in world.attempts)  # botocore's retry really ran
    assert_exactly_once(world, expected)


# --- property: any mix of deliveries, re-sends, crashes and faults ends exactly once ----------
_actions = st.one_of(
    st.tuples(st.just("send"), st.integers(0, 3)),
    st.tuples(st.just("poison"), st.just(0)),
    st.tuples(
        st.just("deliver"),
        st.integers(1, 5),  # batch size
        st.one_of(st.none(), st.integers(1, 6)),  # crash before the n-th call
        st.booleans(),  # 30 % transient faults during this delivery
    ),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(actions=st.lists(_actions, min_size=1, max_size=12))
def test_any_interleaving_of_deliveries_duplicates_crashes_and_faults_ends_exactly_once(
    worlds: Worlds, aws_env: dict[str, str], actions: list[tuple[Any, ...]]
) -> None:
    world, queue = new_world(worlds), SimQueue()
    sent: dict[str, str] = {}
    poison_ids: set[str] = set()
    for action in actions:
        if action[0] == "send":
            event_id = f"e{action[1]}"
            queue.send(order_body(event_id))  # a (re-)send: new messageId, same event id
            sent[event_id] = f"order-{event_id}"
        elif action[0] == "poison":
            poison_ids.add(queue.send(json.dumps({"order": {"order_id": "p"}})))
        else:
            _, size, crash_at, faulty = action
            world.fault_rate = 0.3 if faulty else 0.0
            deliver(world, queue, CrashAt(crash_at) if crash_at else None, size)
            world.fault_rate = 0.0
    queue.drain(processor(world))
    assert_exactly_once(world, sent)
    dlq = world.dlq_messages()
    reasons = {
        m["MessageAttributes"]["original_message_id"]["StringValue"]: m["MessageAttributes"][
            "failure_reason"
        ]["StringValue"]
        for m in dlq
    }
    assert set(reasons) == poison_ids
    assert all(reasons.values())
