"""The one error rule through the runtime's real path on moto: a code inside a 200 answer ends
the record exactly as the same code on the whole call (docs/runtime.md, "Failure classes").

* every error code botocore's SNS model gives PublishBatch, once as the error of the call and
  once as the entry's ``Failed`` code (with the model's ``senderFault``): the same outcome,
  and a code botocore retries is never quarantined;
* ``ItemCollectionSizeLimitExceeded`` as a BatchExecuteStatement statement error and as a
  TransactWriteItems cancellation reason: retried, then left to redelivery, never poison
  (DynamoDB's error table: "OK to retry? Yes").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from moto import mock_aws

from idempotent_messaging.runtime import env
from tests.aws_errors import botocore_retries, model
from tests.integration.test_runtime_world import (
    Aws,
    FakeContext,
    create_world,
    order_body,
    record,
    separate_claim_orders,
    single_item_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

PUBLISH_BATCH_CODES = [
    (shape.error_code, shape.metadata.get("error", {}))
    for shape in model("sns").operation_model("PublishBatch").error_shapes
]


@pytest.fixture(scope="module")
def world() -> Iterator[Aws]:
    """One moto world for the module: each case uses its own event ids and cleans its hooks."""
    mp = pytest.MonkeyPatch()
    mp.setenv("AWS_DEFAULT_REGION", "ap-northeast-1")
    mp.setenv("AWS_ACCESS_KEY_ID", "testing")
    mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield create_world()
    mp.undo()


def _outcome(world: Aws, consumer: Any, body: str) -> str:
    """'processed', 'failed' (left to SQS) or the DLQ copy's failure_kind."""
    world.dlq_messages()  # nothing left over from an earlier case
    one = record(body)
    response = consumer.process(sqs_event(one), FakeContext(), world.runtime())
    copies = world.dlq_messages()
    failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
    if copies:
        assert not failed
        return str(copies[0]["MessageAttributes"]["failure_kind"]["StringValue"])
    return "failed" if one["messageId"] in failed else "processed"


@contextmanager
def hooked(client: Any, event: str, handler: Any) -> Iterator[None]:
    """``handler`` on ``client``'s ``event`` for the block (the world outlives the case)."""
    client.meta.events.register_first(event, handler, unique_id=f"rule-{event}")
    try:
        yield
    finally:
        client.meta.events.unregister(event, unique_id=f"rule-{event}")


