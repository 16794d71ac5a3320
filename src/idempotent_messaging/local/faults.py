"""Fault injection at botocore's HTTP stage: the emulator's public seam for failure testing.

    from idempotent_messaging.local.faults import FaultInjector

    faults = FaultInjector()
    with faults.installed():                       # a fault armed and never fired fails here
        faults.crash_once("PublishBatch")          # the process dies before the publish
        faults.crash_once("BatchExecuteStatement", after=True)  # applied; the answer never came
        faults.throttle("TransactWriteItems", times=2)   # botocore retries it, as a real throttle
        faults.fail_entries("PublishBatch", code="KMSThrottling")   # a 200 with a failed entry
        faults.fail_entries("BatchGetItem")        # UnprocessedKeys
        faults.fail_entries("TransactWriteItems", code="TransactionConflict")  # its reasons
        ...

Where: a fault acts where a real failure does, at the HTTP stage, on the attempt botocore makes
(``Endpoint._send`` for a client of the emulator's server; moto's ``BotocoreStubber`` under
``mock_aws``). An error is an error RESPONSE in the service's own protocol (``local.wire``), so
botocore parses it and its retry logic retries it exactly as it retries a real one (standard
mode: throttles and 5xx, 3 attempts with its own backoff); per-entry failures, unprocessed keys
and cancellation reasons are answers the service would give. A process death is
``SimulatedCrash``, a ``BaseException`` no ``except Exception`` can swallow: before the request
reaches the service (nothing applied) or after (applied, the answer lost).

Names: faults match operation names exactly, so an operation is named as botocore's service
models name it (``PublishBatch``), service-qualified (``sns:PublishBatch``, ``sns.PublishBatch``)
or as the boto3 method (``publish_batch``, ``sns.publish_batch``). A name no service the
emulator serves has is refused when the fault is armed (``UnknownOperation``, with the nearest
names); a valid name no client called (``Publish``, where the runtime calls ``PublishBatch``)
fails the run: ``installed()`` raises ``FaultNeverFired`` on exit, naming the fault, where it
was armed and the calls that were made.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import random
import re
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import botocore.endpoint
from botocore import xform_name
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.client import BaseClient

from idempotent_messaging.local import isolation, wire

EMULATED_SERVICES = ("dynamodb", "sqs", "sns", "scheduler", "lambda", "cloudwatch", "iam", "kms")
"""What the emulator serves (docs/local.md): SQS, Lambda, DynamoDB, SNS, EventBridge Scheduler,
CloudWatch, and the IAM and KMS resources they use. Operation names are checked against
botocore's models of these services."""


class SimulatedCrash(BaseException):  # a process death, not an error
    """The Lambda process died here (timeout, OOM, host failure)."""


class UnknownOperation(ValueError):
    """A fault named an operation no client of the emulated services can call."""


class FaultNeverFired(AssertionError):
    """A fault was armed and never fired: the run did not test what it says it tested."""


Matcher = Callable[[str, dict[str, Any]], bool]
EntryMatcher = Callable[[dict[str, Any]], bool]
Target = tuple[str, str]  # (service, Operation)


@functools.cache
def _operations() -> dict[str, dict[str, str]]:
    """service -> {Operation: Operation, method_name: Operation} from botocore's models."""
    found: dict[str, dict[str, str]] = {}
    for service in EMULATED_SERVICES:
        names: dict[str, str] = {}
        for operation in wire.service_model(service).operation_names:
            names[operation] = operation
            names[xform_name(operation)] = operation
        found[service] = names
    return found


_SERVICE_ALIASES = {"monitoring": "cloudwatch", "lambda_": "lambda"}


