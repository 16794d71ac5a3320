"""FIFO notification topics work for every event id the runtime accepts.

SNS API reference, PublishBatchRequestEntry: on a FIFO topic ``MessageGroupId`` is required and
"can contain up to 128 alphanumeric characters (a-z, A-Z, 0-9) and punctuation"; so is
``MessageDeduplicationId``. The runtime accepts any printable event id (up to DynamoDB's key
limits), so the group id is derived (runtime/notify.py, ``notification_group_id``): the source
record's SQS MessageGroupId on a FIFO queue (SQS's rule is the same, and it is the consumer's
ordering unit), else the event id when valid, else ``sha256:`` + its SHA-256. moto accepts any
group id, so the test holds the requests to SNS's rule itself.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from idempotent_messaging.runtime.notify import (
    dedup_id,
    is_valid_fifo_id,
    notification_group_id,
)
from tests.integration.test_runtime_world import (
    Aws,
    FakeContext,
    create_world,
    order_body,
    record,
    separate_claim_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

# The rule as the API reference states it, written out independently of the runtime's.
SNS_FIFO_ID = re.compile(r"^[A-Za-z0-9" + re.escape(string.punctuation) + r"]{1,128}$")


@pytest.fixture
def fifo_world(aws_env: dict[str, str]) -> Iterator[tuple[Aws, str, list[dict[str, Any]]]]:
    """A world whose notification topic is FIFO; returns it, the topic ARN and the log of
    PublishBatch entries SNS accepted (an entry breaking SNS's rule fails the call)."""
    with mock_aws():
        world = create_world()
        topic = world.sns.create_topic(
            Name="order-notifications.fifo", Attributes={"FifoTopic": "true"}
        )["TopicArn"]
        sent: list[dict[str, Any]] = []

        def strict(params: dict[str, Any], **_: Any) -> None:
            for entry in params.get("PublishBatchRequestEntries", []):
                for name in ("MessageGroupId", "MessageDeduplicationId"):
                    if not SNS_FIFO_ID.match(str(entry.get(name, ""))):
                        raise ClientError(
                            {
                                "Error": {
                                    "Code": "InvalidParameter",
                                    "Message": f"Invalid parameter: {name}",
                                },
                                "ResponseMetadata": {"HTTPStatusCode": 400},
                            },
                            "PublishBatch",
                        )
            sent.extend(params.get("PublishBatchRequestEntries", []))

        world.sns.meta.events.register_first("before-parameter-build.sns.PublishBatch", strict)
        yield world, topic, sent


@pytest.mark.parametrize(
    "event_id",
    ["注文-0001", "e" * 129, "order 1 (copy)", "e" * 128, "order-1"],
    ids=["non-ascii", "129-chars", "space", "128-chars", "plain"],
)
def test_every_accepted_event_id_is_notified_on_a_fifo_topic_from_a_standard_queue(
    fifo_world: tuple[Aws, str, list[dict[str, Any]]], event_id: str
) -> None:
    world, topic, sent = fifo_world
    one = record(order_body(event_id))
    response = separate_claim_orders().process(
        sqs_event(one), FakeContext(), world.runtime(topic_arn=topic)
    )
    assert response == {"batchItemFailures": []}
    assert world.dlq_messages() == []
    (entry,) = sent
    # The dedup id as sent: the SHA-256 of the event id (docs/runtime.md).
    assert entry["MessageDeduplicationId"] == hashlib.sha256(event_id.encode()).hexdigest()
    if SNS_FIFO_ID.match(event_id):
        assert entry["MessageGroupId"] == event_id  # valid as is: the event is its group
    else:
        assert entry["MessageGroupId"] == "sha256:" + entry["MessageDeduplicationId"]


def test_a_fifo_source_keeps_its_own_message_group_on_a_fifo_topic(
    fifo_world: tuple[Aws, str, list[dict[str, Any]]],
) -> None:
    """On a FIFO source the record's SQS MessageGroupId is the ordering unit (and valid by
    SQS's identical rule): the notifications of one group keep its order on the topic,
    whatever their event ids."""
    world, topic, sent = fifo_world
    records = [
        record(order_body(event_id), group_id="tenant-7#2026-05", fifo=True)
        for event_id in ("注文-0001", "注文-0002")
    ]
    response = separate_claim_orders().process(
        sqs_event(*records), FakeContext(), world.runtime(topic_arn=topic, source_fifo=True)
    )
    assert response == {"batchItemFailures": []}
    assert [e["MessageGroupId"] for e in sent] == ["tenant-7#2026-05"] * 2
    assert [json.loads(e["Message"])["event_id"] for e in sent] == ["注文-0001", "注文-0002"]


@given(st.text(min_size=1, max_size=300).filter(str.isprintable))
def test_the_derived_group_id_is_valid_and_stable_for_any_printable_event_id(
    event_id: str,
) -> None:
    try:
        event_id.encode("utf-8")
    except UnicodeEncodeError:
        return  # the runtime refuses such an id before anything is published
    group = notification_group_id(event_id, None)
    assert SNS_FIFO_ID.match(group) and is_valid_fifo_id(group)
    assert SNS_FIFO_ID.match(dedup_id(event_id))
    assert group == notification_group_id(event_id, None)
    assert group == event_id or not SNS_FIFO_ID.match(event_id)
