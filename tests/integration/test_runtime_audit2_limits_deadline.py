"""AWS calls never outlive the invocation (issue 22, item 6).

AWS/botocore facts: a Lambda invocation is stopped at its timeout
(``context.get_remaining_time_in_millis()`` says how long is left); botocore's read timeout
applies per socket read and its connect timeout per connection, with retries (standard mode:
3 attempts, jittered backoff) on top, so one call has no overall deadline: with the runtime's
2 s connect / 5 s read, one call against an endpoint that stops answering takes ~15-21 s,
while the runtime's remaining-time guard only checks 5 s before starting it. Before: a call
started with 5 s left ran ~15 s, past the function's timeout (the invocation is killed, the
whole batch redelivered, its logs and metrics lost).

The slow endpoint is a local TCP server on 127.0.0.1 that accepts requests and never answers
in time; faults at the botocore level are error RESPONSES returned from a before-send hook,
which botocore retries exactly as it retries real ones.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from handlers import orders
from idempotent_messaging.dispatch import app
from idempotent_messaging.dispatch import env as denv
from idempotent_messaging.runtime import clients, env
from idempotent_messaging.runtime.clients import (
    DEADLINE_MARGIN_MS,
    DeadlineExceeded,
    cached_client,
    invocation_deadline,
    reset_clients,
)
from tests.integration.test_runtime_world import FakeContext, order_body, record, sqs_event

pytestmark = pytest.mark.integration

ANSWER_AFTER_S = 6.0  # longer than the runtime's 5 s read timeout


class _Slow(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(0.5)
        try:
            self.request.recv(65536)
        except OSError:
            return
        self.server.stopped.wait(ANSWER_AFTER_S)  # type: ignore[attr-defined]


@pytest.fixture
def slow_endpoint(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every AWS endpoint is a server that reads the request and does not answer in time."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Slow)
    server.daemon_threads = True
    server.stopped = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    reset_clients()
    yield url
    server.stopped.set()  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()
    reset_clients()


def _consumer_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        env.STATE_TABLE: "state",
        env.BUSINESS_TABLE: "orders",
        env.NOTIFICATION_TOPIC_ARN: "arn:aws:sns:ap-northeast-1:123456789012:orders",
        env.DLQ_URL: "https://sqs.ap-northeast-1.amazonaws.com/123456789012/orders-dlq",
        env.REMAINING_TIME_GUARD_MS: "1000",
    }.items():
        monkeypatch.setenv(name, value)


def test_a_call_to_an_endpoint_that_stops_answering_ends_before_the_function_timeout(
    slow_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5 s left, the guard passes: the INSERT call may not run past 5 s - margin; the records
    it serves are reported failed (SQS redelivers them), nothing is lost."""
    _consumer_env(monkeypatch)
    remaining_ms = 5_000
    records = [record(order_body(f"slow-{i}")) for i in range(3)]
    started = time.monotonic()
    response = orders.handler(sqs_event(*records), FakeContext(remaining_ms=remaining_ms))
    elapsed = time.monotonic() - started
    assert elapsed < (remaining_ms - DEADLINE_MARGIN_MS) / 1000 + 0.3, elapsed
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {
        r["messageId"] for r in records
    }


def test_a_call_with_less_time_left_than_one_attempt_is_refused_at_once(
    slow_endpoint: str,
) -> None:
    client = cached_client("sqs")
    with invocation_deadline(None, remaining_ms=DEADLINE_MARGIN_MS + 1_000):
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match="attempt 1 refused"):
            client.get_queue_url(QueueName="q")
    assert time.monotonic() - started < 0.2


def test_without_per_request_read_timeouts_an_attempt_needs_its_whole_timeouts(
    slow_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Lambda runtime's own botocore may predate per-request read timeouts (the request
    context's ``read_timeout``): then an attempt starts only while connect + read fit."""
    monkeypatch.setattr(clients, "PER_REQUEST_READ_TIMEOUT", False)
    client = cached_client("sqs")  # 2 s connect + 5 s read
    with invocation_deadline(None, remaining_ms=DEADLINE_MARGIN_MS + 6_000):
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match="attempt 1 refused"):
            client.get_queue_url(QueueName="q")
    assert time.monotonic() - started < 0.2