def resolve(name: str) -> frozenset[Target]:
    """The (service, Operation) pairs a name stands for; UnknownOperation if none."""
    text = name.strip()
    service, separator, operation = text.partition(":")
    if not separator:
        service, separator, operation = text.partition(".")
    catalogue = _operations()
    if separator:
        service = _SERVICE_ALIASES.get(service.lower(), service.lower())
        if service not in catalogue:
            raise UnknownOperation(
                f"fault on {name!r}: service {service!r} is not one the emulator serves "
                f"({', '.join(EMULATED_SERVICES)})"
            )
        if operation in catalogue[service]:
            return frozenset({(service, catalogue[service][operation])})
        raise UnknownOperation(_unknown(name, operation, [service]))
    found = frozenset(
        (service, names[text]) for service, names in catalogue.items() if text in names
    )
    if not found:
        raise UnknownOperation(_unknown(name, text, list(catalogue)))
    return found


def _unknown(name: str, operation: str, services: list[str]) -> str:
    catalogue = _operations()
    candidates = {f"{s}:{op}" for s in services for op in set(catalogue[s].values())}
    by_operation = {c.split(":", 1)[1]: c for c in candidates}
    close = [by_operation[m] for m in difflib.get_close_matches(operation, by_operation, 4, 0.6)]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return (
        f"fault on {name!r}: no client of {', '.join(services)} calls an operation "
        f"{operation!r} (botocore's service models: operation names such as PublishBatch, "
        f"or sns:PublishBatch, or the boto3 method publish_batch){hint}"
    )


@dataclass(frozen=True)
class Call:
    """One API call in flight: what the matchers see."""

    service: str
    operation: str
    params: dict[str, Any]
    function: str | None
    """The Lambda function making it (an invocation's execution environment), else None."""


@dataclass(eq=False)
class Fault:
    """One armed fault. ``fired`` counts the attempts it acted on."""

    kind: str
    """``crash_before``, ``crash_after``, ``error`` or ``entries``."""
    names: tuple[str, ...]
    targets: frozenset[Target]
    times: int | None = 1
    """Attempts it acts on (None: until removed)."""
    matcher: Matcher | None = None
    code: str = ""
    message: str = ""
    status: int | None = None
    fields: dict[str, Any] | None = None
    entry: EntryMatcher | None = None
    sender_fault: bool | None = None
    functions_only: bool = False
    """Only calls made inside a function's invocation (not the poller's, not the test's)."""
    required: bool = True
    """A run that armed it and never fired it fails (FaultNeverFired)."""
    label: str = ""
    armed_at: str = ""
    fired: int = 0

    @property
    def operations(self) -> frozenset[str]:
        return frozenset(operation for _, operation in self.targets)

    def describe(self) -> str:
        what = self.label or f"{self.kind}({', '.join(repr(n) for n in self.names)})"
        return f"{what}{f' armed at {self.armed_at}' if self.armed_at else ''}"

    def selects(self, call: Call) -> list[int] | None:
        """None when the fault does not act on this call; else the entries it fails (empty for
        a fault on the whole call)."""
        if (call.service, call.operation) not in self.targets:
            return None
        if self.times is not None and self.fired >= self.times:
            return None
        if self.functions_only and call.function is None:
            return None
        if self.matcher is not None and not self.matcher(call.operation, call.params):
            return None
        if self.kind != "entries":
            return []
        found = [
            i
            for i, entry in enumerate(wire.entries(call.operation, call.params))
            if self.entry is None or self.entry(entry)
        ]
        return found or None


_CALL: ContextVar[Call | None] = ContextVar("fault_call", default=None)
_active: FaultInjector | None = None
_install_lock = threading.Lock()


