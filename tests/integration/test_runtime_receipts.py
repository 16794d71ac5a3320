"""Issue 26: one write per message, one publication receipt per batch.

Write units are billed from the requests on the wire (``bench.usage.describe_dynamodb``, the
benchmark's own arithmetic), calls counted per AWS call, for the reference orders consumer in
both placements on a standard queue, in batches of 10. Then every failure ordering around the
receipt keeps "at least one notification per effect".
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from botocore.exceptions import ClientError

from bench.usage import describe_dynamodb
from idempotent_messaging.runtime import env
from tests.integration.test_runtime_world import (
    STATE_TABLE,
    Aws,
    Crash,
    FakeContext,
    assert_exactly_once,
    order_body,
    record,
    separate_claim_orders,
    single_item_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

PLACEMENTS = {"in-item": single_item_orders(), "state-table": separate_claim_orders()}


class Bill:
    """Write units of every DynamoDB request the runtime's client sends."""

    def __init__(self, world: Aws) -> None:
        self.write_units = 0.0
        self._params: list[dict[str, Any]] = []
        events = world.dynamodb.meta.events
        events.register("before-parameter-build.dynamodb", self._request)
        events.register("after-call.dynamodb", self._response)

    def _request(self, params: dict[str, Any], **_: Any) -> None:
        self._params.append(dict(params))

    def _response(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        params = self._params.pop(0) if self._params else {}
        code = (parsed.get("Error") or {}).get("Code")
        self.write_units += describe_dynamodb(model.name, params, parsed, code).write_units


@pytest.fixture(params=sorted(PLACEMENTS))
def placement(request: pytest.FixtureRequest, aws: Aws) -> str:
    aws.claims_in_items = request.param == "in-item"
    return str(request.param)


def _stream(count: int, duplicates: int, seed: int = 7) -> list[str]:
    """Event ids in delivery order: ``duplicates`` re-sends of events a full batch earlier."""
    rng = random.Random(seed)
    stream = [f"e{i:04d}" for i in range(count - duplicates)]
    for _ in range(duplicates):
        position = rng.randint(11, len(stream))
        stream.insert(position, stream[rng.randrange(0, position - 10)])
    return stream


def _deliver(world: Aws, placement: str, stream: list[str]) -> tuple[float, float]:
    """(write units, calls) per message, batches of 10 in order."""
    consumer = PLACEMENTS[placement]
    bill = Bill(world)
    calls = 0
    for start in range(0, len(stream), 10):
        world.reset_counts()
        batch = [record(order_body(event)) for event in stream[start : start + 10]]
        response = consumer.process(sqs_event(*batch), FakeContext(), world.runtime())
        assert response == {"batchItemFailures": []}
        calls += len(world.calls)
    assert_exactly_once(world, {e: f"order-{e}" for e in set(stream)})
    return bill.write_units / len(stream), calls / len(stream)


def test_the_happy_path_costs_one_write_per_message_and_one_receipt_per_batch(
    aws: Aws, placement: str
) -> None:
    wu, calls = _deliver(aws, placement, _stream(100, 0))
    if placement == "in-item":
        # INSERT of the row carrying its claim (1 WU) + 1/10 of the receipt (1 WU): 1.1
        assert wu <= 1.2 and calls <= 0.3, (wu, calls)
    else:
        # The separate claim commits in a transaction with the row: 2 x 2 WU + the receipt.
        assert wu <= 4.2 and calls <= 0.3, (wu, calls)


def test_ten_percent_duplicates(aws: Aws, placement: str) -> None:
    wu, calls = _deliver(aws, placement, _stream(100, 10))
    if placement == "in-item":
        assert wu <= 1.4 and calls <= 0.4, (wu, calls)
    else:
        # A cancelled transaction is billed for every item it held (10 records x 2 x 2 WU).
        assert wu <= 6.0 and calls <= 0.4, (wu, calls)


def test_a_batch_writes_one_receipt_in_the_state_table_with_the_claim_ttl(
    aws: Aws, placement: str
) -> None:
    consumer = PLACEMENTS[placement]
    records = [record(order_body(f"e{i}")) for i in range(10)]
    runtime = aws.runtime()
    assert consumer.process(sqs_event(*records), FakeContext(), runtime) == {
        "batchItemFailures": []
    }
    receipts = aws.receipts()
    assert list(receipts.values()) == [frozenset(f"e{i}" for i in range(10))]
    (item,) = [
        i
        for i in aws.dynamodb.scan(TableName=STATE_TABLE)["Items"]
        if i[env.EVENT_ID_KEY]["S"].startswith(env.RECEIPT_KEY_PREFIX)
    ]
    if placement == "state-table":  # the claims' TTL: the same horizon
        ttl = int(item["ttl"]["N"]) - int(item[env.RECEIPT_WRITTEN_AT]["N"])
        assert ttl == runtime.settings.claim_ttl_seconds
    else:  # a claim in a business item never expires, nor its receipt
        assert "ttl" not in item
    assert {c["status"]["S"] for c in aws.claims()} == {env.STATUS_SENT}


def _republished_after(world: Aws, placement: str, body_ids: list[str]) -> list[dict[str, Any]]:
    consumer = PLACEMENTS[placement]
    again = [record(order_body(e)) for e in body_ids]
    world.reset_counts()
    assert consumer.process(sqs_event(*again), FakeContext(), world.runtime()) == {
        "batchItemFailures": []
    }
    return world.notifications()


def test_a_death_after_the_publish_before_the_receipt_republishes(aws: Aws, placement: str) -> None:
    consumer = PLACEMENTS[placement]
    aws.crash_before_call = 3  # commit, PublishBatch, then dies before the receipt's PutItem
    records = [record(order_body(f"e{i}")) for i in range(3)]
    with pytest.raises(Crash):
        consumer.process(sqs_event(*records), FakeContext(), aws.runtime())
    aws.crash_before_call = None
    assert len(aws.notifications()) == 3
    assert aws.receipts() == {}
    notes = _republished_after(aws, placement, ["e0", "e1", "e2"])
    assert len(notes) == 3  # no receipt lists them: published again (at-least-once)
    assert len(aws.order_rows()) == 3
    assert _republished_after(aws, placement, ["e0"]) == []  # now marked sent on the claim


def test_a_refused_receipt_write_fails_the_batch_for_redelivery(aws: Aws, placement: str) -> None:
    consumer = PLACEMENTS[placement]

    def refuse(**_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"}},
            "PutItem",
        )

    aws.dynamodb.meta.events.register("before-call.dynamodb.PutItem", refuse)
    records = [record(order_body(f"e{i}")) for i in range(2)]
    response = consumer.process(sqs_event(*records), FakeContext(), aws.runtime())
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {
        r["messageId"] for r in records
    }
    aws.dynamodb.meta.events.unregister("before-call.dynamodb.PutItem", refuse)
    assert len(aws.notifications()) == 2
    assert len(_republished_after(aws, placement, ["e0", "e1"])) == 2
    assert len(aws.order_rows()) == 2


def test_a_partial_publish_lists_only_the_published(aws: Aws, placement: str) -> None:
    consumer = PLACEMENTS[placement]
    real = aws.sns.publish_batch

    def half(**kwargs: Any) -> Any:
        entries = kwargs["PublishBatchRequestEntries"]
        answer = real(**{**kwargs, "PublishBatchRequestEntries": entries[:1]})
        answer["Failed"] = [
            {"Id": e["Id"], "Code": "InternalError", "SenderFault": False} for e in entries[1:]
        ]
        return answer

    aws.sns.publish_batch = half
    records = [record(order_body(f"e{i}")) for i in range(3)]
    response = consumer.process(sqs_event(*records), FakeContext(), aws.runtime())
    assert len(response["batchItemFailures"]) == 2
    assert list(aws.receipts().values()) == [frozenset({"e0"})]
    del aws.sns.publish_batch
    assert len(aws.notifications()) == 1
    # The whole batch comes back: e0 is listed (skipped), e1 and e2 are published.
    assert len(_republished_after(aws, placement, ["e0", "e1", "e2"])) == 2
    assert len(aws.order_rows()) == 3


def test_a_receipt_gone_before_a_late_copy_republishes(aws: Aws, placement: str) -> None:
    """The receipt carries the claim TTL (written after the claim, it outlives it); if it is
    gone anyway, a late copy finds the claim pending and unlisted: published again."""
    consumer = PLACEMENTS[placement]
    records = [record(order_body("e0"))]
    consumer.process(sqs_event(*records), FakeContext(), aws.runtime())
    for item in aws.dynamodb.scan(TableName=STATE_TABLE)["Items"]:
        if item[env.EVENT_ID_KEY]["S"].startswith(env.RECEIPT_KEY_PREFIX):
            aws.dynamodb.delete_item(
                TableName=STATE_TABLE, Key={env.EVENT_ID_KEY: item[env.EVENT_ID_KEY]}
            )
    aws.notifications()
    assert len(_republished_after(aws, placement, ["e0"])) == 1
    assert len(aws.order_rows()) == 1
