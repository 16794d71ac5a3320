"""The Powertools idempotency strategy, pointed at moto through the injected client."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from handlers.orders import order_notification, order_writes
from idempotent_messaging.runtime import Consumer, WriteContext, env
from idempotent_messaging.runtime.powertools_strategy import idempotency_config
from tests.integration.test_runtime_world import (
    TENANT_STATE_TABLE,
    Aws,
    FakeContext,
    order_body,
    record,
    sqs_event,
)

pytestmark = pytest.mark.integration

CONSUMER = Consumer(writes=order_writes, namespace="order")
POWERTOOLS = {"strategy": env.STRATEGY_POWERTOOLS, "topic_arn": None}


def run(world: Aws, *records: dict[str, Any], context: Any = None, **overrides: Any):
    world.reset_counts()
    settings = {**POWERTOOLS, **overrides}
    return CONSUMER.process(
        sqs_event(*records), context or FakeContext(), world.runtime(**settings)
    )


def test_powertools_strategy_writes_once_and_skips_duplicates(aws: Aws) -> None:
    body = order_body("p1")
    assert run(aws, record(body)) == {"batchItemFailures": []}
    assert aws.calls == ["PutItem", "TransactWriteItems", "UpdateItem"]  # 3 per fresh record
    assert run(aws, record(body)) == {"batchItemFailures": []}  # producer re-send
    assert aws.calls == ["PutItem"]  # 1 per duplicate
    assert [r["source_event_id"]["S"] for r in aws.order_rows()] == ["p1"]
    state = aws.claims()[0]
    assert state["event_id"]["S"].startswith("order#")  # key_prefix + hash of the event id only
    assert state["status"]["S"] == "COMPLETED"
    assert int(state["ttl"]["N"]) - time.time() > 89 * 24 * 3600  # 90-day expiry, not 1 h


def test_powertools_key_is_the_business_key_not_message_metadata() -> None:
    config = idempotency_config(
        type(
            "R", (), {"settings": type("S", (), {"tenant_layout": False, "claim_ttl_seconds": 7})}
        )(),
        FakeContext(),
    )
    assert config.event_key_jmespath == "event_id"
    assert config.raise_on_no_idempotency_key is True
    assert config.expires_after_seconds == 7
    assert config.lambda_context is not None  # register_lambda_context was called


def test_powertools_in_progress_record_expires_with_the_crashed_invocation(aws: Aws) -> None:
    """register_lambda_context: a crash leaves INPROGRESS only until that invocation's end."""
    from tests.integration.test_runtime_world import Crash

    rec = record(order_body("p2"))
    aws.crash_before_call = 2  # die after Powertools' PutItem, before the business write
    with pytest.raises(Crash):
        run(aws, rec, context=FakeContext(remaining_ms=60_000))
    aws.crash_before_call = None
    blocked = run(aws, rec)
    assert blocked == {"batchItemFailures": [{"itemIdentifier": rec["messageId"]}]}
    assert aws.order_rows() == []

    rec2 = record(order_body("p3"))
    aws.reset_counts()
    aws.crash_before_call = 2
    with pytest.raises(Crash):
        run(aws, rec2, context=FakeContext(remaining_ms=1))
    aws.crash_before_call = None
    time.sleep(0.01)
    assert run(aws, rec2) == {"batchItemFailures": []}
    assert [r["source_event_id"]["S"] for r in aws.order_rows()] == ["p3"]


def test_powertools_strategy_quarantines_poison_and_semantic_failures(aws: Aws) -> None:
    run(aws, record(order_body("p4", order_id="same")))
    clash = record(order_body("p5", order_id="same"))
    poison = record("nope")
    missing = record(json.dumps({"order": {"order_id": "x"}}))
    good = record(order_body("p6"))
    response = run(aws, clash, poison, missing, good)
    assert response == {"batchItemFailures": []}
    kinds = {
        m["MessageAttributes"]["original_message_id"]["StringValue"]: m["MessageAttributes"][
            "failure_kind"
        ]["StringValue"]
        for m in aws.dlq_messages()
    }
    assert kinds == {
        clash["messageId"]: "semantic",
        poison["messageId"]: "not_json",
        missing["messageId"]: "missing_event_id",
    }
    assert {r["order_id"]["S"] for r in aws.order_rows()} == {"same", "order-p6"}
    # The semantic failure left no idempotency record behind: a fixed redrive can run.
    assert len(aws.claims()) == 2


def test_powertools_strategy_reports_failed_when_every_record_fails(aws: Aws) -> None:
    records = [record("nope"), record("nope either")]
    response = run(aws, *records, dlq_url=aws.dlq_url + "-missing")
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {
        r["messageId"] for r in records
    }


def test_powertools_strategy_in_tenant_layout_and_fifo(aws: Aws) -> None:
    def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        return order_writes(message, ctx)

    consumer = Consumer(writes=writes, namespace="charge", tenant=lambda m: m["order"]["tenant"])
    a = record(order_body("k", order_id="oa", tenant="t1"), group_id="g", fifo=True)
    b = record(order_body("k", order_id="ob", tenant="t2"), group_id="g", fifo=True)
    settings = {
        **POWERTOOLS,
        "state_table": TENANT_STATE_TABLE,
        "key_layout": env.LAYOUT_TENANT,
        "source_fifo": True,
    }
    response = consumer.process(sqs_event(a, b), FakeContext(), aws.runtime(**settings))
    assert response == {"batchItemFailures": []}
    assert len(aws.claims(TENANT_STATE_TABLE)) == 2  # same event id, two tenants
    assert {r["order_id"]["S"] for r in aws.order_rows()} == {"oa", "ob"}


def test_powertools_strategy_refuses_consumers_with_a_notification(aws: Aws) -> None:
    consumer = Consumer(writes=order_writes, notification=order_notification)
    rec = record(order_body("p7"))
    response = consumer.process(
        sqs_event(rec), FakeContext(), aws.runtime(strategy=env.STRATEGY_POWERTOOLS)
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": rec["messageId"]}]}
    assert aws.order_rows() == []
