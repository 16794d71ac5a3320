"""AWS calls never outlive the invocation (issue 22, item 6).

AWS/botocore facts: a Lambda invocation is stopped at its timeout
(``context.get_remaining_time_in_millis()`` says how long is left); botocore's read timeout
applies per socket read and its connect timeout per connection, with retries (standard mode:
3 attempts, jittered backoff) on top, so one call has no overall deadline: with the runtime's
2 s connect / 5 s read, one call against an endpoint that stops answering takes ~15-21 s,
while the runtime's remaining-time guard only checks 5 s before starting it. Before: a call
started with 5 s left ran ~15 s, past the function's timeout (the invocation is killed, the
whole batch redelivered, its logs and metrics lost).

Time is a fake clock (`Clock`): the runtime's deadline reads it, botocore's retry backoff
sleeps on it, and the endpoint that stops answering (`never_answering`) is botocore's HTTP
session answering every attempt with a read timeout after advancing the clock by the
attempt's WHOLE connect timeout plus its read timeout (the per-request one botocore resolves,
else the client's): the worst an attempt can take. So "ends before the function timeout" is
asserted exactly, not against a wall clock a loaded machine stretches. One test drives a real
socket that never answers, to prove what the stand-in relies on: botocore applies the
per-request read timeout to the socket. Faults at the botocore level are error RESPONSES
returned from a before-send hook, which botocore retries exactly as it retries real ones.
"""

from __future__ import annotations

import json
import socketserver
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import botocore.endpoint
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError
from botocore.httpsession import URLLib3Session
from urllib3 import Timeout

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

ENDPOINT = "http://127.0.0.1:9"  # never connected to: `never_answering` stands in for it


class Clock:
    """Monotonic seconds that pass only when the code under test waits."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.sends: list[float] = []  # when each attempt reached the (fake) endpoint

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    """The runtime's deadline and botocore's retry backoff on one fake clock; every AWS
    endpoint is ENDPOINT (a test decides how it answers)."""
    fake = Clock()
    monkeypatch.setattr(clients, "time", SimpleNamespace(monotonic=fake.monotonic))
    monkeypatch.setattr(botocore.endpoint, "time", SimpleNamespace(sleep=fake.sleep))
    monkeypatch.setenv("AWS_ENDPOINT_URL", ENDPOINT)
    reset_clients()
    yield fake
    reset_clients()


def _attempt_timeouts(session: URLLib3Session, request: Any) -> tuple[float, float]:
    """(connect, read) seconds botocore gives this attempt: the request's own read timeout
    when the deadline set one (``_get_request_timeout``), else the client's."""
    timeout: Any = session._get_request_timeout(request) or session._timeout
    if isinstance(timeout, Timeout):
        connect, read = timeout.connect_timeout, timeout.read_timeout
        assert isinstance(connect, (int, float)) and isinstance(read, (int, float)), timeout
        return float(connect), float(read)
    return float(timeout), float(timeout)


