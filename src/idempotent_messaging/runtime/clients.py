"""boto3 clients built lazily at invocation time, cached by the environment that shapes them.

botocore's standard retry mode retries throttling, 5xx and timeouts (3 attempts in total, with
its own jittered exponential backoff); the runtime never wraps a second loop around that. The
only app-level retry is for TransactionConflict reasons inside a cancelled transaction, which
botocore cannot see (see ``transaction_backoff``).

Calls never outlive the invocation. botocore's timeouts are per attempt and its read timeout
per socket read, with retries and backoff on top: no overall deadline (3 attempts x (2 s
connect + 5 s read) is ~21 s). ``invocation_deadline(context)`` (the entry points open it)
sets a deadline of the Lambda's remaining time less ``DEADLINE_MARGIN_MS``; every cached
client checks it at botocore's ``before-send`` (each attempt: refused unless a full connect
timeout plus ``MIN_READ_S`` still fits, and the attempt's read timeout is cut to what remains;
a botocore without per-request read timeouts, such as an older one the Lambda runtime
provides, gets an attempt only while a full connect + read timeout fits) and ``needs-retry``
(a retry is refused when its longest backoff and a connect no longer fit).
A refusal raises ``DeadlineExceeded`` (a ``BotoCoreError``: transient, the records it concerns
are reported failed and SQS redelivers them).
"""

from __future__ import annotations

import contextvars
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.httpsession
import botocore.loaders
import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError
from botocore.retries import standard

MAX_ATTEMPTS = 3
BACKOFF_BASE_SECONDS = 0.05

BOTOCORE_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
    connect_timeout=2,
    read_timeout=5,
    # Every request is built by the runtime from parts it has already checked per record
    # (consumer.check_transact_item: types, numbers, nesting, sizes; a bad value poisons ITS
    # record, where botocore's ParamValidationError would fail the whole call), and AWS
    # validates each request again. Skipping botocore's client-side pass saves CPU per item
    # (docs/runtime.md); a test runs every branch's requests through that validator.
    parameter_validation=False,
)
"""What the consumer runtime's clients use (tests build their own clients alike)."""


def transaction_backoff(attempt: int, rng: random.Random | None = None) -> float:
    """50 ms x 2^(attempt-1), +-50 % jitter: the delay after the ``attempt``-th conflict."""
    r = rng or random
    return BACKOFF_BASE_SECONDS * (2 ** (attempt - 1)) * r.uniform(0.5, 1.5)


@dataclass(frozen=True)
class AwsClients:
    dynamodb: Any
    sns: Any
    sqs: Any


_LOADER = botocore.loaders.create_loader()


def model_loader() -> botocore.loaders.Loader:
    """The bundle's ONE botocore data loader: every cached client's session uses it, so a
    service model or ``_retry.json`` is read from disk once per process (errors.code_kind
    reads the error shapes the clients already loaded)."""
    return _LOADER


_sessions: dict[tuple[str | None, ...], boto3.session.Session] = {}
_cache: dict[tuple[object, ...], Any] = {}
_runtime_clients: dict[tuple[str | None, ...], AwsClients] = {}
_lock = threading.Lock()


def environment_key(*services: str) -> tuple[str | None, ...]:
    """The environment that shapes clients of ``services``: region, endpoints (global and
    per service), credentials. A cache keyed by it rebuilds clients when any of them changes
    (several functions share one process in the embedded emulator demo)."""
    e = os.environ
    return (
        e.get("AWS_REGION") or e.get("AWS_DEFAULT_REGION"),
        e.get("AWS_ENDPOINT_URL"),
        *(e.get(f"AWS_ENDPOINT_URL_{service.upper()}") for service in services),
        e.get("AWS_ACCESS_KEY_ID"),
    )


CONNECT_TIMEOUT_S = 2
READ_TIMEOUT_S = 5

DEADLINE_MARGIN_MS = 1_000
"""Every call ends at least this long before the function's timeout: the time left to log,
flush the metrics and return the partial batch response."""
MIN_READ_S = 0.25
"""An attempt starts only if, after a full connect timeout, this long is left to read."""
PER_REQUEST_READ_TIMEOUT = hasattr(botocore.httpsession.URLLib3Session, "_get_request_timeout")
"""botocore honours a ``read_timeout`` in the request context (boto/botocore#3770, 1.44 here);
without it an attempt starts only while its whole connect + read timeout fits."""

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "invocation_deadline", default=None
)
"""``time.monotonic()`` by which every call of this invocation must have ended (a context
variable: each invocation, and each thread it hands a copied context, sees its own)."""


class DeadlineExceeded(BotoCoreError):
    """An attempt or a retry refused: it could not end before the invocation's deadline."""

    fmt = "{operation}: {what} refused, {left:.3f} s left before the invocation deadline"


@contextmanager
def invocation_deadline(
    context: Any, *, remaining_ms: float | None = None, margin_ms: int = DEADLINE_MARGIN_MS
) -> Iterator[float | None]:
    """While open, every call of a cached client ends before ``remaining_ms`` (default: the
    Lambda context's ``get_remaining_time_in_millis()``) less ``margin_ms``. Without a context
    (a local driver) there is no deadline."""
    if remaining_ms is None:
        reading = getattr(context, "get_remaining_time_in_millis", None)
        try:
            remaining_ms = float(reading()) if callable(reading) else None
        except (TypeError, ValueError):
            remaining_ms = None
    if remaining_ms is None:
        yield None
        return
    deadline = time.monotonic() + max(remaining_ms - margin_ms, 0.0) / 1000
    token = _deadline.set(deadline)
    try:
        yield deadline
    finally:
        _deadline.reset(token)


