"""What the runtime logs and counts for a batch's outcomes (observability.record_outcomes).

Every record is accounted for: processed records are listed on one line per batch (their own
line each at DEBUG), every other outcome has its own line, and each outcome is one EMF count of
the records that ended there.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from idempotent_messaging.local.observe import OutcomeCounter
from idempotent_messaging.runtime import observability
from idempotent_messaging.runtime.observability import Outcome, record_outcomes


@pytest.fixture
def lines() -> Iterator[list[dict[str, Any]]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(observability.logger.registered_formatter)
    target = logging.getLogger(observability.logger.name)
    target.addHandler(handler)
    found: list[dict[str, Any]] = []
    yield found
    target.removeHandler(handler)


def _read(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for handler in logging.getLogger(observability.logger.name).handlers:
        if isinstance(handler, logging.StreamHandler) and isinstance(handler.stream, io.StringIO):
            lines.extend(json.loads(t) for t in handler.stream.getvalue().splitlines() if t)
    return lines


def _fields(n: int, **more: Any) -> dict[str, Any]:
    return {
        "message_id": f"m{n}",
        "event_id": f"e{n}",
        "group_id": None,
        "receive_count": n,
        "failure_class": None,
        "failure_kind": None,
        "reason": None,
        "attempts": 1,
        **more,
    }


BATCH = [
    (Outcome.PROCESSED, _fields(1)),
    (Outcome.DUPLICATE_SKIPPED, _fields(2)),
    (Outcome.PROCESSED, _fields(3)),
    (Outcome.QUARANTINED, _fields(4, failure_class="permanent", failure_kind="schema")),
    (Outcome.FAILED, _fields(5, failure_class="transient", reason="throttled")),
    (Outcome.PROCESSED, _fields(6)),
]


def test_processed_records_share_one_line_and_every_other_outcome_has_its_own(
    lines: list[dict[str, Any]],
) -> None:
    record_outcomes(BATCH)
    found = _read(lines)
    (summary,) = [line for line in found if line["outcome"] == "processed"]
    assert summary["count"] == 3
    assert [r["message_id"] for r in summary["records"]] == ["m1", "m3", "m6"]
    assert summary["records"][1] == {
        "message_id": "m3",
        "event_id": "e3",
        "receive_count": 3,
        "attempts": 1,
    }
    single = {line["message_id"]: line for line in found if "message_id" in line}
    assert set(single) == {"m2", "m4", "m5"}
    assert single["m2"]["outcome"] == "duplicate_skipped"
    assert single["m4"]["failure_kind"] == "schema"
    assert single["m5"]["level"] == "WARNING" and single["m5"]["reason"] == "throttled"


def test_at_debug_each_processed_record_also_has_its_own_line(
    lines: list[dict[str, Any]],
) -> None:
    previous = observability.logger.log_level
    observability.logger.setLevel("DEBUG")
    try:
        record_outcomes(BATCH)
    finally:
        observability.logger.setLevel(previous)
    debug = [line for line in _read(lines) if line["level"] == "DEBUG"]
    assert [(d["message_id"], d["outcome"]) for d in debug] == [
        ("m1", "processed"),
        ("m3", "processed"),
        ("m6", "processed"),
    ]


def test_each_outcome_is_one_metric_of_its_record_count() -> None:
    observability.metrics.clear_metrics()
    try:
        record_outcomes(BATCH)
        emf: dict[str, Any] = dict(observability.metrics.serialize_metric_set())
    finally:
        observability.metrics.clear_metrics()
    # One data point per outcome (the count), not one per record.
    assert {name: emf[name] for name in ("processed", "duplicate_skipped")} == {
        "processed": [3.0],
        "duplicate_skipped": [1.0],
    }
    assert emf["quarantined"] == [1.0] and emf["failed"] == [1.0]


def test_the_demo_counter_counts_every_record_once_at_any_level() -> None:
    counter = OutcomeCounter().install()
    previous = observability.logger.log_level
    try:
        for level in ("INFO", "DEBUG"):
            observability.logger.setLevel(level)
            record_outcomes(BATCH)
    finally:
        observability.logger.setLevel(previous)
        counter.uninstall()
    (counts,) = counter.counts.values()
    assert counts == {
        "processed": 6,
        "duplicate_skipped": 2,
        "quarantined": 2,
        "failed": 2,
    }


def test_an_invocation_s_metrics_name_its_own_service_whatever_printed_before_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Several functions share one process in the embedded emulator: Powertools prints a metric
    set early at 100 values and keeps the service dimension it gave it until the next flush."""
    from idempotent_messaging.runtime import env

    metrics = observability.metrics
    metrics.clear_metrics()
    try:
        monkeypatch.setenv(env.POWERTOOLS_SERVICE_NAME, "orders")
        observability.refresh_from_env()
        for _ in range(100):
            metrics.add_metric(name="processed", unit="Count", value=1)
        early = json.loads(capsys.readouterr().out.splitlines()[-1])
        assert early["service"] == "orders" and early["processed"] == [1.0] * 100
        monkeypatch.setenv(env.POWERTOOLS_SERVICE_NAME, "payments")
        observability.refresh_from_env()
        record_outcomes([(Outcome.QUARANTINED, _fields(1, failure_class="permanent"))])
        emf: dict[str, Any] = dict(metrics.serialize_metric_set())
    finally:
        metrics.clear_metrics()
    assert emf["service"] == "payments" and emf["quarantined"] == [1.0]
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert directive["Dimensions"] == [["service"]]
