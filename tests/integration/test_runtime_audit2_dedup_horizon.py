"""Issue 22, item 9: a claim outlives every copy of its message, or the copy is refused.

AWS facts:
* SQS Developer Guide, "Configure a dead-letter queue redrive": "The redrive task resets the
  retention period. All redriven messages are considered new messages with a new messageID and
  enqueueTime". A message the runtime quarantines with SendMessageBatch is a new message too,
  with the DLQ's full retention. Each copy therefore lives up to a full retention again, so
  the claim TTL (``CLAIM_TTL_SECONDS`` >= source + DLQ retention) bounds ONE copy, not a chain
  of copies.
* DynamoDB Time to Live deletes an item some time after its TTL has passed (Developer Guide,
  "Using time to live"): from then on nothing remembers the event.
* Lambda's SQS record carries ``attributes.SentTimestamp`` (epoch ms, SQS's enqueue time of
  THIS copy); a standard DLQ keeps the original enqueue time of a message SQS's redrive policy
  moved ("Setting-up dead-letter queue retention"), a FIFO DLQ resets it.

Reproduced before the fix: commit, process death, a failure on the last receive (day 2:
quarantined), ``ops redrive`` (day 4), the claim expired and deleted (day 6): the redelivery
claimed the event again and a counter ``ADD`` was applied twice. Now every copy carries the
event's first-seen time (``idempotent-messaging.first-seen``, from the original's
SentTimestamp), the redrive keeps it, and a copy with ``first seen + claim TTL <= now +
margin`` is refused as ``beyond_dedup_horizon``, to the DLQ with its reason.
"""

from __future__ import annotations

import datetime
import json
import re
import time
from typing import Any

import pytest

from idempotent_messaging.ops import dlq
from idempotent_messaging.runtime import (
    Consumer,
    Notification,
    WriteContext,
    env,
    lambda_handler,
)
from tests.integration.runtime_faults import fail_sends
from tests.integration.test_runtime_audit2_world import (
    CrashPlan,
    attributes_of,
    entry_clients,
    entry_point,
    source_queue,
)
from tests.integration.test_runtime_world import (
    STATE_TABLE,
    Aws,
    FakeContext,
    order_body,
    record,
    sqs_event,
)

pytestmark = pytest.mark.integration

DAY = 24 * 3600
FIRST_SEEN = "idempotent-messaging.first-seen"
COUNTERS = "counters"
COUNTER = {"counter_id": {"S": "applied"}}


