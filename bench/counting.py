"""Count every AWS call, and inject throttles that botocore retries like real ones.

Counting uses botocore's own event hooks on EVERY client: once `install()` has run,
`botocore.session.Session.create_client` is wrapped so that each client created in this process
(ours, the baselines', Powertools' persistence client, a resource's client) gets these hooks:

- ``before-parameter-build``  keeps the API parameters for ``after-call``,
- ``before-call``  one per API operation the caller asked for (what an implementation "costs"),
- ``before-send``  one per HTTP attempt, so botocore's own retries show up as extra attempts,
- ``after-call``   the parsed result, used to learn which notifications SNS really accepted,
  and to describe the call in billing units (`bench.usage.describe`: items, transactional,
  DynamoDB write/read units, SNS/SQS billed requests) from the request as it went on the wire.

The hooks report into whichever `Recorder` is active, so a cached client created in an earlier
repetition is still counted by the current one. As a cross-check that no client escaped the
hooks, the HTTP transport (`URLLib3Session.send`) is counted too: every attempt that reaches
the wire must have passed a ``before-send`` hook.

Throttling is injected at ``before-send``: the hook returns an HTTP 400 throttling response
instead of letting the request reach the emulator, so botocore's retry handler sees exactly
what a real throttle looks like and retries it with its configured mode, attempts and backoff.
"""

from __future__ import annotations

import json
import random
import re
import threading
import weakref
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import botocore.httpsession
import botocore.session
from botocore.awsrequest import AWSResponse

from bench.usage import INSERT_FIELD, CallUsage, describe

_LOCK = threading.Lock()
_ACTIVE: Recorder | None = None
_HOOKED: weakref.WeakSet[Any] = weakref.WeakSet()
_EXCLUDED: weakref.WeakSet[Any] = weakref.WeakSet()
_ORIGINAL_CREATE_CLIENT = botocore.session.Session.create_client
_ORIGINAL_SEND = botocore.httpsession.URLLib3Session.send
_PATCHED = False

# The error codes botocore's retry handlers classify as throttling, per wire protocol.
_THROTTLE_JSON = b'{"__type":"ThrottlingException","message":"Rate exceeded (injected by bench)"}'
_THROTTLE_QUERY = (
    b"<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code>"
    b"<Message>Rate exceeded (injected by bench)</Message></Error>"
    b"<RequestId>bench-injected</RequestId></ErrorResponse>"
)