@dataclass(eq=False)
class FaultInjector:
    """Faults armed and removed live; acting only while ``installed()``."""

    faults: list[Fault] = field(default_factory=list)
    armed: list[Fault] = field(default_factory=list)
    """Every fault armed while this injector lived (removed ones too): the fired check."""
    calls: Counter[str] = field(default_factory=Counter)
    """``service.Operation`` -> calls made while installed (each call once, not per attempt)."""
    retry_sleep_scale: float = 1.0
    """botocore's retry backoff sleeps last this many times as long (an accelerated clock)."""
    on_fire: Callable[[Fault, Call], None] | None = None
    """Called (outside the lock) each time a fault acts."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- arming ------------------------------------------------------------------------------
    def _arm(self, kind: str, operations: tuple[str, ...], **options: Any) -> Fault:
        if not operations:
            raise UnknownOperation(f"{kind}: name at least one operation (e.g. 'PublishBatch')")
        targets = frozenset().union(*(resolve(name) for name in operations))
        if kind in ("error", "entries"):
            for service, operation in targets:
                if wire.protocol(service) not in wire.PROTOCOLS:
                    raise UnknownOperation(
                        f"{kind} on {service}:{operation}: its protocol "
                        f"{wire.protocol(service)!r} has no error answers here ({wire.PROTOCOLS})"
                    )
        if kind == "entries":
            batch = {(s, op) for s, ops in wire.BATCH_OPERATIONS.items() for op in ops}
            single = sorted(f"{s}:{op}" for s, op in targets - batch)
            if single:
                raise UnknownOperation(
                    f"fail_entries on {single}: not a call whose entries fail one by one; "
                    f"those are {sorted(f'{s}:{o}' for s, o in batch)}"
                )
        fault = Fault(kind, tuple(operations), targets, armed_at=_caller(), **options)
        with self._lock:
            self.faults.append(fault)
            self.armed.append(fault)
        return fault

    def crash_once(
        self, *operations: str, matcher: Matcher | None = None, after: bool = False, **options: Any
    ) -> Fault:
        """The process dies at the next matching call: before the request reaches the service
        (nothing applied), or ``after=True`` once the service applied it (its answer lost)."""
        return self.crash(*operations, matcher=matcher, after=after, times=1, **options)

    def crash(
        self,
        *operations: str,
        matcher: Matcher | None = None,
        after: bool = False,
        times: int | None = 1,
        **options: Any,
    ) -> Fault:
        kind = "crash_after" if after else "crash_before"
        return self._arm(kind, operations, matcher=matcher, times=times, **options)

    def throttle(
        self,
        *operations: str,
        matcher: Matcher | None = None,
        times: int | None = None,
        code: str | None = None,
        **options: Any,
    ) -> Fault:
        """Matching attempts get the service's throttling error (its model's throttle, e.g.
        DynamoDB ``ThrottlingException``, SNS ``Throttled``) until removed or ``times``
        attempts; botocore retries each like a real throttle."""
        return self._arm(
            "error", operations, matcher=matcher, times=times, code=code or "", **options
        )

    def error(
        self,
        *operations: str,
        code: str,
        matcher: Matcher | None = None,
        times: int | None = 1,
        status: int | None = None,
        message: str = "",
        fields: dict[str, Any] | None = None,
        **options: Any,
    ) -> Fault:
        """Matching attempts get an error answer with ``code`` (HTTP status from botocore's
        model of it, else 500 for a server error or 400); ``fields`` are extra members of a
        JSON error body (a modeled error's own fields)."""
        if not code:
            raise ValueError("error(): code is required (e.g. 'InternalServerError')")
        return self._arm(
            "error",
            operations,
            matcher=matcher,
            times=times,
            code=code,
            status=status,
            message=message,
            fields=fields,
            **options,
        )

    def fail_entries(
        self,
        *operations: str,
        code: str = "InternalError",
        entry: EntryMatcher | None = None,
        matcher: Matcher | None = None,
        times: int | None = 1,
        sender_fault: bool | None = None,
        message: str = "",
        **options: Any,
    ) -> Fault:
        """The matching entries of a batch call fail and the rest go through, as the service
        answers: PublishBatch / SendMessageBatch ``Failed`` entries with ``code`` (and its
        model's ``SenderFault`` unless given), BatchExecuteStatement per-statement errors,
        BatchGetItem ``UnprocessedKeys``, BatchWriteItem ``UnprocessedItems``, and
        TransactWriteItems cancelled with ``code`` as the reason of each matching item (the
        others ``None``; nothing applied). ``entry``: a predicate over one entry of the call's
        parameters (default: every entry)."""
        return self._arm(
            "entries",
            operations,
            code=code,
            entry=entry,
            matcher=matcher,
            times=times,
            sender_fault=sender_fault,
            message=message,
            **options,
        )

    def remove(self, fault: Fault) -> None:
        """Disarm (it stays counted by the fired check)."""
        with self._lock:
            if fault in self.faults:
                self.faults.remove(fault)

    def never_fired(self) -> list[Fault]:
        return [f for f in self.armed if f.required and f.fired == 0]

    # --- acting --------------------------------------------------------------------------------
    def _select(self, call: Call) -> tuple[Fault, list[int]] | None:
        with self._lock:
            for fault in self.faults:
                selected = fault.selects(call)
                if selected is not None:
                    fault.fired += 1
                    return fault, selected
        return None

    def _at_http_stage(
        self, request: AWSPreparedRequest, send: Callable[[AWSPreparedRequest], AWSResponse]
    ) -> AWSResponse:
        call = _CALL.get()
        if call is None:
            return send(request)
        picked = self._select(call)
        if picked is None:
            return send(request)
        fault, selected = picked
        if self.on_fire is not None:
            self.on_fire(fault, call)
        return _act(fault, selected, call, request, send)

    @contextmanager
    def installed(self, *, check_fired: bool = True) -> Iterator[FaultInjector]:
        """Act on every boto3 call of this process until exit. On a clean exit, a required
        fault that never fired raises FaultNeverFired."""
        global _active
        with _install_lock:
            if _active is not None:
                raise RuntimeError("another FaultInjector is installed in this process")
            _active = self
            _patch()
            scaled = _scale_retry_sleep(self.retry_sleep_scale)
        try:
            yield self
        finally:
            with _install_lock:
                _active = None
                _unpatch()
                if scaled:
                    botocore.endpoint.time = time
        if check_fired:
            self.check_fired()

    def check_fired(self) -> None:
        unfired = self.never_fired()
        if unfired:
            seen = ", ".join(f"{name} x{n}" for name, n in self.calls.most_common(12)) or "none"
            raise FaultNeverFired(
                f"{len(unfired)} armed fault(s) never fired, so the run did not test them: "
                + "; ".join(f.describe() for f in unfired)
                + f". Calls made while installed: {seen}"
            )


def _caller() -> str:
    """The first frame outside this module: where a fault was armed."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if frame.filename != __file__:
            return f"{os.path.relpath(frame.filename)}:{frame.lineno}"
    return ""


def _act(
    fault: Fault,
    selected: list[int],
    call: Call,
    request: AWSPreparedRequest,
    send: Callable[[AWSPreparedRequest], AWSResponse],
) -> AWSResponse:
    operation = wire.service_model(call.service).operation_model(call.operation)
    where = f"{call.service}.{call.operation}"
    if fault.kind == "crash_before":
        raise SimulatedCrash(f"process died before {where} reached the service (injected)")
    if fault.kind == "crash_after":
        send(request)
        raise SimulatedCrash(
            f"process died after {where} was applied, before its answer (injected)"
        )
    if fault.kind == "error":
        code = fault.code or wire.throttling_code(operation)
        return wire.error_response(
            request,
            operation,
            code,
            fault.message or f"{code} (injected)",
            status=fault.status,
            fields=fault.fields,
        )
    failure = wire.EntryFailure(
        fault.code,
        fault.message or f"{fault.code} (injected)",
        wire.sender_fault(operation, fault.code)
        if fault.sender_fault is None
        else fault.sender_fault,
    )
    return wire.answer_with_failed_entries(request, operation, call.params, selected, failure, send)


# --- the patches: the call's parameters where botocore starts, the fault where it sends ------

_original_make_api_call = BaseClient._make_api_call
_original_send = botocore.endpoint.Endpoint._send
_patched = False


def _make_api_call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
    injector = _active
    if injector is None:
        return _original_make_api_call(client, operation_name, api_params)
    service = client.meta.service_model.service_name
    function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME") if isolation.current() else None
    call = Call(service, operation_name, api_params, function)
    with injector._lock:
        injector.calls[f"{service}.{operation_name}"] += 1
    token = _CALL.set(call)
    try:
        return _original_make_api_call(client, operation_name, api_params)
    finally:
        _CALL.reset(token)


def _send(endpoint: Any, request: AWSPreparedRequest) -> AWSResponse:
    injector = _active
    if injector is None or getattr(request, "_fault_stage_done", False):
        return _original_send(endpoint, request)
    return injector._at_http_stage(request, lambda r: _original_send(endpoint, r))


def _stubber_call(stubber: Any, event_name: str, request: AWSPreparedRequest, **kw: Any) -> Any:
    """moto's in-process mock (``mock_aws``) answers at before-send: the HTTP stage there."""
    injector = _active
    if injector is None or not getattr(stubber, "enabled", False):
        return _original_stubber_call(stubber, event_name, request, **kw)
    request._fault_stage_done = True
    return injector._at_http_stage(
        request, lambda r: _original_stubber_call(stubber, event_name, r, **kw)
    )


try:
    from moto.core.botocore_stubber import BotocoreStubber

    _original_stubber_call = BotocoreStubber.__call__
except ImportError:  # the `local` extra without moto's in-process mock: server mode only
    BotocoreStubber = None  # type: ignore[assignment,misc]


def _patch() -> None:
    global _patched
    if _patched:
        return
    BaseClient._make_api_call = _make_api_call
    botocore.endpoint.Endpoint._send = _send
    if BotocoreStubber is not None:
        BotocoreStubber.__call__ = _stubber_call  # type: ignore[method-assign,assignment]
    _patched = True


def _unpatch() -> None:
    global _patched
    if not _patched:
        return
    BaseClient._make_api_call = _original_make_api_call
    botocore.endpoint.Endpoint._send = _original_send
    if BotocoreStubber is not None:
        BotocoreStubber.__call__ = _original_stubber_call  # type: ignore[method-assign]
    _patched = False


class _ScaledTime:
    """``time`` for botocore.endpoint, whose retry backoff sleeps are scaled."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds * self.scale)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def _scale_retry_sleep(scale: float) -> bool:
    if not 0 < scale <= 1:
        raise ValueError(f"retry_sleep_scale {scale!r} must be > 0 and <= 1")
    if scale == 1:
        return False
    botocore.endpoint.time = _ScaledTime(scale)
    return True


# --- matchers -----------------------------------------------------------------------------------

_INSERT_NAME = re.compile(r"'((?:[^']|'')*)'\s*:\s*\?")


def writes_item_with(attribute: str, value: str) -> Matcher:
    """Matcher: a TransactWriteItems / PutItem whose item, or a BatchExecuteStatement whose
    PartiQL INSERT, has attribute == value (string)."""

    def match(operation: str, params: dict[str, Any]) -> bool:
        items = [params.get("Item", {})]
        for entry in params.get("TransactItems", []):
            items.append(entry.get("Put", {}).get("Item", {}))
        for statement in params.get("Statements", []):
            text = str(statement.get("Statement", ""))
            if text.lstrip().upper().startswith("INSERT"):
                names = [n.replace("''", "'") for n in _INSERT_NAME.findall(text)]
                items.append(dict(zip(names, statement.get("Parameters", []), strict=False)))
        return any(item.get(attribute) == {"S": value} for item in items)

    return match


def mentions(text: str) -> Matcher:
    """Matcher: a call whose parameters contain ``text`` anywhere (an event id in a message
    body, a key, a statement parameter)."""

    def match(operation: str, params: dict[str, Any]) -> bool:
        return text in json.dumps(params, default=str)

    return match


def entry_mentions(text: str) -> EntryMatcher:
    """Entry matcher: an entry of a batch call that contains ``text`` anywhere."""
    return lambda entry: text in json.dumps(entry, default=str)


def sometimes(rate: float, rng: random.Random) -> Matcher:
    """Matcher: a share ``rate`` of matching attempts, drawn from ``rng`` (seed it to replay)."""
    return lambda operation, params: rng.random() < rate
