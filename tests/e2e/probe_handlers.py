"""Lambda handlers used by the e2e tests to observe what the poller and invoker do."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from idempotent_messaging.local.faults import SimulatedCrash

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
