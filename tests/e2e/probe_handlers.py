"""Lambda handlers used by the e2e tests to observe what the poller and invoker do."""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from idempotent_messaging.local.faults import SimulatedCrash
from idempotent_messaging.runtime import observability
from idempotent_messaging.runtime.observability import Outcome

SEEN: list[dict[str, Any]] = []


def record(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Keep the event, the context and the environment it ran with; fail marked records."""
    SEEN.append(
        {
            "event": event,
            "remaining_ms": context.get_remaining_time_in_millis(),
            "function_name": context.function_name,
            "memory": context.memory_limit_in_mb,
            "arn": context.invoked_function_arn,
            "request_id": context.aws_request_id,
            "env": dict(os.environ),
        }
    )
    failures = [
        {"itemIdentifier": r["messageId"]}
        for r in event.get("Records", [])
        if json.loads(r["body"]).get("fail")
    ]
    return {"batchItemFailures": failures}


def bad_identifier(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"batchItemFailures": [{"itemIdentifier": "not-a-message-id"}]}


def crash(event: dict[str, Any], context: Any) -> dict[str, Any]:
    raise SimulatedCrash("process died")


def slow(event: dict[str, Any], context: Any) -> dict[str, Any]:
    time.sleep(1.2)
    return {"batchItemFailures": []}


# --- concurrency: invocations that meet at a barrier only when they run at once -------------

BARRIERS: dict[str, threading.Barrier] = {}
"""Set by a test: ``meet`` and ``metered`` wait at BARRIERS["meet"], so the invocations that
pass it ran at the same time (a serialised invoker breaks the barrier)."""


def meet(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """What the function's environment says before and after the others ran, and in a thread
    it starts."""
    before = {"setting": os.environ.get("PROBE_SETTING"), "getenv": os.getenv("PROBE_SETTING")}
    BARRIERS["meet"].wait()
    with ThreadPoolExecutor(1) as pool:
        in_thread = pool.submit(lambda: os.environ.get("PROBE_SETTING")).result()
    SEEN.append(
        {
            "function_name": context.function_name,
            "before": before,
            "after": os.environ.get("PROBE_SETTING"),
            "in_thread": in_thread,
            "lambda_name": os.environ.get("AWS_LAMBDA_FUNCTION_NAME"),
        }
    )
    failures = [
        {"itemIdentifier": r["messageId"]}
        for r in event.get("Records", [])
        if json.loads(r["body"]).get("fail")
    ]
    return {"batchItemFailures": failures}


@observability.logger.inject_lambda_context(clear_state=True)
@observability.metrics.log_metrics
def metered(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The runtime's own observability path: its settings refreshed from the environment, one
    outcome line and metric, then (once every invocation has added its own) one more line and
    the flush."""
    observability.refresh_from_env()
    observability.record_outcome(Outcome.PROCESSED, event_id=os.environ["PROBE_SETTING"])
    BARRIERS["meet"].wait()
    observability.logger.info("after the barrier", extra={"probe": os.environ["PROBE_SETTING"]})
    return {"batchItemFailures": []}


def fail_first(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Fail each record on its first receive; succeed on any later one."""
    SEEN.append({"event": event})
    return {
        "batchItemFailures": [
            {"itemIdentifier": r["messageId"]}
            for r in event.get("Records", [])
            if r["attributes"]["ApproximateReceiveCount"] == "1"
        ]
    }
