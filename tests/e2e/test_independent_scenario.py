"""A scenario of someone else's, written only against the documented API (docs/operations.md,
"Scenarios of your own"): `idempotent_messaging.local.session.start_session`, the stack
outputs, boto3 clients and `drain()`. Nothing here uses the demo's helpers, so it checks what an
outside script sees.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError

from idempotent_messaging.local.session import start_session

pytestmark = pytest.mark.e2e


def _order(event_id: str) -> str:
    return json.dumps({"event_id": event_id, "order": {"order_id": f"o-{event_id}"}})


def _receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while batch := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], WaitTimeSeconds=0
    ).get("Messages", []):
        messages.extend(batch)
        for m in batch:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    return messages


def test_outside_scenario_with_duplicates_and_poison_on_the_deployed_dev_stack() -> None:
    with start_session("dev") as stack:
        out = stack.outputs
        sqs, sns, ddb = stack.client("sqs"), stack.client("sns"), stack.client("dynamodb")

        # Our own subscriber on the consumer's topic, as any downstream service would be.
        inbox = sqs.create_queue(QueueName="outside-inbox")["QueueUrl"]
        inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        sns.subscribe(
            TopicArn=out["orders_topic_arn"],
            Protocol="sqs",
            Endpoint=inbox_arn,
            Attributes={"RawMessageDelivery": "true"},
        )

        events = [f"ext-{i}" for i in range(5)]
        bodies = [_order(e) for e in events] + [_order("ext-0"), _order("ext-3")]  # duplicates
        bodies += ["<order>not json</order>", json.dumps({"event_id": "ext-bad", "order": {}})]
        for body in bodies:
            sqs.send_message(QueueUrl=out["orders_queue_url"], MessageBody=body)
        assert stack.drain() >= 1

        rows = ddb.scan(TableName=out["orders_business_table_name"])["Items"]
        assert sorted(r["source_event_id"]["S"] for r in rows) == events  # one row per event

        notified = [json.loads(m["Body"])["event_id"] for m in _receive_all(sqs, inbox)]
        assert set(notified) == set(events)  # at least one notification per event

        dead = _receive_all(sqs, out["orders_dlq_url"])
        reasons = sorted(m["MessageAttributes"]["failure_kind"]["StringValue"] for m in dead)
        assert reasons == ["not_json", "schema"]  # both poison messages, each with its reason
        depth = sqs.get_queue_attributes(
            QueueUrl=out["orders_queue_url"],
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        assert depth == {
            "ApproximateNumberOfMessages": "0",
            "ApproximateNumberOfMessagesNotVisible": "0",
        }
    with pytest.raises(EndpointConnectionError):  # leaving the block stopped the emulator
        stack.client("sqs", retries={"max_attempts": 1}).list_queues()