def refused_call(code: str, status: int) -> Any:
    """A before-call answer: the whole call fails with ``code`` (after botocore's attempts)."""

    def answer(**_: Any) -> tuple[Any, dict[str, Any]]:
        parsed = {
            "Error": {"Code": code, "Message": "injected"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        }
        return _Http(status), parsed

    return answer


@pytest.mark.parametrize(
    ("code", "error"), PUBLISH_BATCH_CODES, ids=[c for c, _ in PUBLISH_BATCH_CODES]
)
def test_a_publish_batch_code_ends_the_record_alike_on_the_call_and_in_an_entry(
    world: Aws, code: str, error: dict[str, Any]
) -> None:
    consumer = separate_claim_orders()
    status = int(error.get("httpStatusCode", 400))
    with hooked(world.sns, "before-call.sns.PublishBatch", refused_call(code, status)):
        on_call = _outcome(world, consumer, order_body(f"call-{code}"))

    def fail_entries(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Failed"] = [
            {
                "Id": ok["Id"],
                "Code": code,
                "Message": "injected",
                "SenderFault": bool(error.get("senderFault")),
            }
            for ok in parsed.get("Successful", [])
        ]
        parsed["Successful"] = []

    with hooked(world.sns, "after-call.sns.PublishBatch", fail_entries):
        in_entry = _outcome(world, consumer, order_body(f"entry-{code}"))
    assert on_call == in_entry, f"{code}: call -> {on_call}, entry -> {in_entry}"
    assert in_entry in ("failed", "notification_owed")
    if botocore_retries("sns", "PublishBatch", code) or code == "KMSThrottling":
        # botocore retries it, or SNS documents it as throttling: the claim stays pending and
        # SQS redelivers the record, whose redelivery publishes.
        assert in_entry == "failed"


def test_kms_throttling_in_a_publish_batch_entry_is_redelivered_and_then_published(
    world: Aws,
) -> None:
    """SNS API reference, PublishBatch Errors: KMSThrottling (HTTP 400; botocore's model marks
    it senderFault) is request throttling: the record is left to SQS, not quarantined as an
    owed notification, and its redelivery publishes."""
    consumer = separate_claim_orders()

    def throttle(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Failed"] = [
            {"Id": ok["Id"], "Code": "KMSThrottling", "Message": "x", "SenderFault": True}
            for ok in parsed.get("Successful", [])
        ]
        parsed["Successful"] = []

    world.notifications()
    one = record(order_body("kms-throttled"))
    with hooked(world.sns, "after-call.sns.PublishBatch", throttle):
        first = consumer.process(sqs_event(one), FakeContext(), world.runtime())
    assert first["batchItemFailures"] == [{"itemIdentifier": one["messageId"]}]
    assert world.dlq_messages() == []
    world.notifications()  # what the throttled answer hid was delivered: drop it
    again = record(order_body("kms-throttled"), message_id=one["messageId"], receive_count=2)
    assert consumer.process(sqs_event(again), FakeContext(), world.runtime()) == {
        "batchItemFailures": []
    }
    assert [n["event_id"] for n in world.notifications()] == ["kms-throttled"]


def _statement_error(code: str) -> Any:
    def answer(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        responses = [
            {"Error": {"Code": code, "Message": "Collection size exceeded."}}
            for _ in json.loads(params["body"])["Statements"]
        ]
        return _Http(200), {"Responses": responses, "ResponseMetadata": {"HTTPStatusCode": 200}}

    return answer


def test_item_collection_size_limit_in_a_statement_answer_is_retried_not_poison(
    world: Aws,
) -> None:
    """DynamoDB developer guide, "Error handling with DynamoDB":
    ItemCollectionSizeLimitExceededException, "OK to retry? Yes". Inside a 200
    BatchExecuteStatement answer (BatchStatementError.Code ItemCollectionSizeLimitExceeded) it
    is retried in the invocation, then left to redelivery: never quarantined as schema."""
    calls: list[int] = []
    answer = _statement_error("ItemCollectionSizeLimitExceeded")

    def counted(**kwargs: Any) -> Any:
        calls.append(1)
        return answer(**kwargs)

    with hooked(world.dynamodb, "before-call.dynamodb.BatchExecuteStatement", counted):
        outcome = _outcome(world, single_item_orders(), order_body("collection-full"))
    assert outcome == "failed"
    assert len(calls) == 3  # botocore never retries one statement: the runtime does, 3 attempts


def test_item_collection_size_limit_as_a_cancellation_reason_is_retried_not_poison(
    world: Aws,
) -> None:
    """The same code as a TransactWriteItems cancellation reason (the API reference lists it
    among CancellationReason codes): resubmitted, then left to redelivery."""
    calls: list[int] = []

    def cancel(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        calls.append(1)
        reasons = [{"Code": "None"}] + [
            {"Code": "ItemCollectionSizeLimitExceeded", "Message": "Collection size exceeded."}
            for _ in json.loads(params["body"])["TransactItems"][1:]
        ]
        return _Http(400), {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "CancellationReasons": reasons,
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    with hooked(world.dynamodb, "before-call.dynamodb.TransactWriteItems", cancel):
        outcome = _outcome(world, separate_claim_orders(), order_body("collection-full-tx"))
    assert outcome == "failed"
    assert len(calls) == 3
    assert not [c for c in world.claims() if c[env.EVENT_ID_KEY]["S"] == "collection-full-tx"]


class _Http:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.headers: dict[str, str] = {}
        self.content = b""