def seconds_left() -> float | None:
    """Seconds until this invocation's deadline (None: no deadline)."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


_RETRY_EVENTS = standard.RetryEventAdapter()
_THROTTLING = standard.ThrottlingErrorDetector(_RETRY_EVENTS)


class _DeadlineGuard:
    """botocore handlers of one cached client that keep its calls within the deadline."""

    def __init__(self, service: str, max_attempts: int, connect: float, read: float) -> None:
        self._service = service
        self._retryable = standard.StandardRetryConditions(max_attempts=max_attempts)
        self._connect = connect
        self._read = read
        # botocore's standard mode: rand(0, 1) x min(scale x 2^(attempt - 1), 20 s), scale 1 s
        # for throttling, else 50 ms (25 ms for DynamoDB).
        self._scale = 0.025 if service.startswith("dynamodb") else 0.05

    def before_send(self, request: Any, event_name: str = "", **_: Any) -> None:
        left = seconds_left()
        if left is None:
            return
        needed = self._connect + (MIN_READ_S if PER_REQUEST_READ_TIMEOUT else self._read)
        if left < needed:
            attempt = (getattr(request, "context", None) or {}).get("retries", {}).get("attempt")
            raise DeadlineExceeded(
                operation=event_name.rsplit(".", 1)[-1], what=f"attempt {attempt}", left=left
            )
        if PER_REQUEST_READ_TIMEOUT:
            request.context["read_timeout"] = min(self._read, left - self._connect)

    def needs_retry(self, **kwargs: Any) -> None:
        left = seconds_left()
        if left is None:
            return
        context = _RETRY_EVENTS.create_retry_context(**kwargs)
        if not self._retryable.is_retryable(context):
            return  # no retry anyway: the caller gets botocore's own answer
        scale = 1.0 if _THROTTLING.is_throttling_error_from_context(context) else self._scale
        backoff = min(scale * 2 ** (context.attempt_number - 1), 20.0)
        if context.http_response is not None and context.http_response.headers.get(
            "x-amz-retry-after"
        ):
            backoff += 5.0  # botocore may wait up to 5 s more for a Retry-After
        needed = self._connect + (MIN_READ_S if PER_REQUEST_READ_TIMEOUT else self._read)
        if left < backoff + needed:
            raise DeadlineExceeded(
                operation=getattr(kwargs.get("operation"), "name", "call"),
                what=f"retry after attempt {context.attempt_number}",
                left=left,
            )


def _guard_deadline(client: Any, max_attempts: int, connect: float, read: float) -> None:
    service = client.meta.service_model.service_id.hyphenize()
    guard = _DeadlineGuard(service, max_attempts, connect, read)
    # First: before moto's stub or any other before-send handler answers the attempt, and
    # before botocore's retry handler sleeps.
    client.meta.events.register_first(f"before-send.{service}", guard.before_send)
    client.meta.events.register_first(f"needs-retry.{service}", guard.needs_retry)


def cached_client(
    service: str,
    *,
    max_attempts: int = MAX_ATTEMPTS,
    max_pool_connections: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    read_timeout: float = READ_TIMEOUT_S,
) -> Any:
    """THE boto3 client cache of the Lambda bundle (consumers and the dispatcher alike).

    One client per (service, retry budget, pool, timeouts, environment), reused across warm
    invocations (building one parses botocore's service model) and rebuilt when region,
    endpoint or credentials change. Retries are botocore's standard mode with
    ``max_attempts`` attempts in total; within an ``invocation_deadline`` no attempt, retry or
    read runs past the deadline.
    """
    env_key = environment_key(service)
    key = (service, max_attempts, max_pool_connections, connect_timeout, read_timeout, *env_key)
    with _lock:
        client = _cache.get(key)
        if client is None:
            session_key = (env_key[0], env_key[1], env_key[-1])
            session = _sessions.get(session_key)
            if session is None:
                # A session per environment (credentials and region are resolved per session);
                # the model loader is shared, so a new one costs milliseconds.
                core = botocore.session.Session()
                core.register_component("data_loader", _LOADER)
                session = boto3.session.Session(botocore_session=core)
                _sessions[session_key] = session
            options: dict[str, Any] = {
                "retries": {"mode": "standard", "total_max_attempts": max_attempts},
                "connect_timeout": connect_timeout,
                "read_timeout": read_timeout,
            }
            if max_pool_connections:
                options["max_pool_connections"] = max_pool_connections
            client = session.client(service, config=BOTOCORE_CONFIG.merge(Config(**options)))
            _guard_deadline(client, max_attempts, connect_timeout, read_timeout)
            _cache[key] = client
        return client


def clients_from_env() -> AwsClients:
    """The consumer runtime's clients for the current environment (the same object while the
    environment is unchanged)."""
    key = environment_key("dynamodb", "sns", "sqs")
    clients = _runtime_clients.get(key)
    if clients is None:
        clients = AwsClients(
            dynamodb=cached_client("dynamodb"),
            sns=cached_client("sns"),
            sqs=cached_client("sqs"),
        )
        with _lock:
            _runtime_clients[key] = clients
    return clients


def reset_clients() -> None:
    """Forget cached clients (tests that start a fresh emulator)."""
    with _lock:
        _cache.clear()
        _sessions.clear()
        _runtime_clients.clear()