def _throttled(request: Any, **_: Any) -> AWSResponse:
    body = json.dumps({"__type": "com.amazonaws.sqs#ThrottlingException", "message": "slow down"})

    class Raw:
        def __init__(self) -> None:
            self.data = body.encode()

        def stream(self, **__: Any) -> Iterator[bytes]:
            yield self.data

        def read(self, *__: Any) -> bytes:
            data, self.data = self.data, b""
            return data

    return AWSResponse(
        request.url, 400, {"x-amzn-query-error": "ThrottlingException;Sender"}, Raw()
    )


def test_a_throttled_call_is_not_retried_past_the_deadline(slow_endpoint: str) -> None:
    """A throttle answered at once: botocore would back off up to 1 s, then 2 s (standard
    mode, throttling scale) and try again; with 3.5 s left and a 2 s connect timeout, the
    retry whose backoff could end past the deadline is refused instead of slept."""
    client = cached_client("sqs")
    sends: list[float] = []

    def answer(request: Any, **kwargs: Any) -> AWSResponse:
        sends.append(time.monotonic())
        return _throttled(request)

    client.meta.events.register("before-send.sqs.GetQueueUrl", answer)
    try:
        with invocation_deadline(None, remaining_ms=DEADLINE_MARGIN_MS + 3_500) as deadline:
            with pytest.raises(DeadlineExceeded, match="retry after attempt"):
                client.get_queue_url(QueueName="q")
            assert deadline is not None and time.monotonic() < deadline
    finally:
        client.meta.events.unregister("before-send.sqs.GetQueueUrl", answer)
    assert 1 <= len(sends) <= 2


def test_without_a_deadline_calls_keep_botocores_own_retries(slow_endpoint: str) -> None:
    client = cached_client("sqs")
    sends: list[int] = []

    def answer(request: Any, **kwargs: Any) -> AWSResponse:
        sends.append(1)
        return _throttled(request)

    client.meta.events.register("before-send.sqs.GetQueueUrl", answer)
    client.meta.events.register("needs-retry.sqs.GetQueueUrl", lambda **_: None)
    try:
        with pytest.raises(Exception, match="ThrottlingException"):
            client.get_queue_url(QueueName="q")
    finally:
        client.meta.events.unregister("before-send.sqs.GetQueueUrl", answer)
    assert len(sends) == 3  # botocore's standard mode, untouched


def test_the_dispatcher_stops_waiting_before_its_timeout(
    slow_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dispatcher's clients read for up to 60 s (a manifest chunk, a scan page): with 6 s
    left, its first call still ends before the deadline and the invocation fails for a retry
    (its run record keeps the checkpoints)."""
    for name, value in {
        denv.ITEM_SOURCE: denv.SOURCE_DYNAMODB,
        denv.BILLING_ACCOUNTS_TABLE: "billing_accounts",
        denv.RUNS_TABLE: "runs",
        denv.WORK_QUEUE_URL: "https://sqs.ap-northeast-1.amazonaws.com/1/work.fifo",
        denv.CONTROL_QUEUE_URL: "https://sqs.ap-northeast-1.amazonaws.com/1/control.fifo",
        denv.SCHEDULE_TIMEZONE: "Asia/Tokyo",
    }.items():
        monkeypatch.setenv(name, value)
    app.reset_clients()
    remaining_ms = 6_000
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        app.run({"month": "2026-06"}, FakeContext(remaining_ms=remaining_ms))
    assert time.monotonic() - started < (remaining_ms - DEADLINE_MARGIN_MS) / 1000 + 0.3


def test_the_slow_endpoint_really_does_not_answer(slow_endpoint: str) -> None:
    """The fixture itself: a raw request gets no answer within the runtime's read timeout."""
    host, port = slow_endpoint.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=1) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.settimeout(1.0)
        with pytest.raises(TimeoutError):
            conn.recv(1)
