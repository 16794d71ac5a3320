"""The Powertools idempotency strategy is withdrawn: refused with an error naming the
alternative, before any AWS call, so no record is ever processed without exactly-once."""

from __future__ import annotations

from typing import Any

import pytest

from handlers.orders import order_writes
from handlers.runtime import Consumer, env
from tests.integration.test_runtime_world import Aws, FakeContext, order_body, record, sqs_event

pytestmark = pytest.mark.integration

CONSUMER = Consumer(writes=order_writes, namespace="order")


def test_powertools_strategy_is_refused_naming_the_transactional_alternative(
    aws: Aws, caplog: Any
) -> None:
    """Powertools writes the business effect and COMPLETED in two calls; a crash between them
    re-runs ``writes`` on redelivery (a counter ADD twice). Every record is reported failed
    (kept in SQS, nothing lost), nothing is written, and the log names the fix."""
    records = [record(order_body("p1")), record(order_body("p2"))]
    aws.reset_counts()
    response = CONSUMER.process(
        sqs_event(*records),
        FakeContext(),
        aws.runtime(strategy=env.STRATEGY_POWERTOOLS, topic_arn=None),
    )
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {
        r["messageId"] for r in records
    }
    assert aws.calls == []
    assert aws.order_rows() == []
    text = caplog.text + "".join(str(r.__dict__) for r in caplog.records)
    assert f"{env.IDEMPOTENCY_STRATEGY}={env.STRATEGY_TRANSACTIONAL}" in text
    assert "withdrawn" in text


def test_transactional_strategy_is_still_the_default(aws: Aws) -> None:
    rec = record(order_body("p3"))
    response = CONSUMER.process(sqs_event(rec), FakeContext(), aws.runtime(topic_arn=None))
    assert response == {"batchItemFailures": []}
    assert [r["order_id"]["S"] for r in aws.order_rows()] == ["order-p3"]
