"""Which billing month a trigger means (pure).

The month comes from the SCHEDULED time converted into the schedule's time zone, never from
the wall clock: a retry an hour late, or a re-run next week, names the same month. At 00:30 on
the 1st in Asia/Tokyo it is still the previous day in UTC, so converting matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .keys import validate_month

TRIGGER_SCHEDULE = "schedule"
TRIGGER_MANUAL = "manual"
_ALLOWED_KEYS = frozenset({"scheduled_time", "month", "trigger", "restart"})


class InvalidTrigger(ValueError):
    """The invocation payload is not a schedule or manual trigger (says what is wrong)."""


@dataclass(frozen=True, slots=True)
class Trigger:
    month: str
    trigger: str  # TRIGGER_SCHEDULE or TRIGGER_MANUAL
    scheduled_time: str | None
    restart: bool


def timezone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(
            f"time zone {name!r} is not an IANA time zone (e.g. 'Asia/Tokyo')"
        ) from exc


def month_of(scheduled_time: str, tz: ZoneInfo) -> str:
    """``YYYY-MM`` of an ISO-8601 instant (as Scheduler renders ``<aws.scheduler.scheduled-time>``,
    e.g. ``2026-05-31T15:30:00Z``) seen in ``tz``."""
    try:
        instant = datetime.fromisoformat(scheduled_time.replace("Z", "+00:00"))
    except (AttributeError, ValueError) as exc:
        raise InvalidTrigger(
            f"scheduled_time={scheduled_time!r}: must be an ISO-8601 instant such as "
            "'2026-05-31T18:00:00Z'"
        ) from exc
    if instant.tzinfo is None:
        raise InvalidTrigger(
            f"scheduled_time={scheduled_time!r}: has no UTC offset; Scheduler sends UTC ('...Z')"
        )
    return instant.astimezone(tz).strftime("%Y-%m")


def parse_trigger(event: Any, tz: ZoneInfo) -> Trigger:
    """A schedule payload ``{"scheduled_time": ..., "trigger": "schedule"}`` or a manual one
    ``{"month": "YYYY-MM"[, "restart": true]}``; InvalidTrigger naming the problem otherwise."""
    if not isinstance(event, dict):
        raise InvalidTrigger(f"payload must be a JSON object, got {type(event).__name__}")
    unknown = sorted(set(event) - _ALLOWED_KEYS)
    if unknown:
        raise InvalidTrigger(
            f"unknown payload keys {unknown}: expected scheduled_time (schedule) or month "
            "(manual backfill, e.g. {'month': '2026-06'})"
        )
    has_time, has_month = "scheduled_time" in event, "month" in event
    if has_time == has_month:
        raise InvalidTrigger(
            "payload must carry exactly one of scheduled_time (the schedule's "
            "<aws.scheduler.scheduled-time>) or month (manual run, e.g. {'month': '2026-06'})"
        )
    restart = event.get("restart", False)
    if not isinstance(restart, bool):
        raise InvalidTrigger(f"restart={restart!r}: must be true or false")
    if has_time:
        trigger = event.get("trigger", TRIGGER_SCHEDULE)
        if trigger != TRIGGER_SCHEDULE:
            raise InvalidTrigger(f"trigger={trigger!r}: a scheduled_time payload is 'schedule'")
        if restart:
            raise InvalidTrigger("restart=true is for manual runs only")
        return Trigger(
            month_of(event["scheduled_time"], tz), TRIGGER_SCHEDULE, event["scheduled_time"], False
        )
    trigger = event.get("trigger", TRIGGER_MANUAL)
    if trigger != TRIGGER_MANUAL:
        raise InvalidTrigger(f"trigger={trigger!r}: a month payload is a 'manual' run")
    try:
        month = validate_month(event["month"])
    except ValueError as exc:
        raise InvalidTrigger(str(exc)) from exc
    return Trigger(month, TRIGGER_MANUAL, None, restart)
