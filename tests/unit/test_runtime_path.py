"""One message's path through the runtime, measured: a fresh event on a standard queue, through
the Lambda entry point against moto, runs code in at most 8 of the runtime's modules.

The trace (``sys.setprofile``) collects every runtime module file in which a function starts
running during the invocation (the modules are imported before it starts, so their import-time
code is not counted; a module whose names are only read, ``env.py``, runs no code). The path is
drawn in docs/runtime.md; ``PATH`` below is that drawing's module list.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from moto import mock_aws

import idempotent_messaging.runtime as runtime_package
from handlers import orders
from idempotent_messaging.runtime import lambda_handler
from idempotent_messaging.runtime.clients import reset_clients
from tests.integration.test_runtime_world import (
    Aws,
    FakeContext,
    create_world,
    order_body,
    record,
    separate_claim_orders,
    sqs_event,
)

pytestmark = pytest.mark.unit

MAX_MODULES = 8
RUNTIME_DIR = Path(runtime_package.__file__).resolve().parent
PATH = {
    "entry.py",
    "consumer.py",
    "settings.py",
    "clients.py",
    "batch.py",
    "claims.py",
    "notify.py",
    "observability.py",
}
"""The modules of docs/runtime.md's drawing of a fresh message's path."""


def traced(call: Callable[[], Any]) -> tuple[Any, dict[str, set[str]]]:
    """``call()`` and, per runtime module (path relative to the package), the functions of it
    that started running meanwhile."""
    seen: dict[str, set[str]] = {}
    relative: dict[str, str | None] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        filename = frame.f_code.co_filename
        if filename not in relative:
            try:
                relative[filename] = Path(filename).resolve().relative_to(RUNTIME_DIR).as_posix()
            except ValueError:
                relative[filename] = None
        module = relative[filename]
        if module is not None:
            seen.setdefault(module, set()).add(frame.f_code.co_qualname)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(previous)
    return result, seen


def described(seen: dict[str, set[str]]) -> str:
    return "\n".join(f"  {module}: {', '.join(sorted(seen[module]))}" for module in sorted(seen))


@pytest.fixture
def lambda_env(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    with mock_aws():
        world = create_world(claims_in_items=True)
        for name, value in world.env().items():
            monkeypatch.setenv(name, value)
        reset_clients()
        yield world
        reset_clients()


def test_the_trace_sees_only_runtime_modules_and_names_their_functions() -> None:
    from idempotent_messaging.runtime.settings import is_fifo

    assert traced(lambda: is_fifo("orders.fifo")) == (True, {"settings.py": {"is_fifo"}})
    assert traced(lambda: os.path.join("a", "b"))[1] == {}


def test_a_fresh_message_through_the_entry_point_touches_at_most_eight_runtime_modules(
    lambda_env: Aws,
) -> None:
    """The reference orders consumer (its claim in the order row: a PartiQL INSERT)."""
    event = sqs_event(record(order_body("path-1")))
    response, seen = traced(lambda: orders.handler(event, FakeContext()))
    assert response == {"batchItemFailures": []}
    assert [row["order_id"]["S"] for row in lambda_env.order_rows()] == ["order-path-1"]
    assert len(lambda_env.notifications()) == 1
    assert len(seen) <= MAX_MODULES, f"{len(seen)} runtime modules:\n{described(seen)}"
    assert set(seen) == PATH, f"the path drawn in docs/runtime.md changed:\n{described(seen)}"


def test_a_fresh_message_with_a_separate_claim_takes_the_same_modules(lambda_env: Aws) -> None:
    """The other placement (a claim item in the state table, committed in a transaction)."""
    lambda_env.claims_in_items = False
    handler = lambda_handler(separate_claim_orders())
    event = sqs_event(record(order_body("path-2")))
    response, seen = traced(lambda: handler(event, FakeContext()))
    assert response == {"batchItemFailures": []}
    assert [claim["status"]["S"] for claim in lambda_env.claims()] == ["sent"]
    assert len(seen) <= MAX_MODULES, f"{len(seen)} runtime modules:\n{described(seen)}"
    assert set(seen) == PATH, described(seen)


def test_the_count_can_fail_a_batch_that_quarantines_takes_more_modules(lambda_env: Aws) -> None:
    """Poison next to the fresh message also runs the DLQ adapter and the failure classes:
    were the fresh path to need them, the assertion above would fail."""
    event = sqs_event(record(order_body("path-3")), record("not json"))
    response, seen = traced(lambda: orders.handler(event, FakeContext()))
    assert response == {"batchItemFailures": []}
    assert {"quarantine.py", "errors.py"} <= set(seen), described(seen)
    assert len(seen) > MAX_MODULES