def _add_one(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    """A non-idempotent effect: only the claim keeps it from being applied twice."""
    return [
        {
            "Update": {
                "TableName": COUNTERS,
                "Key": COUNTER,
                "UpdateExpression": "ADD applied :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        }
    ]


def _notify(message: Any, event_id: str) -> Notification:
    return Notification(message=json.dumps({"event_id": event_id}))


def _applied(world: Aws) -> int:
    item = world.dynamodb.get_item(TableName=COUNTERS, Key=COUNTER).get("Item")
    return int(item["applied"]["N"]) if item else 0


@pytest.fixture(autouse=True)
def _counters(aws: Aws) -> None:
    aws.dynamodb.create_table(
        TableName=COUNTERS,
        KeySchema=[{"AttributeName": "counter_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "counter_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def _time_to_live_passes(world: Aws, now: float) -> None:
    """DynamoDB TTL deletes expired claims (moto stores TTL but never expires items)."""
    for item in world.dynamodb.scan(TableName=STATE_TABLE)["Items"]:
        if int(item["ttl"]["N"]) < now:
            world.dynamodb.delete_item(TableName=STATE_TABLE, Key={"event_id": item["event_id"]})


def test_a_quarantined_then_redriven_copy_older_than_its_claim_is_refused_not_applied_twice(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = {"now": time.time()}
    consumer = Consumer(writes=_add_one, notification=_notify, clock=lambda: clock["now"])
    settings = {
        env.CLAIM_TTL_SECONDS: str(5 * DAY),
        env.SOURCE_RETENTION_SECONDS: str(2 * DAY),
        env.DLQ_RETENTION_SECONDS: str(3 * DAY),
        env.MAX_RECEIVE_COUNT: "2",
    }
    start = clock["now"]
    with entry_point(aws, monkeypatch, **settings):
        source = source_queue(aws, lambda_handler(consumer), max_receive_count=2, name="counts")
        source.send(json.dumps({"event_id": "evt-1"}))
        sent_ms = None

        # Day 0: the claim and the ADD commit, then the process dies before publishing.
        crash = CrashPlan(before="PublishBatch")
        crash.install()
        response, records = source.invoke()
        assert response is None
        sent_ms = int(records[0]["attributes"]["SentTimestamp"])
        crash.clear()
        source.visibility_timeout_passes()
        assert _applied(aws) == 1

        # Day 2, the last receive: SNS is down; the runtime quarantines it (a NEW message).
        clock["now"] = start + 2 * DAY
        fail_sends(entry_clients().sns, "PublishBatch", 3)
        response, _ = source.invoke()
        assert response == {"batchItemFailures": []}
        (copy,) = aws.sqs.receive_message(
            QueueUrl=aws.dlq_url, MessageAttributeNames=["All"], AttributeNames=["All"]
        )["Messages"]
        quarantined = attributes_of(copy)
        assert quarantined["failure_kind"] == "retries_exhausted"
        aws.sqs.change_message_visibility(
            QueueUrl=aws.dlq_url, ReceiptHandle=copy["ReceiptHandle"], VisibilityTimeout=0
        )

        # Day 4: the operator redrives it (ops redrive; moto has no StartMessageMoveTask).
        report = dlq.redrive(aws.sqs, aws.dlq_url, source.url, method="manual")
        assert report.moved == 1

        # Day 6: the claim (TTL day 5) has expired and been deleted; the copy is delivered.
        clock["now"] = start + 6 * DAY
        _time_to_live_passes(aws, clock["now"])
        assert aws.dynamodb.scan(TableName=STATE_TABLE)["Items"] == []
        response, redelivered = source.invoke()
        assert response == {"batchItemFailures": []}

    assert _applied(aws) == 1, "the ADD was applied twice"
    # The quarantine copy and the redriven message carried the original's SentTimestamp.
    assert quarantined.get(FIRST_SEEN) == str(sent_ms)
    assert redelivered[0]["messageAttributes"][FIRST_SEEN]["stringValue"] == str(sent_ms)
    (refused,) = aws.dlq_messages()
    attributes = attributes_of(refused)
    assert attributes["failure_kind"] == "beyond_dedup_horizon"
    seen = re.search(r"first seen (\d+) s ago", attributes["failure_reason"])
    assert seen and abs(int(seen.group(1)) - 6 * DAY) <= 2  # six days, from the first copy
    assert attributes[FIRST_SEEN] == str(sent_ms)
    assert aws.dynamodb.scan(TableName=STATE_TABLE)["Items"] == []  # nothing claimed again


def test_a_copy_beyond_the_horizon_whose_claim_lives_publishes_the_owed_notification(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37, item 1: the claim commits and stays pending (a death before the publish), its
    copy is dead-lettered and redriven late: first seen 5 days ago, the claim TTL 5 days, so it
    is beyond the horizon, yet DynamoDB has not deleted the claim (TTL deletes "typically
    within a few days" of expiry, and an expired item is read until then: DynamoDB Developer
    Guide, "Using time to live"). Before, the copy was refused unread as
    ``beyond_dedup_horizon`` and nothing could ever publish the notification (it was never
    stored: ``ops owed --republish`` had none). Now its claim is read: the copy is the
    pending claim's duplicate, the notification is published and the claim marked sent; the
    ADD is still applied once."""
    clock = {"now": time.time()}
    consumer = Consumer(writes=_add_one, notification=_notify, clock=lambda: clock["now"])
    settings = {
        env.CLAIM_TTL_SECONDS: str(5 * DAY),
        env.SOURCE_RETENTION_SECONDS: str(2 * DAY),
        env.DLQ_RETENTION_SECONDS: str(3 * DAY),
        env.MAX_RECEIVE_COUNT: "2",
    }
    start = clock["now"]
    with entry_point(aws, monkeypatch, **settings):
        source = source_queue(aws, lambda_handler(consumer), max_receive_count=2, name="late")
        source.send(json.dumps({"event_id": "evt-1"}))
        # Day 0: committed, then a death before the publish; day 2, the last receive: SNS is
        # down, the runtime quarantines it (retries_exhausted, first-seen day 0).
        crash = CrashPlan(before="PublishBatch")
        crash.install()
        assert source.invoke()[0] is None
        crash.clear()
        source.visibility_timeout_passes()
        clock["now"] = start + 2 * DAY
        fail_sends(entry_clients().sns, "PublishBatch", 3)
        assert source.invoke()[0] == {"batchItemFailures": []}
        assert aws.notifications() == []
        # Day 4: the operator redrives it; day 5 it is delivered: beyond the horizon, while
        # the claim is still there (expired, not yet deleted).
        clock["now"] = start + 4 * DAY
        assert dlq.redrive(aws.sqs, aws.dlq_url, source.url, method="manual").moved == 1
        clock["now"] = start + 5 * DAY
        response, redelivered = source.invoke()
        assert response == {"batchItemFailures": []}

    first_seen = int(redelivered[0]["messageAttributes"][FIRST_SEEN]["stringValue"])
    assert abs(first_seen - start * 1000) < 60_000  # day 0: beyond the 5-day horizon at day 5
    assert [n["event_id"] for n in aws.notifications()] == ["evt-1"]
    assert _applied(aws) == 1
    assert aws.dlq_messages() == []  # not refused: its claim said what it is
    (claim,) = aws.stored_claims()
    assert claim["status"]["S"] == env.STATUS_SENT


def _event_time_consumer() -> Consumer:
    from idempotent_messaging.runtime import EventTimeFromBody

    return Consumer(
        writes=_add_one, notification=_notify, event_time=EventTimeFromBody("occurred_at")
    )


def test_a_producer_resend_carrying_an_old_event_time_is_refused(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-send is a new SQS message (fresh SentTimestamp): only a declared event time says
    the event is older than its claim can be (the horizon is the claim TTL, 90 days here)."""
    now = datetime.datetime.now(datetime.UTC)
    old = (now - datetime.timedelta(days=91)).isoformat()
    recent = (now - datetime.timedelta(days=1)).isoformat()
    bodies = [
        json.dumps({"event_id": "late", "occurred_at": old}),
        json.dumps({"event_id": "fresh", "occurred_at": recent}),
        json.dumps({"event_id": "epoch", "occurred_at": int(now.timestamp()) - 100 * DAY}),
        json.dumps({"event_id": "no-time"}),
    ]
    with entry_point(aws, monkeypatch):
        handler = lambda_handler(_event_time_consumer())
        response = handler(sqs_event(*(record(b) for b in bodies)), FakeContext())
    assert response == {"batchItemFailures": []}
    assert _applied(aws) == 1
    kinds = {
        attributes_of(m)["event_id"]: attributes_of(m)["failure_kind"] for m in aws.dlq_messages()
    }
    assert kinds == {
        "late": "beyond_dedup_horizon",
        "epoch": "beyond_dedup_horizon",
        "no-time": "schema",
    }
    assert {c["event_id"]["S"] for c in aws.claims()} == {"fresh"}


def test_a_claim_kept_in_the_business_item_has_no_horizon(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-item claim lives as long as the row (no TTL): an old copy is never refused."""
    from handlers import orders

    aws.claims_in_items = True
    ancient = record(order_body("e1"))
    ancient["attributes"]["SentTimestamp"] = "1000"
    with entry_point(aws, monkeypatch):
        assert orders.handler(sqs_event(ancient), FakeContext()) == {"batchItemFailures": []}
    assert {c["event_id"]["S"] for c in aws.claims()} == {"e1"}
    assert aws.dlq_messages() == []


def test_every_runtime_quarantine_carries_the_first_seen_time_forward(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The earliest time known wins: a copy's SentTimestamp, or the first-seen it carries."""
    carried = str(int(time.time() * 1000) - 3 * DAY * 1000)
    redriven = record("not json", attributes={})
    redriven["messageAttributes"][FIRST_SEEN] = {"stringValue": carried, "dataType": "Number"}
    fresh = record("not json either")
    with entry_point(aws, monkeypatch):
        response = lambda_handler(_event_time_consumer())(sqs_event(redriven, fresh), FakeContext())
    assert response == {"batchItemFailures": []}
    copies = {attributes_of(m)["original_message_id"]: m for m in aws.dlq_messages()}
    assert attributes_of(copies[redriven["messageId"]])[FIRST_SEEN] == carried
    assert (
        attributes_of(copies[fresh["messageId"]])[FIRST_SEEN]
        == fresh["attributes"]["SentTimestamp"]
    )
    assert copies[redriven["messageId"]]["MessageAttributes"][FIRST_SEEN]["DataType"] == "Number"
