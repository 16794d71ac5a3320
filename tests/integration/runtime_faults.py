"""botocore-level fault injection and DynamoDB strictness for the runtime tests.

Every hook sits on a client's event system, so the runtime's own code path (serialisation,
botocore's retries, error parsing) runs exactly as against AWS:

* ``fail_sends``: refuse the first N HTTP sends of an operation with a 5xx, unapplied
  (botocore retries it like a real one; 3 failed sends exhaust standard mode's 3 attempts);
* ``answer_with``: answer an API call with a synthetic (status, parsed) response, e.g. a
  TransactionCanceledException with chosen cancellation reasons;
* ``rewrite_parsed``: edit a parsed response in place (per-entry results of batch calls);
* ``strict_dynamodb``: refuse requests that moto accepts and DynamoDB rejects (a gap of the
  emulator, recorded in docs/runtime.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from tests.integration.test_runtime_world import _error_response


def fail_sends(client: Any, operation: str, sends: int) -> list[int]:
    """The next ``sends`` HTTP sends of ``operation`` answer 5xx; returns a list that grows by
    one per injected failure."""
    fired: list[int] = []
    service = client.meta.service_model.service_id.hyphenize()

    def handler(request: Any, **_: Any) -> Any:
        if len(fired) >= sends:
            return None
        fired.append(1)
        # botocore runs every before-send handler: tell the world's moto stub to stay out,
        # so the request is refused, not applied (a throttle, not a timeout after commit).
        request.rejected_by_test = True
        return _error_response(request)

    client.meta.events.register_first(f"before-send.{service}.{operation}", handler)
    return fired


class _Http:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.headers: dict[str, str] = {}
        self.content = b""


def answer_with(
    client: Any,
    operation: str,
    make: Callable[[dict[str, Any]], tuple[int, dict[str, Any]] | None],
) -> None:
    """``make(request_dict)`` -> (HTTP status, parsed response) answers the call without
    sending it; None lets it through."""
    service = client.meta.service_model.service_id.hyphenize()

    def handler(params: dict[str, Any], **_: Any) -> Any:
        made = make(params)
        if made is None:
            return None
        status, parsed = made
        parsed.setdefault("ResponseMetadata", {})["HTTPStatusCode"] = status
        return _Http(status), parsed

    client.meta.events.register_first(f"before-call.{service}.{operation}", handler)


def rewrite_parsed(client: Any, operation: str, edit: Callable[[dict[str, Any]], None]) -> None:
    service = client.meta.service_model.service_id.hyphenize()

    def handler(parsed: dict[str, Any], **_: Any) -> None:
        edit(parsed)

    client.meta.events.register(f"after-call.{service}.{operation}", handler)


# --- DynamoDB rules moto does not enforce --------------------------------------------------
_NAME = re.compile(r"#[A-Za-z0-9_]+")
_VALUE = re.compile(r":[A-Za-z0-9_]+")
_EXPRESSIONS = (
    "ProjectionExpression",
    "ConditionExpression",
    "UpdateExpression",
    "FilterExpression",
    "KeyConditionExpression",
)


def dynamodb_problems(request: dict[str, Any]) -> list[str]:
    """What DynamoDB would refuse in one request body (or one transaction/batch element):
    unused ExpressionAttributeNames/Values, and a projection naming one path twice."""
    problems: list[str] = []
    text = " ".join(str(request.get(k, "")) for k in _EXPRESSIONS)
    names = request.get("ExpressionAttributeNames") or {}
    values = request.get("ExpressionAttributeValues") or {}
    used_names, used_values = set(_NAME.findall(text)), set(_VALUE.findall(text))
    problems += [f"unused ExpressionAttributeNames {n}" for n in sorted(set(names) - used_names)]
    problems += [f"unused ExpressionAttributeValues {v}" for v in sorted(set(values) - used_values)]
    projection = request.get("ProjectionExpression")
    if projection:
        paths = [names.get(p.strip(), p.strip()) for p in projection.split(",")]
        if len(paths) != len(set(paths)):
            problems.append(f"ProjectionExpression names a path twice: {paths}")
    return problems


def strict_dynamodb(client: Any) -> list[str]:
    """Refuse, with DynamoDB's ValidationException, what moto would accept; returns the log of
    every refusal (a test asserts it stays empty)."""
    refused: list[str] = []

    def check(params: dict[str, Any], model: Any, **_: Any) -> None:
        parts = [params]
        for entry in params.get("TransactItems", []):
            parts.extend(entry.values())
        for table_request in (params.get("RequestItems") or {}).values():
            if isinstance(table_request, dict):
                parts.append(table_request)
        problems = [p for part in parts for p in dynamodb_problems(part)]
        if problems:
            refused.extend(problems)
            raise ClientError(
                {
                    "Error": {"Code": "ValidationException", "Message": "; ".join(problems)},
                    "ResponseMetadata": {"HTTPStatusCode": 400},
                },
                model.name,
            )

    # before-parameter-build sees the API parameters (before-call sees the serialised body).
    client.meta.events.register_first("before-parameter-build.dynamodb.*", check)
    return refused


def drop_publish_entries(sns: Any, event_ids: set[str], times: int = 1) -> list[str]:
    """SNS refuses the PublishBatch entries of ``event_ids`` (InternalError, not a sender
    fault) on their first ``times`` attempts: the entry is really not published (removed from
    the request) and the response lists it as Failed, as PublishBatch reports per entry.
    Returns the event ids refused, in order."""
    refused: list[str] = []
    pending: dict[str, int] = dict.fromkeys(event_ids, times)
    removed: list[str] = []
    everything: list[str] = []

    def failed(ids: list[str]) -> list[dict[str, Any]]:
        return [
            {"Id": i, "Code": "InternalError", "Message": "injected", "SenderFault": False}
            for i in ids
        ]

    def strip(params: dict[str, Any], **_: Any) -> None:
        removed.clear()
        kept = []
        for entry in params.get("PublishBatchRequestEntries", []):
            event_id = json.loads(entry["Message"]).get("event_id")
            if pending.get(event_id, 0) > 0:
                pending[event_id] -= 1
                removed.append(entry["Id"])
                refused.append(event_id)
            else:
                kept.append(entry)
        if kept:
            params["PublishBatchRequestEntries"] = kept
        else:  # every entry refused: the call is answered without reaching SNS
            everything[:] = removed
            removed.clear()

    def short_circuit(**_: Any) -> Any:
        if not everything:
            return None
        parsed = {"Successful": [], "Failed": failed(everything)}
        everything.clear()
        return _Http(200), parsed

    def report(parsed: dict[str, Any], **_: Any) -> None:
        parsed.setdefault("Failed", []).extend(failed(removed))
        removed.clear()

    sns.meta.events.register("before-parameter-build.sns.PublishBatch", strip)
    sns.meta.events.register("before-call.sns.PublishBatch", short_circuit)
    sns.meta.events.register("after-call.sns.PublishBatch", report)
    return refused
