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
)


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
_cache: dict[tuple[str | None, ...], AwsClients] = {}
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


def _env_key() -> tuple[str | None, ...]:
    return environment_key("dynamodb", "sns", "sqs")


def clients_from_env() -> AwsClients:
    """Clients for the current environment; rebuilt when region/endpoint/credentials change."""
    key = _env_key()
    with _lock:
        clients = _cache.get(key)
        if clients is None:
            # A session per key (credentials and region are resolved per session); the model
            # loader is shared, so a new key costs milliseconds, not a re-read of the models.
            core = botocore.session.Session()
            core.register_component("data_loader", _LOADER)
            session = boto3.session.Session(botocore_session=core)
            clients = AwsClients(
                dynamodb=session.client("dynamodb", config=BOTOCORE_CONFIG),
                sns=session.client("sns", config=BOTOCORE_CONFIG),
                sqs=session.client("sqs", config=BOTOCORE_CONFIG),
            )
            _cache[key] = clients
        return clients


def reset_clients() -> None:
    """Forget cached clients (tests that start a fresh emulator)."""
    with _lock:
        _cache.clear()
