"""The soak's checker catches every way an end state can break the promise (its self-test).

A good end state passes; each corruption below breaks exactly one rule, and the checker must
name it, with the event it concerns. A checker that passed any of them would let a soak report
OK over a lost message, a double effect or a silent poison."""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable

import pytest

from idempotent_messaging.local.soak_check import (
    CONFLICT_KIND,
    RULES,
    DeadLetter,
    EndState,
    check,
    summary,
)

pytestmark = pytest.mark.unit

POISON = ["not json { p1", json.dumps({"event_id": "p2", "order": {"item": "pen"}})]
CONFLICT = json.dumps({"event_id": "e2", "order": {"order_id": "o2", "quantity": 102}})


def good() -> EndState:
    effects = {f"e{i}": {"order_id": f"o{i}", "quantity": i} for i in range(1, 4)}
    return EndState(
        effects=effects,
        poison=list(POISON),
        conflicts={"e2": [CONFLICT]},
        rows=[
            {"event_id": e, **effect, "claim_status": "sent", "recorded_at": 1}
            for e, effect in effects.items()
        ],
        notifications=Counter({"e1": 1, "e2": 2, "e3": 1}),
        dlq=[
            DeadLetter(POISON[0], "schema", "body is not JSON"),
            DeadLetter(POISON[1], "schema", "field 'order.order_id' is missing"),
            DeadLetter(POISON[1], "schema", "field 'order.order_id' is missing"),  # a 2nd copy
            DeadLetter(CONFLICT, CONFLICT_KIND, "event e2 was claimed with other content"),
        ],
        left_in_queue=0,
    )


def test_a_good_end_state_passes_with_duplicates_allowed_where_the_promise_allows_them() -> None:
    """Two notifications for one event and two DLQ copies of one poison message are at least
    once, as promised: not violations."""
    assert check(good()) == []
    assert set(summary([])) == set(RULES) and not any(summary([]).values())


def _missing_row(s: EndState) -> None:
    s.rows = [r for r in s.rows if r["event_id"] != "e1"]


def _double_row(s: EndState) -> None:
    s.rows.append(dict(s.rows[0]))


def _lost_notification(s: EndState) -> None:
    del s.notifications["e3"]


def _changed_effect(s: EndState) -> None:
    s.rows[1]["quantity"] = 102  # the conflict's content overwrote the first effect


def _poison_missing(s: EndState) -> None:
    s.dlq = [d for d in s.dlq if d.body != POISON[0]]


def _poison_without_reason(s: EndState) -> None:
    s.dlq = [DeadLetter(d.body) if d.body == POISON[0] else d for d in s.dlq]


def _conflict_missing(s: EndState) -> None:
    s.dlq = [d for d in s.dlq if d.body != CONFLICT]


def _conflict_as_other_kind(s: EndState) -> None:
    s.dlq = [
        DeadLetter(d.body, "retries_exhausted", "x") if d.body == CONFLICT else d for d in s.dlq
    ]


def _left_in_queue(s: EndState) -> None:
    s.left_in_queue = 1


def _valid_event_stuck_in_dlq(s: EndState) -> None:
    s.dlq.append(DeadLetter(json.dumps({"event_id": "e3", "order": {"order_id": "o3"}})))


def _phantom_row(s: EndState) -> None:
    s.rows.append({"event_id": "never-sent", "order_id": "o9"})


CORRUPTIONS: dict[str, tuple[Callable[[EndState], None], str, str]] = {
    # name: (corruption, rule it breaks, subject the violation names)
    "missing row": (_missing_row, "one row", "e1"),
    "double row": (_double_row, "one row", "e1"),
    "lost notification": (_lost_notification, "notified", "e3"),
    "first effect changed": (_changed_effect, "first effect unchanged", "e2"),
    "poison not in the DLQ": (_poison_missing, "poison in the DLQ with its reason", POISON[0]),
    "poison without reason": (
        _poison_without_reason,
        "poison in the DLQ with its reason",
        POISON[0],
    ),
    "conflict not in the DLQ": (_conflict_missing, "conflict in the DLQ with its reason", "e2"),
    "conflict under another kind": (
        _conflict_as_other_kind,
        "conflict in the DLQ with its reason",
        "e2",
    ),
    "message left in the queue": (_left_in_queue, "nothing lost", "source queue"),
    "valid event stuck in the DLQ": (_valid_event_stuck_in_dlq, "nothing lost", "e3"),
    "row for an event never sent": (_phantom_row, "nothing lost", "never-sent"),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_each_corruption_of_the_end_state_is_caught_and_named(name: str) -> None:
    corrupt, rule, subject = CORRUPTIONS[name]
    state = copy.deepcopy(good())
    corrupt(state)
    violations = check(state)
    assert [(v.rule, v.subject) for v in violations] == [(rule, subject)], violations
    assert summary(violations)[rule] == 1


def test_every_rule_has_a_corruption_that_breaks_it() -> None:
    assert {rule for _, rule, _ in CORRUPTIONS.values()} == set(RULES)
