"""The last receive: SQS dead-letters a message once its receive count exceeds the redrive
policy's maxReceiveCount (SQS Developer Guide, "Using dead-letter queues"), with none of our
reason attributes. A record that fails on that receive is quarantined by the runtime instead,
with the failure that exhausted it, so every DLQ message carries its reason."""

from __future__ import annotations

from typing import Any

import pytest

from handlers.orders import order_notification, order_writes
from idempotent_messaging.runtime import Consumer, Settings, WriteContext, env
from idempotent_messaging.runtime.errors import ConfigurationError
from tests.integration.runtime_faults import fail_sends
from tests.integration.test_runtime_world import (
    Aws,
    FakeContext,
    order_body,
    record,
    sqs_event,
)

pytestmark = pytest.mark.integration

MAX_RECEIVES = 5


class Boom(Exception):
    """An exception type the runtime has never heard of."""


def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    if message["event_id"] == "bad":
        raise Boom("plug-in bug")
    return order_writes(message, ctx)


CONSUMER = Consumer(writes=writes, notification=order_notification, namespace="order")


def run(world: Aws, *records: dict[str, Any], **settings: Any) -> set[str]:
    response = CONSUMER.process(sqs_event(*records), FakeContext(), world.runtime(**settings))
    return {f["itemIdentifier"] for f in response["batchItemFailures"]}


def dlq_kinds(world: Aws) -> dict[str, dict[str, str]]:
    out = {}
    for m in world.dlq_messages():
        attrs = {k: v.get("StringValue") for k, v in m["MessageAttributes"].items()}
        out[str(attrs["original_message_id"])] = attrs
    return out


def test_a_record_failing_on_its_last_receive_is_quarantined_with_the_failure(aws: Aws) -> None:
    good = record(order_body("good"), receive_count=MAX_RECEIVES)
    bad = record(order_body("bad"), receive_count=MAX_RECEIVES)
    assert run(aws, good, bad, max_receive_count=MAX_RECEIVES) == set()
    copy = dlq_kinds(aws)[bad["messageId"]]
    assert copy["failure_kind"] == "retries_exhausted"
    assert f"receive {MAX_RECEIVES} of {MAX_RECEIVES}" in copy["failure_reason"]
    assert "Boom" in copy["failure_reason"]
    assert copy["event_id"] == "bad"
    assert {r["order_id"]["S"] for r in aws.order_rows()} == {"order-good"}


def test_before_its_last_receive_a_failing_record_is_left_for_redelivery(aws: Aws) -> None:
    bad = record(order_body("bad"), receive_count=MAX_RECEIVES - 1)
    assert run(aws, bad, max_receive_count=MAX_RECEIVES) == {bad["messageId"]}
    assert aws.dlq_messages() == []


def test_without_a_known_max_receive_count_the_record_is_left_to_sqs(aws: Aws) -> None:
    bad = record(order_body("bad"), receive_count=50)
    assert run(aws, bad) == {bad["messageId"]}
    assert aws.dlq_messages() == []


def test_a_failed_quarantine_on_the_last_receive_leaves_it_to_sqs(aws: Aws) -> None:
    bad = record(order_body("bad"), receive_count=MAX_RECEIVES)
    fail_sends(aws.sqs, "SendMessageBatch", 3)
    assert run(aws, bad, max_receive_count=MAX_RECEIVES) == {bad["messageId"]}


def test_the_max_receive_count_comes_from_the_environment_and_must_be_positive() -> None:
    base = {env.STATE_TABLE: "s", env.DLQ_URL: "https://sqs/q"}
    assert Settings.from_env({**base, env.MAX_RECEIVE_COUNT: "5"}).max_receive_count == 5
    assert Settings.from_env(base).max_receive_count is None
    with pytest.raises(ConfigurationError, match=env.MAX_RECEIVE_COUNT):
        Settings.from_env({**base, env.MAX_RECEIVE_COUNT: "0"})
