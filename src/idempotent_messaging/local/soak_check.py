"""The soak's checker: what must hold per event at the end of a run, whatever happened on the way.

Pure: it reads an ``EndState`` (what was sent, and what the emulator holds afterwards) and
returns every violation, each naming the event, the rule and what was found. The rules are the
project's promise (README, docs/runtime.md):

- **one row**: every valid event has exactly one business row (never none, never two);
- **notified**: every valid event has at least one notification (after ``ops owed`` republished
  what the claims still owed);
- **first effect unchanged**: the row holds the content of the event's first message; a later
  message with the same event id and other content (a conflict) never changed it;
- **poison and conflicts in the DLQ with their reason**: each poison message and each
  conflicting re-send is in the dead-letter queue, with a ``failure_kind`` and a reason
  (a conflict's kind is ``conflicting_duplicate``);
- **nothing lost**: the source queue is empty (nothing visible, in flight or delayed), the DLQ
  holds nothing else (no valid event stuck there, nothing without a reason), and no row exists
  for an event that was never sent.

tests/unit/test_soak_check.py corrupts a good end state one way per rule (a missing row, a
double row, a lost notification, poison not in the DLQ, ...) and requires each to be caught.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CONFLICT_KIND = "conflicting_duplicate"


@dataclass(frozen=True)
class DeadLetter:
    """One message in the DLQ at the end: its body and the reason the runtime attached."""

    body: str
    failure_kind: str | None = None
    failure_reason: str | None = None
    message_id: str = ""
    """Its SQS message id: two copies of one body are two messages, one message read twice
    is one."""


@dataclass
class EndState:
    """What was sent, and what the emulator holds after the run."""

    effects: dict[str, dict[str, Any]]
    """Valid event id -> the effect of its FIRST message (the fields its row must hold)."""
    poison: list[str] = field(default_factory=list)
    """Bodies of the poison messages sent (each distinct)."""
    conflicts: dict[str, list[str]] = field(default_factory=dict)
    """Event id -> bodies re-sent with that id and other content."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """The business table's items, as plain values (``row_key`` names the event)."""
    row_key: str = "event_id"
    notifications: Counter[str] = field(default_factory=Counter)
    """Event id -> notifications a subscriber received."""
    dlq: list[DeadLetter] = field(default_factory=list)
    left_in_queue: int = 0
    """Visible + in flight + delayed in the source queue."""


@dataclass(frozen=True)
class Violation:
    rule: str
    subject: str
    """The event id (or the poison message) it concerns."""
    detail: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.subject}: {self.detail}"


RULES = (
    "one row",
    "notified",
    "first effect unchanged",
    "poison in the DLQ with its reason",
    "conflict in the DLQ with its reason",
    "nothing lost",
)


def _fields(effect: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The effect's fields the row does not hold as sent: name -> (expected, found)."""
    return {
        name: (value, row.get(name)) for name, value in effect.items() if row.get(name) != value
    }


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check(state: EndState) -> list[Violation]:
    """Every violation of the rules above, events in sorted order."""
    found: list[Violation] = []
    rows_by_event: dict[str, list[dict[str, Any]]] = {}
    for row in state.rows:
        rows_by_event.setdefault(str(row.get(state.row_key)), []).append(row)
    for event in sorted(state.effects):
        rows = rows_by_event.get(event, [])
        if len(rows) != 1:
            found.append(
                Violation("one row", event, f"{len(rows)} rows" + (" (lost)" if not rows else ""))
            )
        if state.notifications.get(event, 0) < 1:
            found.append(Violation("notified", event, "no notification"))
        if rows:
            changed = _fields(state.effects[event], rows[0])
            if changed:
                found.append(
                    Violation(
                        "first effect unchanged",
                        event,
                        "; ".join(
                            f"{k}: expected {e!r}, found {f!r}" for k, (e, f) in changed.items()
                        ),
                    )
                )
    for event in sorted(set(rows_by_event) - set(state.effects)):
        found.append(Violation("nothing lost", event, "a row for an event that was never sent"))

    letters = list({(d.message_id or id(d)): d for d in state.dlq}.values())
    dead = Counter(d.body for d in letters)
    reasons = {d.body: d for d in letters}
    expected = set(state.poison) | {b for bodies in state.conflicts.values() for b in bodies}
    for body in state.poison:
        letter = reasons.get(body)
        if letter is None:
            found.append(
                Violation("poison in the DLQ with its reason", _short(body), "not in the DLQ")
            )
        elif not letter.failure_kind or not letter.failure_reason:
            found.append(
                Violation(
                    "poison in the DLQ with its reason", _short(body), "in the DLQ without a reason"
                )
            )
    for event, bodies in sorted(state.conflicts.items()):
        for body in bodies:
            letter = reasons.get(body)
            if letter is None:
                found.append(
                    Violation("conflict in the DLQ with its reason", event, "not in the DLQ")
                )
            elif letter.failure_kind != CONFLICT_KIND or not letter.failure_reason:
                found.append(
                    Violation(
                        "conflict in the DLQ with its reason",
                        event,
                        f"in the DLQ as {letter.failure_kind!r}, "
                        f"not {CONFLICT_KIND!r} with a reason",
                    )
                )
    if state.left_in_queue:
        found.append(
            Violation(
                "nothing lost", "source queue", f"{state.left_in_queue} message(s) left in it"
            )
        )
    for body, copies in sorted(dead.items()):
        if body not in expected:
            letter = reasons[body]
            why = (
                f"{letter.failure_kind}: {_short(letter.failure_reason or '', 120)}"
                if letter.failure_kind
                else "no reason attached (moved by SQS after maxReceiveCount)"
            )
            found.append(
                Violation(
                    "nothing lost",
                    _event_of(body) or _short(body),
                    f"{copies} unexpected DLQ message(s), e.g. {why}",
                )
            )
    return found


def _event_of(body: str) -> str | None:
    try:
        decoded = json.loads(body)
    except ValueError:
        return None
    event = decoded.get("event_id") if isinstance(decoded, dict) else None
    return str(event) if event is not None else None


def summary(violations: list[Violation]) -> Counter[str]:
    """Violations per rule (every rule listed, 0 included)."""
    counts: Counter[str] = Counter(dict.fromkeys(RULES, 0))
    counts.update(v.rule for v in violations)
    return counts
