"""Dispatcher settings from the environment, and continuation messages (pure)."""

from __future__ import annotations

import pytest

from idempotent_messaging.dispatch import env
from idempotent_messaging.dispatch.dispatcher import Continuation, InvalidControlMessage
from idempotent_messaging.dispatch.settings import Settings, SettingsError

pytestmark = pytest.mark.unit

BASE = {
    env.BILLING_ACCOUNTS_TABLE: "billing",
    env.WORK_QUEUE_URL: "https://sqs/work.fifo",
    env.RUNS_TABLE: "runs",
    env.SCHEDULE_TIMEZONE: "Asia/Tokyo",
}


def test_defaults_apply_when_only_the_required_variables_are_set() -> None:
    settings = Settings.from_env(BASE)
    assert settings.item_source == env.SOURCE_DYNAMODB
    assert settings.scan_segments == env.DEFAULT_SCAN_SEGMENTS
    assert settings.time_reserve_ms == env.DEFAULT_TIME_RESERVE_MS
    assert settings.control_queue_url is None


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({k: v for k, v in BASE.items() if k != env.RUNS_TABLE}, "RUNS_TABLE is required"),
        ({**BASE, env.ITEM_SOURCE: "ftp"}, "DISPATCH_ITEM_SOURCE='ftp'"),
        ({**BASE, env.ITEM_SOURCE: "s3"}, "MANIFEST_BUCKET is required"),
        (
            {
                **BASE,
                env.ITEM_SOURCE: "s3",
                env.MANIFEST_BUCKET: "b",
                env.MANIFEST_KEY_TEMPLATE: "x.jsonl",
            },
            "must contain '\\{month\\}'",
        ),
        ({**BASE, env.SCAN_SEGMENTS: "many"}, "DISPATCH_SCAN_SEGMENTS='many'"),
        ({**BASE, env.SCAN_SEGMENTS: "0"}, "DISPATCH_SCAN_SEGMENTS=0"),
    ],
)
def test_bad_environments_name_the_variable(environ: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings.from_env(environ)


def test_continuations_round_trip_and_bad_ones_are_refused() -> None:
    original = Continuation("2026-06", 3, 7, 2)
    assert Continuation.parse(original.body()) == original
    with pytest.raises(InvalidControlMessage, match="not a continuation"):
        Continuation.parse("{}")
    with pytest.raises(InvalidControlMessage, match="hop=-1"):
        Continuation.parse('{"month": "2026-06", "generation": 1, "segment": 0, "hop": -1}')
    with pytest.raises(ValueError, match="month='June'"):
        Continuation.parse('{"month": "June", "generation": 1, "segment": 0, "hop": 0}')


def test_the_time_reserve_never_exceeds_a_quarter_of_the_starting_budget() -> None:
    from idempotent_messaging.dispatch.dispatcher import Budget

    assert Budget.starting_now(lambda: 900_000, 60_000).reserve_ms == 60_000  # Lambda's case
    short = Budget.starting_now(lambda: 30_000, 60_000)  # a local call with 30 s
    assert short.reserve_ms == 7_500 and not short.low()