class _RawBody:
    """The minimal urllib3-like body botocore reads a response from."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


def throttle_response(url: str, protocol: str) -> AWSResponse:
    """An HTTP 400 throttling error in the wire format of `protocol` (json or query)."""
    if protocol == "query":
        body, headers = _THROTTLE_QUERY, {"Content-Type": "text/xml"}
    elif protocol in ("json", "rest-json"):
        body = _THROTTLE_JSON
        headers = {
            "Content-Type": "application/x-amz-json-1.0",
            "x-amzn-ErrorType": "ThrottlingException",
        }
    else:
        raise ValueError(f"protocol={protocol!r}: only json and query services can be throttled")
    headers["Content-Length"] = str(len(body))
    return AWSResponse(url, 400, headers, _RawBody(body))


THROTTLE_GAIN = 0.5


@dataclass
class Throttler:
    """Answers `rate` of all HTTP attempts with a throttling error, at seeded random positions.

    Each attempt is throttled with a probability that starts at `rate` and is nudged by how far
    the run so far is behind or ahead of `rate`, so the share stays close to `rate` from the
    first attempts on: an implementation that makes 6 calls meets the same 30 % as one that
    makes 6,000 (a plain coin toss would let a short run go unthrottled, or throttle half of
    it, by luck). Positions stay random, so several attempts in a row can fail and botocore's
    retries can run out, as with real throttling.
    """

    rate: float
    seed: int = 0
    injected: int = 0
    attempts: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 <= self.rate < 1:
            raise ValueError(f"throttle rate must be in [0, 1), got {self.rate}")
        self._rng = random.Random(self.seed)

    def decide(self) -> bool:
        behind = self.rate * self.attempts - self.injected
        probability = min(1.0, max(0.0, self.rate + THROTTLE_GAIN * behind))
        self.attempts += 1
        throttled = self.rate > 0 and self._rng.random() < probability
        if throttled:
            self.injected += 1
        return throttled


@dataclass
class Recorder:
    """What the hooks saw while this recorder was active."""

    throttler: Throttler | None = None
    # Attribute names removed from every DynamoDB write before it is sent (`strip_attributes`):
    # the counterfactual run that shows what an attribute costs on the wire.
    strip: frozenset[str] = frozenset()
    calls: Counter[str] = field(default_factory=Counter)  # "dynamodb.TransactWriteItems" -> n
    attempts: Counter[str] = field(default_factory=Counter)  # HTTP attempts incl. retries
    wire_requests: int = 0  # attempts that reached the HTTP transport
    notifications: list[str] = field(default_factory=list)  # messages SNS accepted
    # One entry per call: (service, operation, request, parsed response, error code). Described
    # in billing units only when asked (`usage`), so that work does not run in the caller's
    # thread and is not counted as the function's CPU time.
    raw_calls: list[tuple[str, str, Any, Any, str | None]] = field(default_factory=list)

    @property
    def usage(self) -> list[CallUsage]:
        """Every call in billing units (bench.usage.describe)."""
        described = []
        for service, operation, request, parsed, error_code in self.raw_calls:
            if isinstance(request, bytes | str):
                request = json.loads(request)
            if isinstance(parsed, bytes | str):
                parsed = json.loads(parsed) if parsed else {}
            described.append(describe(service, operation, request, parsed, error_code))
        return described

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def total_attempts(self) -> int:
        return sum(self.attempts.values())

    @property
    def injected(self) -> int:
        return self.throttler.injected if self.throttler else 0

    def check_complete(self) -> None:
        """Raise when some HTTP request reached the wire without passing our hooks."""
        expected = self.total_attempts - self.injected
        if self.wire_requests != expected:
            raise RuntimeError(
                f"call counting missed a client: {self.wire_requests} HTTP requests reached the "
                f"transport but the hooks saw {self.total_attempts} attempts "
                f"({self.injected} answered by the throttle injector)"
            )


def _key(model: Any) -> str:
    return f"{model.service_model.service_id.hyphenize()}.{model.name}"


def _on_before_parameter_build(params: Any, context: Any, model: Any = None, **_: Any) -> None:
    recorder = _ACTIVE
    if recorder is not None:
        if recorder.strip and model is not None and isinstance(params, dict):
            strip_attributes(model.name, params, recorder.strip)
        context["bench_params"] = params  # the API params; after-call only gets the context


_INSERT = re.compile(r"^(\s*INSERT\s+INTO\s+\S+\s+VALUE\s*)\{(.*)\}\s*$", re.I | re.S)


def _strip_insert(entry: dict[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """An ``INSERT INTO "t" VALUE {'a': ?, ...}`` without the attributes in `names` (a copy;
    any other statement unchanged)."""
    match = _INSERT.match(str(entry.get("Statement", "")))
    parameters = list(entry.get("Parameters", []))
    fields = INSERT_FIELD.findall(match.group(2)) if match else []
    if not match or len(fields) != len(parameters):
        return entry
    kept = [
        (f, p) for f, p in zip(fields, parameters, strict=True) if f.replace("''", "'") not in names
    ]
    text = ", ".join(f"'{f}': ?" for f, _ in kept)
    return {**entry, "Statement": f"{match.group(1)}{{{text}}}", "Parameters": [p for _, p in kept]}


def strip_attributes(operation: str, params: dict[str, Any], names: frozenset[str]) -> None:
    """Remove attributes `names` from the items a DynamoDB write creates (Put items, INSERT
    statements), replacing the caller's nested objects with copies (never edited in place)."""
    if operation == "PutItem" and "Item" in params:
        params["Item"] = {k: v for k, v in params["Item"].items() if k not in names}
    elif operation == "TransactWriteItems":
        params["TransactItems"] = [
            {
                "Put": {
                    **a["Put"],
                    "Item": {k: v for k, v in a["Put"]["Item"].items() if k not in names},
                }
            }
            if "Put" in a
            else a
            for a in params.get("TransactItems", [])
        ]
    elif operation == "BatchExecuteStatement":
        params["Statements"] = [_strip_insert(e, names) for e in params.get("Statements", [])]
    elif operation == "ExecuteStatement":
        params.update(_strip_insert(params, names))


def _on_before_call(model: Any, params: Any = None, context: Any = None, **_: Any) -> None:
    recorder = _ACTIVE
    if recorder is not None:
        with _LOCK:
            recorder.calls[_key(model)] += 1
        if context is not None and isinstance(params, dict):
            # JSON-protocol services (DynamoDB, SQS): the serialized body is the request in wire
            # format, whatever layer (client, resource, Powertools) built it.
            body = params.get("body")
            if model.service_model.protocol == "json" and body:
                context["bench_wire_request"] = body


