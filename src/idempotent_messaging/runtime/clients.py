"""boto3 clients built lazily at invocation time, cached by the environment that shapes them.

botocore's standard retry mode retries throttling, 5xx and timeouts (3 attempts in total, with
its own jittered exponential backoff); the runtime never wraps a second loop around that. The
only app-level retry is for TransactionConflict reasons inside a cancelled transaction, which
botocore cannot see (see ``transaction_backoff``).
"""

from __future__ import annotations

import os
import random
import threading
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.loaders
import botocore.session
from botocore.config import Config

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
    ``max_attempts`` attempts in total.
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