@pytest.fixture
def never_answering(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Every attempt connects as slowly as allowed, then reads until its read timeout."""

    def send(session: URLLib3Session, request: Any) -> Any:
        clock.sends.append(clock.now)
        connect, read = _attempt_timeouts(session, request)
        clock.sleep(connect + read)
        raise ReadTimeoutError(endpoint_url=request.url)

    monkeypatch.setattr(URLLib3Session, "send", send)
    return clock


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
    never_answering: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5 s left, the guard passes: the INSERT call may not run past 5 s - margin, even when
    every attempt takes its longest; the records it serves are reported failed (SQS
    redelivers them), nothing is lost."""
    _consumer_env(monkeypatch)
    remaining_ms = 5_000
    records = [record(order_body(f"slow-{i}")) for i in range(3)]
    started = never_answering.now
    response = orders.handler(sqs_event(*records), FakeContext(remaining_ms=remaining_ms))
    assert never_answering.sends, "the call reached the endpoint"
    assert never_answering.now - started <= (remaining_ms - DEADLINE_MARGIN_MS) / 1000
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {
        r["messageId"] for r in records
    }


def test_a_call_with_less_time_left_than_one_attempt_is_refused_at_once(
    never_answering: Clock,
) -> None:
    client = cached_client("sqs")
    with (
        invocation_deadline(None, remaining_ms=DEADLINE_MARGIN_MS + 1_000),
        pytest.raises(DeadlineExceeded, match="attempt 1 refused"),
    ):
        client.get_queue_url(QueueName="q")
    assert never_answering.sends == []  # refused before anything was sent


def test_without_per_request_read_timeouts_an_attempt_needs_its_whole_timeouts(
    never_answering: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Lambda runtime's own botocore may predate per-request read timeouts (the request
    context's ``read_timeout``): then an attempt starts only while connect + read fit."""
    monkeypatch.setattr(clients, "PER_REQUEST_READ_TIMEOUT", False)
    client = cached_client("sqs")  # 2 s connect + 5 s read
    with (
        invocation_deadline(None, remaining_ms=DEADLINE_MARGIN_MS + 6_000),
        pytest.raises(DeadlineExceeded, match="attempt 1 refused"),
    ):
        client.get_queue_url(QueueName="q")
    assert never_answering.sends == []


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


def test_a_throttled_call_is_not_retried_past_the_deadline(clock: Clock) -> None:
    """A throttle answered at once: botocore would back off up to 1 s, then 2 s (standard
    mode, throttling scale) and try again; with 3.5 s left and a 2 s connect timeout, the
    retry whose backoff could end past the deadline is refused instead of slept."""
    client = cached_client("sqs")

    def answer(request: Any, **kwargs: Any) -> AWSResponse:
        clock.sends.append(clock.now)
        return _throttled(request)

    client.meta.events.register("before-send.sqs.GetQueueUrl", answer)
    try:
        with invocation_deadline(None, remaining_ms=DEADLINE_MARGIN_MS + 3_500) as deadline:
            with pytest.raises(DeadlineExceeded, match="retry after attempt"):
                client.get_queue_url(QueueName="q")
            assert deadline is not None and clock.now < deadline
    finally:
        client.meta.events.unregister("before-send.sqs.GetQueueUrl", answer)
    assert 1 <= len(clock.sends) <= 2


def test_without_a_deadline_calls_keep_botocores_own_retries(clock: Clock) -> None:
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
    assert clock.now > 1_000.0  # with its backoff between the attempts


def test_the_dispatcher_stops_waiting_before_its_timeout(
    never_answering: Clock, monkeypatch: pytest.MonkeyPatch
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
    started = never_answering.now
    with pytest.raises(DeadlineExceeded):
        app.run({"month": "2026-06"}, FakeContext(remaining_ms=remaining_ms))
    assert never_answering.sends, "the call reached the endpoint"
    assert never_answering.now - started <= (remaining_ms - DEADLINE_MARGIN_MS) / 1000
    app.reset_clients()


class _NeverAnswers(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.recv(65536)
        self.server.stopped.wait()  # type: ignore[attr-defined]


def test_botocore_applies_the_per_request_read_timeout_to_a_real_socket(
    aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `never_answering` stands for, on a real socket: a server that reads the request
    and never answers ends the attempt with a read timeout, and the one that ends it is the
    request's own (the deadline's), not the client's 60 s. Wall time is bounded only to tell
    the two apart: 0.5 s against 60 s, a margin no loaded machine closes."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _NeverAnswers)
    server.daemon_threads = True
    server.stopped = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    reset_clients()
    client = cached_client("sqs", max_attempts=1, connect_timeout=2, read_timeout=60)
    try:
        # 2.5 s before the deadline: the attempt's read timeout is cut to 2.5 - 2 = 0.5 s.
        with invocation_deadline(None, remaining_ms=DEADLINE_MARGIN_MS + 2_500):
            started = time.monotonic()
            with pytest.raises(ReadTimeoutError):
                client.get_queue_url(QueueName="q")
            elapsed = time.monotonic() - started
    finally:
        server.stopped.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
        reset_clients()
    assert clients.PER_REQUEST_READ_TIMEOUT
    assert 0.4 <= elapsed < 30, elapsed
