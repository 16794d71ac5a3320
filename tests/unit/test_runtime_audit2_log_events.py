"""Every log event the runtime writes stays under 256 KB, for any batch the component allows
(issue 22, item 5).

AWS (CloudWatch Logs API reference, PutLogEvents): "The maximum batch size is 1,048,576 bytes.
This size is calculated as the sum of all event messages in UTF-8, plus 26 bytes for each log
event"; "Each log event can be no larger than 256 KB" (the design limit kept here). The
component allows batches of up to 10,000 records on a standard queue
(``limits.SQS_MAX_BATCH_SIZE_STANDARD``). Before: the one "processed" line of a 10,000-record
batch was ~1.35 MB (more with long event ids), and a reason was logged whatever its length.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from idempotent_messaging.limits import SQS_MAX_BATCH_SIZE_STANDARD
from idempotent_messaging.runtime import observability
from idempotent_messaging.runtime.observability import Outcome, record_outcomes

pytestmark = pytest.mark.unit

LOG_EVENT_LIMIT = 256 * 1000 - 26  # "256 KB", read as the smaller 256,000, less the overhead


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(observability.logger.registered_formatter)
    target = logging.getLogger(observability.logger.name)
    target.addHandler(handler)
    yield out
    target.removeHandler(handler)


def _events(out: io.StringIO) -> list[str]:
    return [line for line in out.getvalue().splitlines() if line]


def _record(i: int, **more: Any) -> dict[str, Any]:
    """A record's fields at their largest: Lambda message ids are UUIDs (up to 100 characters
    allowed here), event ids up to 512 characters (validate_event_id), group ids 128."""
    return {
        "message_id": f"{i:08d}-" + "m" * 91,
        "event_id": f"event-{i:06d}-" + "e" * 499,
        "group_id": "g" * 128,
        "receive_count": 9_999,
        "failure_class": None,
        "failure_kind": None,
        "reason": None,
        "attempts": 3,
        **more,
    }


def test_a_full_batch_of_processed_records_is_split_in_bounded_findable_parts(
    stream: io.StringIO,
) -> None:
    n = SQS_MAX_BATCH_SIZE_STANDARD
    record_outcomes([(Outcome.PROCESSED, _record(i)) for i in range(n)])
    events = _events(stream)
    assert max(len(e.encode("utf-8")) for e in events) <= LOG_EVENT_LIMIT
    lines = [json.loads(e) for e in events]
    parts = [line for line in lines if line.get("outcome") == "processed"]
    assert len(parts) > 1
    assert [p["part"] for p in parts] == list(range(1, len(parts) + 1))
    assert {p["parts"] for p in parts} == {len(parts)}
    assert sum(p["count"] for p in parts) == n == parts[0]["batch_count"]
    # Each record is listed on exactly one line, by message id and event id, in batch order.
    listed = [r for p in parts for r in p["records"]]
    assert [r["event_id"] for r in listed] == [_record(i)["event_id"] for i in range(n)]
    for p in parts:
        assert len(p["records"]) == p["count"]
        text = json.dumps(p)
        assert all(r["message_id"] in text for r in p["records"])


def test_a_small_batch_keeps_its_one_processed_line(stream: io.StringIO) -> None:
    record_outcomes([(Outcome.PROCESSED, _record(i)) for i in range(10)])
    (line,) = [json.loads(e) for e in _events(stream)]
    assert line["count"] == 10 and line["part"] == 1 and line["parts"] == 1


def test_a_record_line_stays_bounded_whatever_its_reason_holds(stream: io.StringIO) -> None:
    """A plug-in's SchemaError text (or an AWS error message) can be of any length."""
    long_reason = "schema: " + "x" * 2_000_000
    record_outcomes(
        [
            (Outcome.QUARANTINED, _record(0, failure_kind="schema", reason=long_reason)),
            (Outcome.FAILED, _record(1, failure_class="transient", reason=long_reason)),
        ]
    )
    events = _events(stream)
    assert len(events) == 2
    for event in events:
        assert len(event.encode("utf-8")) <= LOG_EVENT_LIMIT
        line = json.loads(event)
        assert line["reason"].startswith("schema: xxx") and "characters cut" in line["reason"]
        assert line["event_id"] in {_record(0)["event_id"], _record(1)["event_id"]}