def _on_before_send(request: Any, event_name: str = "", **_: Any) -> AWSResponse | None:
    recorder = _ACTIVE
    if recorder is None:
        return None
    key = ".".join(event_name.split(".")[1:3])  # before-send.<service-id>.<Operation>
    with _LOCK:
        recorder.attempts[key] += 1
        throttled = recorder.throttler is not None and recorder.throttler.decide()
    if throttled:
        protocol = _PROTOCOLS.get(key.split(".", 1)[0], "json")
        return throttle_response(request.url, protocol)
    return None


def _on_after_call(
    model: Any, parsed: Any, context: Any, http_response: Any = None, **_: Any
) -> None:
    recorder = _ACTIVE
    if recorder is None:
        return
    service = model.service_model.service_id.hyphenize()
    params = context.get("bench_params") or {}
    failed = http_response is not None and http_response.status_code >= 300
    error_code = (parsed.get("Error") or {}).get("Code") or "Unknown" if failed else None
    request = context.get("bench_wire_request", params)
    response: Any = None
    if not failed:
        # The raw JSON body: a boto3 resource deserializes `parsed` in place after this hook.
        json_body = model.service_model.protocol == "json" and http_response is not None
        response = http_response.content if json_body else parsed
    sent: list[str] = []
    if service == "sns" and model.name == "Publish" and "MessageId" in parsed:
        sent.append(str(params.get("Message", "")))
    elif service == "sns" and model.name == "PublishBatch":
        ok = {entry["Id"] for entry in parsed.get("Successful", [])}
        sent.extend(
            str(entry.get("Message", ""))
            for entry in params.get("PublishBatchRequestEntries", [])
            if entry.get("Id") in ok
        )
    with _LOCK:
        recorder.raw_calls.append((service, model.name, request, response, error_code))
        recorder.notifications.extend(sent)


_PROTOCOLS: dict[str, str] = {}


def hook_client(client: Any) -> Any:
    """Register the counting hooks on one client (idempotent). Returns the client."""
    if client in _HOOKED or client in _EXCLUDED:
        return client
    events = client.meta.events
    _PROTOCOLS[client.meta.service_model.service_id.hyphenize()] = (
        client.meta.service_model.protocol
    )
    events.register(
        "before-parameter-build", _on_before_parameter_build, unique_id="bench-count-params"
    )
    events.register("before-call", _on_before_call, unique_id="bench-count-call")
    # First, so an injected throttle is the response botocore sees.
    events.register_first("before-send", _on_before_send, unique_id="bench-count-send")
    events.register("after-call", _on_after_call, unique_id="bench-count-after")
    _HOOKED.add(client)
    return client


def exclude(client: Any) -> Any:
    """Mark a client as the harness's own (setup, verification): never counted or throttled.

    Its HTTP requests are still seen by the transport cross-check, so only use it outside a
    recording window.
    """
    events = client.meta.events
    events.unregister("before-parameter-build", unique_id="bench-count-params")
    events.unregister("before-call", unique_id="bench-count-call")
    events.unregister("before-send", unique_id="bench-count-send")
    events.unregister("after-call", unique_id="bench-count-after")
    _HOOKED.discard(client)
    _EXCLUDED.add(client)
    return client


def _create_client(self: Any, *args: Any, **kwargs: Any) -> Any:
    return hook_client(_ORIGINAL_CREATE_CLIENT(self, *args, **kwargs))


def _send(self: Any, request: Any) -> Any:
    recorder = _ACTIVE
    if recorder is not None:
        with _LOCK:
            recorder.wire_requests += 1
    return _ORIGINAL_SEND(self, request)


def install() -> None:
    """Hook every client created from now on (idempotent, process-wide)."""
    global _PATCHED
    if not _PATCHED:
        botocore.session.Session.create_client = _create_client
        botocore.httpsession.URLLib3Session.send = _send
        _PATCHED = True


def uninstall() -> None:
    global _PATCHED
    botocore.session.Session.create_client = _ORIGINAL_CREATE_CLIENT
    botocore.httpsession.URLLib3Session.send = _ORIGINAL_SEND
    _PATCHED = False


@contextmanager
def recording(
    throttle_rate: float = 0.0, seed: int = 0, strip: frozenset[str] = frozenset()
) -> Iterator[Recorder]:
    """Count (and optionally throttle) every hooked client's calls inside the block; `strip`:
    attribute names removed from every DynamoDB write first (`strip_attributes`)."""
    global _ACTIVE
    install()
    recorder = Recorder(
        throttler=Throttler(throttle_rate, seed) if throttle_rate else None, strip=strip
    )
    if _ACTIVE is not None:
        raise RuntimeError("a recording is already active; recordings do not nest")
    _ACTIVE = recorder
    try:
        yield recorder
    finally:
        _ACTIVE = None
