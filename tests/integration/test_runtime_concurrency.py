"""Two concurrent deliveries of one event (threads against a real HTTP moto server)."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from moto.dynamodb.models import DynamoDBBackend
from moto.server import ThreadedMotoServer

from handlers.orders import ORDER_KEY, ORDERS
from idempotent_messaging.runtime import Consumer, WriteContext, env
from idempotent_messaging.runtime.clients import reset_clients
from tests.integration.test_runtime_world import (
    Aws,
    FakeContext,
    SimQueue,
    assert_exactly_once,
    create_world,
    order_body,
    record,
    sqs_event,
)

pytestmark = pytest.mark.integration


def _isolate_moto_transactions(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto rolls a cancelled transaction back by restoring a deep copy of the tables taken
    when it started, which erases writes committed by a concurrent transaction meanwhile (a
    lost update real DynamoDB never makes: its transactions are serializable). Give moto that
    isolation; the race between the two invocations' claims is untouched."""
    lock = threading.Lock()
    original = DynamoDBBackend.transact_write_items

    def serialized(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return original(self, *args, **kwargs)

    monkeypatch.setattr(DynamoDBBackend, "transact_write_items", serialized)


@pytest.fixture
def server_world(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    _isolate_moto_transactions(monkeypatch)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        # The server keeps moto's process-wide state: start from an empty account.
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"))
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        reset_clients()
        world = create_world(endpoint)
        for name, value in world.env().items():
            monkeypatch.setenv(name, value)
        yield world
    finally:
        reset_clients()
        server.stop()


def race(handle: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Start every invocation at the same instant; each thread is one Lambda instance."""
    barrier = threading.Barrier(len(events))
    results: list[Any] = [None] * len(events)

    def invoke(i: int) -> None:
        barrier.wait()
        try:
            results[i] = handle(events[i], FakeContext())
        except BaseException as exc:  # surfaced by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=invoke, args=(i,)) for i in range(len(events))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(isinstance(r, dict) for r in results), results
    return results


def test_two_concurrent_deliveries_of_one_event_write_one_row(server_world: Aws) -> None:
    """Both invocations build their clients lazily from AWS_ENDPOINT_URL (the Lambda path).
    The orders consumer keeps its claim in the order row: the row's own condition is what
    the two invocations race on."""
    server_world.claims_in_items = True
    queue = SimQueue()
    expected = {}
    for i in range(5):
        body = order_body(f"race-{i}")
        expected[f"race-{i}"] = f"order-race-{i}"
        # Two messages of one event (a producer double-send), delivered at the same time.
        first = record(body)
        second = record(body)
        results = race(ORDERS.handle, [sqs_event(first), sqs_event(second)])
        for result, rec in zip(results, (first, second), strict=True):
            if result["batchItemFailures"]:  # lost a conflict: SQS would redeliver it
                queue.send(rec["body"])
    queue.drain(lambda event: ORDERS.handle(event, FakeContext()))
    assert server_world.dlq_messages() == []  # a race is never mistaken for poison
    assert_exactly_once(server_world, expected)


def test_two_concurrent_copies_on_the_article_tables_write_one_row(server_world: Aws) -> None:
    """Issue 36, DomainKeyedCreate: two copies of one event at the same instant race on the
    claim INSERT; the loser reads the claim (pending, its content) and writes or verifies the
    row by its key and the event id it records. One row per order, a notification each, and a
    race is never a conflict."""
    from tests.integration.test_runtime_world import article_orders

    server_world.rows_by_order = True
    consumer = article_orders(sleep=lambda _s: None)
    runtime = server_world.runtime()

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        response: dict[str, Any] = consumer.process(event, context, runtime)
        return response

    queue = SimQueue()
    expected = {}
    for i in range(5):
        body = order_body(f"race-{i}")
        expected[f"race-{i}"] = f"order-race-{i}"
        first, second = record(body), record(body)
        results = race(handle, [sqs_event(first), sqs_event(second)])
        for result, rec in zip(results, (first, second), strict=True):
            if result["batchItemFailures"]:  # SQS would redeliver it
                queue.send(rec["body"])
    queue.drain(lambda event: handle(event, FakeContext()))
    assert server_world.dlq_messages() == []
    assert_exactly_once(server_world, expected)


def test_concurrent_deliveries_apply_an_increment_exactly_once(server_world: Aws) -> None:
    """A non-idempotent business write (ADD) proves the claim, not the Put, dedups."""

    def increment(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        return [
            {
                "Update": {
                    "TableName": ctx.business_table,
                    "Key": {ORDER_KEY: {"S": message["counter"]}},
                    "UpdateExpression": "ADD applied :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
        ]

    consumer = Consumer(writes=increment)
    queue = SimQueue()
    bodies = [f'{{"event_id": "inc-{i}", "counter": "c{i}"}}' for i in range(4)]
    for body in bodies:
        events = [sqs_event(record(body)) for _ in range(3)]
        for result in race(consumer.handle, events):
            if result["batchItemFailures"]:
                queue.send(body)
    queue.drain(lambda event: consumer.handle(event, FakeContext()))
    rows = {r[ORDER_KEY]["S"]: r["applied"]["N"] for r in server_world.order_rows()}
    assert rows == {f"c{i}": "1" for i in range(4)}
    assert {c["status"]["S"] for c in server_world.claims()} == {env.STATUS_SENT}
