"""A batch as large as the component allows, through the Lambda entry point: every log event it
writes stays under 256 KB and each record is still found by its event id (issue 22, item 5).

AWS: a CloudWatch Logs event is at most 1 MB (PutLogEvents: 1,048,576 bytes a call, counted
as the UTF-8 messages plus 26 bytes per event; "Each log event can be no larger than 256 KB",
the design limit kept here). Lambda delivers up to 10,000 records per batch from a standard
queue with a batching window (``limits.SQS_MAX_BATCH_SIZE_STANDARD``, what the component
allows). Before: one "processed" line listed all 10,000 records (~1.35 MB with short ids).
"""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from handlers.orders import ORDER_KEY, order_writes
from idempotent_messaging.limits import SQS_MAX_BATCH_SIZE_STANDARD
from idempotent_messaging.runtime import Consumer, SingleItemEffect, lambda_handler, logger
from idempotent_messaging.runtime.clients import reset_clients
from tests.integration.test_runtime_world import Aws, FakeContext, sqs_event

pytestmark = pytest.mark.integration

LOG_EVENT_LIMIT = 256 * 1000 - 26

# The orders effect without a notification: the cheapest path per record (one INSERT each,
# 25 per call), so the whole 10,000-record batch runs in seconds on moto.
ROWS = Consumer(
    writes=order_writes,
    namespace="order",
    requires_business_table=True,
    effect=SingleItemEffect.keyed_by_event_id(ORDER_KEY),
)
handler = lambda_handler(ROWS)


@pytest.fixture
def lambda_env(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name, value in aws.env().items():
        monkeypatch.setenv(name, value)
    aws.claims_in_items = True
    reset_clients()
    yield aws
    reset_clients()


@pytest.fixture
def events() -> Iterator[io.StringIO]:
    """Every log event, as Powertools writes it (one JSON document per event)."""
    stream = io.StringIO()
    target = logging.getLogger(logger.name)
    handler_ = logging.StreamHandler(stream)
    handler_.setFormatter(logger.registered_formatter)
    target.addHandler(handler_)
    yield stream
    target.removeHandler(handler_)


def _record(i: int) -> dict[str, Any]:
    event_id = f"evt-{i:05d}-" + "e" * 100
    return {
        "messageId": str(uuid.uuid4()),
        "receiptHandle": "handle",
        "body": json.dumps({"event_id": event_id, "order": {"order_id": f"o-{i}", "qty": 1}}),
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"},
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:ap-northeast-1:123456789012:orders",
        "awsRegion": "ap-northeast-1",
    }


def test_a_full_standard_batch_logs_bounded_events_each_record_findable(
    lambda_env: Aws, events: io.StringIO
) -> None:
    records = [_record(i) for i in range(SQS_MAX_BATCH_SIZE_STANDARD)]
    response = handler(sqs_event(*records), FakeContext())
    assert response == {"batchItemFailures": []}
    lines = [line for line in events.getvalue().splitlines() if line]
    assert max(len(line.encode("utf-8")) for line in lines) <= LOG_EVENT_LIMIT
    parsed = [json.loads(line) for line in lines]
    parts = [p for p in parsed if p.get("outcome") == "processed"]
    assert sum(p["count"] for p in parts) == len(records)
    assert [p["part"] for p in parts] == list(range(1, len(parts) + 1))
    # Logs Insights: `filter @message like "<event id>"` finds exactly one line per record.
    for rec in records[:: len(records) // 50]:
        event_id = json.loads(rec["body"])["event_id"]
        assert sum(event_id in line for line in lines) == 1
        (line,) = [p for p in parts if any(r["event_id"] == event_id for r in p["records"])]
        assert any(r["message_id"] == rec["messageId"] for r in line["records"])
