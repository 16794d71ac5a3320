"""Billing month derivation and trigger payloads (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from idempotent_messaging.dispatch.months import (
    TRIGGER_MANUAL,
    TRIGGER_SCHEDULE,
    InvalidTrigger,
    month_of,
    parse_trigger,
    timezone,
)

pytestmark = pytest.mark.unit

TOKYO = ZoneInfo("Asia/Tokyo")


def test_0030_on_the_first_in_tokyo_is_the_new_month_while_utc_is_the_previous_day() -> None:
    scheduled = "2026-05-31T15:30:00Z"  # 2026-06-01 00:30 JST
    assert month_of(scheduled, TOKYO) == "2026-06"
    assert month_of(scheduled, ZoneInfo("UTC")) == "2026-05"


def test_one_second_before_midnight_in_tokyo_is_still_the_old_month() -> None:
    assert month_of("2026-05-31T14:59:59Z", TOKYO) == "2026-05"
    assert month_of("2026-05-31T15:00:00Z", TOKYO) == "2026-06"


def test_year_boundary_and_explicit_offsets() -> None:
    assert month_of("2026-12-31T15:00:00Z", TOKYO) == "2027-01"
    assert month_of("2027-01-01T00:00:00+09:00", TOKYO) == "2027-01"
    assert month_of("2026-06-01T00:30:00-07:00", ZoneInfo("America/Los_Angeles")) == "2026-06"


@given(
    st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)),
    st.sampled_from(["Asia/Tokyo", "UTC", "America/New_York", "Australia/Adelaide"]),
)
def test_the_month_is_the_scheduled_instant_seen_in_the_schedule_time_zone(
    naive: datetime, zone: str
) -> None:
    instant = naive.replace(tzinfo=UTC)
    scheduled = instant.strftime("%Y-%m-%dT%H:%M:%SZ")
    tz = ZoneInfo(zone)
    expected = instant.astimezone(tz).strftime("%Y-%m")
    # A late retry carries the same scheduled time, so it gets the same month.
    assert month_of(scheduled, tz) == expected
    assert parse_trigger({"scheduled_time": scheduled}, tz).month == expected


def test_schedule_and_manual_payloads() -> None:
    scheduled = parse_trigger(
        {"trigger": "schedule", "scheduled_time": "2026-05-31T18:00:00Z"}, TOKYO
    )
    assert (scheduled.month, scheduled.trigger) == ("2026-06", TRIGGER_SCHEDULE)
    assert scheduled.scheduled_time == "2026-05-31T18:00:00Z"
    manual = parse_trigger({"month": "2026-02", "restart": True}, TOKYO)
    assert (manual.month, manual.trigger, manual.restart) == ("2026-02", TRIGGER_MANUAL, True)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"month": "2026-6"}, "month='2026-6'"),
        ({"month": "2026-00"}, "month='2026-00'"),
        ({"month": 202606}, "month=202606"),
        ({"scheduled_time": "yesterday"}, "scheduled_time='yesterday'"),
        ({"scheduled_time": "2026-05-31T18:00:00"}, "has no UTC offset"),
        ({}, "exactly one of scheduled_time"),
        ({"month": "2026-06", "scheduled_time": "2026-05-31T18:00:00Z"}, "exactly one"),
        ({"mnth": "2026-06"}, "unknown payload keys \\['mnth'\\]"),
        ({"month": "2026-06", "restart": "yes"}, "restart='yes'"),
        ({"month": "2026-06", "trigger": "schedule"}, "trigger='schedule'"),
        ({"scheduled_time": "2026-05-31T18:00:00Z", "restart": True}, "manual runs only"),
        (["2026-06"], "JSON object"),
    ],
)
def test_bad_payloads_are_refused_with_a_message_naming_the_problem(
    payload: object, message: str
) -> None:
    with pytest.raises(InvalidTrigger, match=message):
        parse_trigger(payload, TOKYO)


def test_an_unknown_time_zone_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'Asia/Tokio'"):
        timezone("Asia/Tokio")
