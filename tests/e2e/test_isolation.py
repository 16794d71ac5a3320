"""Concurrent invocations in one process each get an execution environment of their own.

Lambda gives every concurrent invocation its own execution environment: its function's
environment variables, its own Powertools metric set and logger keys ("Lambda execution
environment", Lambda developer guide; Powertools keeps ONE metric set per process). The
emulator runs invocations in threads (local.isolation); these tests run two functions AT ONCE
(each waits at a barrier until the other is running, so a serialised invoker breaks the
barrier) and check that neither sees the other's settings, metrics or log keys."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from idempotent_messaging.local.invoke import InvocationResult, invoke
from idempotent_messaging.local.registry import FunctionConfig
from idempotent_messaging.local.signals import MetricTap
from idempotent_messaging.runtime import observability
from tests.e2e import probe_handlers

pytestmark = pytest.mark.e2e

REGION = "ap-northeast-1"
NOWHERE = "http://127.0.0.1:9"  # these handlers call no AWS service
BARRIER_TIMEOUT_S = 20  # generous: only a serialised invoker (a bug) ever waits it out


def function(name: str, handler: str, **environment: str) -> FunctionConfig:
    return FunctionConfig(
        name=name,
        arn=f"arn:aws:lambda:{REGION}:123456789012:function:{name}",
        handler=f"tests.e2e.probe_handlers.{handler}",
        runtime="python3.12",
        timeout_s=60,
        memory_mb=256,
        environment={"PROBE_SETTING": name, **environment},
    )


def at_once(functions: list[FunctionConfig]) -> list[InvocationResult]:
    """Invoke every function in its own thread at the same time; their results in order."""
    results: list[InvocationResult | None] = [None] * len(functions)

    def one(index: int) -> None:
        results[index] = invoke(
            functions[index], {"Records": []}, region=REGION, endpoint_url=NOWHERE
        )

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(functions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [r for r in results if r is not None]


@pytest.fixture
def barrier() -> Iterator[threading.Barrier]:
    probe_handlers.SEEN.clear()
    probe_handlers.BARRIERS["meet"] = threading.Barrier(2, timeout=BARRIER_TIMEOUT_S)
    try:
        yield probe_handlers.BARRIERS["meet"]
    finally:
        probe_handlers.BARRIERS.pop("meet", None)
        probe_handlers.SEEN.clear()


def test_each_concurrent_invocation_sees_only_its_functions_environment(
    barrier: threading.Barrier,
) -> None:
    results = at_once([function("alpha", "meet"), function("beta", "meet")])
    assert all(r.ok for r in results), [r.error for r in results]
    seen = {s["function_name"]: s for s in probe_handlers.SEEN}
    for name in ("alpha", "beta"):
        # Before and after the other function ran (both were at the barrier), and in a thread
        # the handler started: its own setting, as in its own process.
        assert seen[name]["before"] == {"setting": name, "getenv": name}
        assert seen[name]["after"] == name
        assert seen[name]["in_thread"] == name
        assert seen[name]["lambda_name"] == name
    # The process's own environment never saw either.
    assert "PROBE_SETTING" not in os.environ
    assert os.environ.get("AWS_LAMBDA_FUNCTION_NAME") is None


class _FormattedLines(logging.Handler):
    """The runtime logger's lines as Powertools formats them, in the emitting thread."""

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.lines: list[dict[str, Any]] = []

    def filter(self, record: logging.LogRecord) -> bool:
        return True

    def emit(self, record: logging.LogRecord) -> None:
        formatter = observability.logger.registered_formatter
        self.lines.append(json.loads(formatter.format(record)))


def test_concurrent_invocations_never_mix_powertools_metrics_or_log_keys(
    barrier: threading.Barrier,
) -> None:
    """Both invocations add their metric before either flushes (the barrier): each EMF
    document must carry only its own count, under its own namespace and service; each log line
    after the barrier the Lambda context keys of its own invocation."""
    tap = MetricTap().install()
    lines = _FormattedLines()
    logging.getLogger().addHandler(lines)
    try:
        results = at_once(
            [
                function(
                    "alpha",
                    "metered",
                    POWERTOOLS_SERVICE_NAME="alpha-service",
                    POWERTOOLS_METRICS_NAMESPACE="Alpha",
                ),
                function(
                    "beta",
                    "metered",
                    POWERTOOLS_SERVICE_NAME="beta-service",
                    POWERTOOLS_METRICS_NAMESPACE="Beta",
                ),
            ]
        )
    finally:
        logging.getLogger().removeHandler(lines)
        tap.uninstall()
    assert all(r.ok for r in results), [r.error for r in results]
    processed = [d for d in tap.datapoints if d.name == "processed"]
    assert sorted((d.function, d.namespace, d.dimensions, d.values) for d in processed) == [
        ("alpha", "Alpha", (("service", "alpha-service"),), (1.0,)),
        ("beta", "Beta", (("service", "beta-service"),), (1.0,)),
    ]
    after = [line for line in lines.lines if line.get("message") == "after the barrier"]
    assert sorted((line["probe"], line["function_name"], line["service"]) for line in after) == [
        ("alpha", "alpha", "alpha-service"),
        ("beta", "beta", "beta-service"),
    ]
    # Outside the invocations, the process's metric set is untouched and empty.
    assert not observability.metrics.metric_set
    assert sys.stdout is not tap
