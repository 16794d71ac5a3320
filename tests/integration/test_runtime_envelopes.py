"""Envelopes AWS producers send, consumed through the runtime's real path on moto.

* SNS -> SQS without raw message delivery: the body is SNS's JSON envelope and the payload the
  JSON STRING in ``Message`` (SNS developer guide, "Amazon SNS raw message delivery"; the
  envelope's fields: "HTTP/HTTPS notification JSON format"). A producer's re-send is a new
  publish: a new ``MessageId``, ``Timestamp`` and signature around the same payload.
* EventBridge rule -> SQS target: the body is the event (EventBridge user guide, "Event
  structure"); ``id`` is generated per PutEvents entry, so a producer's re-send gets a new
  ``id`` and ``time`` around the same ``detail``.

Both re-sends must be plain duplicates (one row, one notification), and a path that names a
field inside SNS's ``Message`` string without the envelope declaration is refused when the
consumer is built.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from handlers.orders import ORDER_KEY, order_notification, order_writes
from idempotent_messaging.runtime import (
    Consumer,
    EventBridgeEnvelope,
    EventIdFromBody,
    Fingerprint,
    SingleItemEffect,
    SnsEnvelope,
)
from tests.integration.test_runtime_world import (
    Aws,
    FakeContext,
    create_world,
    order_body,
    record,
    single_item_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def world(aws_env: dict[str, str]) -> Iterator[Aws]:
    with mock_aws():
        yield create_world()


def _queue(world: Aws, name: str) -> tuple[str, str]:
    url = world.sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = world.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return url, arn


def _lambda_records(world: Aws, url: str) -> list[dict[str, Any]]:
    """What Lambda's event source mapping hands the function: each message's body as SQS
    holds it, with its own message id."""
    out: list[dict[str, Any]] = []
    while True:
        got = world.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            return out
        for message in got:
            out.append(record(message["Body"], message_id=message["MessageId"]))
            world.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def _process(world: Aws, consumer: Consumer, records: list[dict[str, Any]]) -> Any:
    return consumer.process(sqs_event(*records), FakeContext(), world.runtime())


def test_an_sns_envelope_without_raw_delivery_is_unwrapped_and_a_resend_is_a_duplicate(
    world: Aws,
) -> None:
    url, arn = _queue(world, "orders-from-topic")
    topic = world.sns.create_topic(Name="orders-in")["TopicArn"]
    world.sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)  # raw delivery off
    payload = order_body("注文-0001")
    for _ in range(2):  # the producer publishes, then re-sends the same event
        world.sns.publish(TopicArn=topic, Message=payload, Subject="order")
    records = _lambda_records(world, url)
    envelopes = [json.loads(r["body"]) for r in records]
    assert [e["Type"] for e in envelopes] == ["Notification"] * 2
    assert {e["Message"] for e in envelopes} == {payload}  # the payload: a JSON STRING
    assert envelopes[0]["MessageId"] != envelopes[1]["MessageId"]

    consumer = single_item_orders(envelope=SnsEnvelope())
    assert _process(world, consumer, records[:1]) == {"batchItemFailures": []}
    assert _process(world, consumer, records[1:]) == {"batchItemFailures": []}
    assert [row[ORDER_KEY]["S"] for row in world.order_rows()] == ["注文-0001"]
    assert [n["event_id"] for n in world.notifications()] == ["注文-0001"]
    assert world.dlq_messages() == []  # the re-send is a duplicate, not a conflict


def test_a_path_into_the_sns_message_string_is_refused_when_the_consumer_is_built() -> None:
    with pytest.raises(ValueError, match=r"JSON STRING.*envelope=SnsEnvelope\(\).*'event_id'"):
        single_item_orders(event_id=EventIdFromBody("Message.event_id"))
    with pytest.raises(ValueError, match=r"drop the 'Message' prefix"):
        single_item_orders(event_id=EventIdFromBody("Message.event_id"), envelope=SnsEnvelope())
    with pytest.raises(ValueError, match=r"Fingerprint\(fields\)='Message.order'"):
        single_item_orders(fingerprint=Fingerprint(fields=("Message.order",)))


def test_a_body_that_is_no_sns_notification_is_schema_poison_with_its_reason(world: Aws) -> None:
    consumer = single_item_orders(envelope=SnsEnvelope())
    raw = record(order_body("raw-1"))  # raw delivery: the payload itself, no envelope
    assert _process(world, consumer, [raw]) == {"batchItemFailures": []}
    (copy,) = world.dlq_messages()
    attributes = {k: v["StringValue"] for k, v in copy["MessageAttributes"].items()}
    assert attributes["failure_kind"] == "schema"
    assert "not an SNS Notification envelope" in attributes["failure_reason"]


def _eventbridge_orders(**options: Any) -> Consumer:
    return Consumer(
        writes=lambda event, ctx: order_writes(event["detail"], ctx),
        notification=lambda event, event_id: order_notification(event["detail"], event_id),
        namespace="order",
        requires_business_table=True,
        effect=SingleItemEffect.keyed_by_event_id(ORDER_KEY),
        **options,
    )


def _eventbridge_to_queue(world: Aws, detail: dict[str, Any], sends: int) -> list[dict[str, Any]]:
    """A rule sending the producer's events to an SQS target; ``sends`` PutEvents of one
    event. moto delivers to the target as EventBridge does; the body is the event."""
    import boto3

    events = boto3.client("events", region_name="ap-northeast-1")
    url, arn = _queue(world, "orders-from-bus")
    events.put_rule(Name="orders", EventPattern=json.dumps({"source": ["shop.orders"]}))
    events.put_targets(Rule="orders", Targets=[{"Id": "queue", "Arn": arn}])
    for _ in range(sends):
        events.put_events(
            Entries=[
                {
                    "Source": "shop.orders",
                    "DetailType": "OrderPlaced",
                    "Detail": json.dumps(detail),
                }
            ]
        )
    return _lambda_records(world, url)


def test_an_eventbridge_event_is_consumed_and_a_resend_with_a_new_id_is_a_duplicate(
    world: Aws,
) -> None:
    detail = json.loads(order_body("evt-9"))
    records = _eventbridge_to_queue(world, detail, sends=2)
    events = [json.loads(r["body"]) for r in records]
    assert {e["detail-type"] for e in events} == {"OrderPlaced"}
    assert [e["detail"] for e in events] == [detail, detail]
    assert events[0]["id"] != events[1]["id"]  # a new id per PutEvents entry

    consumer = _eventbridge_orders(
        event_id=EventIdFromBody("detail.event_id"), envelope=EventBridgeEnvelope()
    )
    assert _process(world, consumer, records[:1]) == {"batchItemFailures": []}
    assert _process(world, consumer, records[1:]) == {"batchItemFailures": []}
    assert [row[ORDER_KEY]["S"] for row in world.order_rows()] == ["evt-9"]
    assert [n["event_id"] for n in world.notifications()] == ["evt-9"]
    assert world.dlq_messages() == []


def test_without_the_declaration_an_eventbridge_resend_would_be_a_conflict(world: Aws) -> None:
    """Why the envelope sets the fingerprint: the whole body holds ``id`` and ``time``, which
    every PutEvents renews."""
    records = _eventbridge_to_queue(world, json.loads(order_body("evt-10")), sends=2)
    consumer = _eventbridge_orders(event_id=EventIdFromBody("detail.event_id"))
    _process(world, consumer, records[:1])
    _process(world, consumer, records[1:])
    kinds = [m["MessageAttributes"]["failure_kind"]["StringValue"] for m in world.dlq_messages()]
    assert kinds == ["conflicting_duplicate"]


def test_an_eventbridge_path_outside_the_event_is_refused_when_the_consumer_is_built() -> None:
    with pytest.raises(ValueError, match=r"'order' is no field of an EventBridge event"):
        _eventbridge_orders(
            event_id=EventIdFromBody("order.order_id"), envelope=EventBridgeEnvelope()
        )
