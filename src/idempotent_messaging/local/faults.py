"""Fault injection for the demo and the e2e tests, at the boto3 call boundary.

Raised above botocore's `_make_api_call`, so botocore's retry logic never sees them: a crash is
a process death (a BaseException no `except Exception` can swallow), and an injected throttle
is a ClientError the runtime must classify and retry itself.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.client import BaseClient
from botocore.exceptions import ClientError


class SimulatedCrash(BaseException):  # a process death, not an error
    """The Lambda process died here (timeout, OOM, host failure)."""


Matcher = Callable[[str, dict[str, Any]], bool]


@dataclass
class Fault:
    operations: frozenset[str]
    make_error: Callable[[str], BaseException]
    times: int | None = 1  # None: until removed
    matcher: Matcher | None = None
    fired: int = 0

    def applies(self, operation: str, params: dict[str, Any]) -> bool:
        if operation not in self.operations:
            return False
        if self.times is not None and self.fired >= self.times:
            return False
        return self.matcher is None or self.matcher(operation, params)


@dataclass
class FaultInjector:
    """Patches BaseClient._make_api_call while installed; faults are added and removed live."""

    faults: list[Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def crash_once(self, *operations: str, matcher: Matcher | None = None) -> Fault:
        fault = Fault(
            frozenset(operations),
            lambda op: SimulatedCrash(f"process died during {op} (injected)"),
            1,
            matcher,
        )
        self.faults.append(fault)
        return fault

    def throttle(self, *operations: str, matcher: Matcher | None = None) -> Fault:
        """Fail matching calls with ThrottlingException until the fault is removed."""
        fault = Fault(
            frozenset(operations),
            lambda op: ClientError(
                {
                    "Error": {"Code": "ThrottlingException", "Message": "Rate exceeded (injected)"},
                    "ResponseMetadata": {"HTTPStatusCode": 400},
                },
                op,
            ),
            None,
            matcher,
        )
        self.faults.append(fault)
        return fault

    def remove(self, fault: Fault) -> None:
        self.faults.remove(fault)

    def _check(self, operation: str, params: dict[str, Any]) -> None:
        with self._lock:
            for fault in self.faults:
                if fault.applies(operation, params):
                    fault.fired += 1
                    raise fault.make_error(operation)

    @contextmanager
    def installed(self) -> Iterator[FaultInjector]:
        original = BaseClient._make_api_call
        injector = self

        def patched(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
            injector._check(operation_name, api_params)
            return original(client, operation_name, api_params)

        BaseClient._make_api_call = patched
        try:
            yield self
        finally:
            BaseClient._make_api_call = original


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
