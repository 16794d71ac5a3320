"""The soak's picture: one well-formed SVG with the three panels a run is read by."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from idempotent_messaging.local.soak_chart import Sample, svg

pytestmark = pytest.mark.unit

NS = "{http://www.w3.org/2000/svg}"


def samples() -> list[Sample]:
    return [
        Sample(0.0, 0, {}, 0, 40, 0),
        Sample(1.0, 5, {"throttle": 3}, 1, 20, 50),
        Sample(2.0, 3, {"throttle": 7, "death before a call": 1}, 2, 0, 10),
        Sample(3.0, 0, {"throttle": 7, "death before a call": 1}, 2, 0, 0),
    ]


def test_the_picture_shows_in_flight_faults_by_kind_and_queue_depths_over_time() -> None:
    root = ET.fromstring(svg(samples(), title="soak seed 7: RESULT OK", max_concurrency=5))
    texts = [t.text or "" for t in root.iter(f"{NS}text")]
    assert "soak seed 7: RESULT OK" in texts
    for panel in (
        "invocations in flight",
        "faults fired so far, by kind",
        "messages in the queues",
    ):
        assert panel in texts
    # One line per series, each legend with its final value; the concurrency ceiling dashed.
    assert "throttle (7)" in texts and "death before a call (1)" in texts
    assert "DLQ (2)" in texts and "source in flight (0)" in texts
    assert "maximum concurrency 5" in texts
    assert len(list(root.iter(f"{NS}polyline"))) == 1 + 2 + 3
    assert "3 s" in texts  # the time axis ends at the last sample


def test_an_empty_run_still_draws() -> None:
    root = ET.fromstring(svg([], title="nothing", max_concurrency=2))
    assert root.tag == f"{NS}svg"
