"""Issue 22, item 3: BatchGetItem's UnprocessedKeys are retried; a processed event never lands in
the DLQ for it.

AWS facts (DynamoDB API reference, "BatchGetItem"): "A single operation can retrieve up to 16 MB
of data ... If you request more than 100 items, BatchGetItem returns a ValidationException";
"If DynamoDB returns any unprocessed items, you should retry the batch operation on those
items. However, we strongly recommend that you use an exponential backoff algorithm"; it may
leave keys unprocessed for any reason, e.g. throttling, and only "If none of the items can be
processed due to insufficient provisioned throughput, BatchGetItem returns a
ProvisionedThroughputExceededException". botocore retries that exception; it cannot see an
UnprocessedKeys answer (a 200). Before this fix the runtime took one unprocessed answer as a
failure: on the message's last receive a fully processed duplicate was dead-lettered as
``retries_exhausted``, and a pending one's owed notification waited for a human redrive.

moto never leaves keys unprocessed below 16 MB, so the test patches moto's BatchGetItem to
answer, for its first calls, what DynamoDB may answer: the keys moved to ``UnprocessedKeys``
with the request's own projection and consistency (the ``KeysAndAttributes`` shape).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from moto.dynamodb.responses import DynamoHandler

from idempotent_messaging.runtime import env, lambda_handler
from tests.integration.runtime_faults import rewrite_parsed
from tests.integration.test_runtime_audit2_world import entry_clients, entry_point
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    STATE_TABLE,
    Aws,
    FakeContext,
    order_body,
    record,
    separate_claim_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

MAX_RECEIVES = 3


@pytest.fixture
def unprocessed(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """``rounds["left"]``: how many more BatchGetItem calls leave EVERY key unprocessed."""
    rounds = {"left": 0, "calls": 0}
    original = DynamoHandler.batch_get_item

    def batch_get_item(self: DynamoHandler) -> Any:
        result = original(self)
        rounds["calls"] += 1
        if rounds["left"] <= 0:
            return result
        rounds["left"] -= 1
        answer = cast(dict[str, Any], result.result)
        for table, request in self.body["RequestItems"].items():
            answer["Responses"][table] = []
            answer["UnprocessedKeys"][table] = {
                name: value
                for name, value in request.items()
                if name
                in ("Keys", "ConsistentRead", "ProjectionExpression", "ExpressionAttributeNames")
            }
        return result

    monkeypatch.setattr(DynamoHandler, "batch_get_item", batch_get_item)
    yield rounds


def _set_pending(world: Aws, in_item: bool, event_id: str) -> None:
    """The first delivery died between its commit and its publish: the claim is pending."""
    table = BUSINESS_TABLE if in_item else STATE_TABLE
    event, status = (
        (env.ITEM_CLAIM_EVENT_ID, env.ITEM_CLAIM_STATUS) if in_item else ("event_id", "status")
    )
    names = [
        k["AttributeName"]
        for k in world.dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]
    ]
    (item,) = [
        i
        for i in world.dynamodb.scan(TableName=table)["Items"]
        if i.get(event, {}).get("S") == event_id
    ]
    world.dynamodb.update_item(
        TableName=table,
        Key={name: item[name] for name in names},
        # ... and names no receipt (a claim written before receipts; a receipt never written
        # reads the same: not listed).
        UpdateExpression="SET #s = :p REMOVE #r",
        ExpressionAttributeNames={
            "#s": status,
            "#r": env.ITEM_CLAIM_RECEIPT if in_item else env.STATE_CLAIM_RECEIPT,
        },
        ExpressionAttributeValues={":p": {"S": env.STATUS_PENDING}},
    )


def _handler(in_item: bool) -> Any:
    if in_item:
        from handlers import orders

        return orders.handler

    # The state-table claim comes back in the cancellation reason (ALL_OLD); without it the
    # runtime reads it with BatchGetItem, the path under test.
    def strip_items(parsed: dict[str, Any]) -> None:
        for reason in parsed.get("CancellationReasons", []):
            reason.pop("Item", None)

    rewrite_parsed(entry_clients().dynamodb, "TransactWriteItems", strip_items)
    return lambda_handler(separate_claim_orders())


@pytest.mark.parametrize("pending", [False, True], ids=["sent", "pending"])
@pytest.mark.parametrize("in_item", [True, False], ids=["in-item", "state-table"])
def test_a_duplicate_whose_status_read_is_left_unprocessed_on_its_last_receive_is_not_dlqd(
    aws: Aws,
    monkeypatch: pytest.MonkeyPatch,
    unprocessed: dict[str, int],
    in_item: bool,
    pending: bool,
) -> None:
    aws.claims_in_items = in_item
    with entry_point(aws, monkeypatch, **{env.MAX_RECEIVE_COUNT: str(MAX_RECEIVES)}):
        handler = _handler(in_item)
        assert handler(sqs_event(record(order_body("e1"))), FakeContext()) == {
            "batchItemFailures": []
        }
        aws.notifications()  # the first delivery's notification
        if pending:
            _set_pending(aws, in_item, "e1")
        unprocessed["left"] = 2  # DynamoDB leaves the key unprocessed twice, then answers
        unprocessed["calls"] = 0
        last = record(order_body("e1"), receive_count=MAX_RECEIVES)
        assert handler(sqs_event(last), FakeContext()) == {"batchItemFailures": []}
    assert aws.dlq_messages() == []  # a processed event never lands in the DLQ
    # The same key, read again after a backoff; a published claim's receipt read after it.
    assert unprocessed["calls"] == (3 if pending else 4)
    statuses = {c["event_id"]["S"]: c["status"]["S"] for c in aws.claims()}
    assert statuses == {"e1": env.STATUS_SENT}
    # A pending claim's owed notification is published now, not after a human redrive.
    assert [n["event_id"] for n in aws.notifications()] == (["e1"] if pending else [])


def test_keys_left_unprocessed_on_every_round_are_failed_for_redelivery_not_skipped(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, unprocessed: dict[str, int]
) -> None:
    """Bounded: after the runtime's rounds the record is failed (SQS redelivers it), never
    given a verdict an unprocessed key cannot give; its neighbours are unaffected."""
    from idempotent_messaging.runtime.batch import STATUS_READ_ATTEMPTS

    aws.claims_in_items = True
    with entry_point(aws, monkeypatch):
        handler = _handler(True)
        handler(sqs_event(record(order_body("e1"))), FakeContext())
        unprocessed["left"], unprocessed["calls"] = 100, 0
        again, fresh = record(order_body("e1")), record(order_body("e2"))
        response = handler(sqs_event(again, fresh), FakeContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": again["messageId"]}]}
    assert unprocessed["calls"] == STATUS_READ_ATTEMPTS
    assert aws.dlq_messages() == []
    assert {c["event_id"]["S"] for c in aws.claims()} == {"e1", "e2"}


def test_the_read_rounds_stop_at_the_remaining_time_guard(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, unprocessed: dict[str, int]
) -> None:
    aws.claims_in_items = True
    with entry_point(aws, monkeypatch):
        handler = _handler(True)
        handler(sqs_event(record(order_body("e1"))), FakeContext())
        unprocessed["left"], unprocessed["calls"] = 100, 0
        context = FakeContext()

        def sleep_and_age(seconds: float) -> None:
            context.remaining_ms = 10  # the invocation is about to time out

        from handlers import orders

        monkeypatch.setattr(orders.ORDERS, "sleep", sleep_and_age)
        again = record(order_body("e1"))
        response = handler(sqs_event(again), context)
    assert response == {"batchItemFailures": [{"itemIdentifier": again["messageId"]}]}
    assert unprocessed["calls"] == 1  # no read started inside the guard
