"""Concurrent invocations in one process, each in an execution environment of its own.

Lambda runs every concurrent invocation in an execution environment of its own: a process with
exactly its function's environment variables and its own module state. The embedded emulator
runs handlers in threads of ONE process (so that fault injection, outcome lines and metrics stay
observable in-process, and a cold start costs nothing), and gives each invocation what its own
process would give it, for every piece of per-process state the runtime and Powertools keep:

- ``os.environ`` (and ``os.environb``, ``os.getenv``, whatever module read them): a view per
  invocation holding exactly the function's variables (plus the process's non-AWS ones such as
  ``PATH``). The runtime reads its settings from ``os.environ`` at invocation time
  (``Settings.from_env``, the client cache's key), botocore reads the region, the endpoint and
  the credentials there, Powertools its service and namespace: all of them see the function's
  own values, with no change to the code that runs on Lambda.
- Powertools ``Metrics``: ONE metric set per process, shared by every ``Metrics`` instance
  (class-level dictionaries), plus the provider's namespace, service and timestamp. Each
  environment gets its own copy, so two concurrent invocations never flush each other's values
  or print them under the other function's namespace or ``service`` dimension.
- Powertools ``Logger``: the keys a logger's formatter carries (``inject_lambda_context``'s
  request id and function name, ``append_keys``): per environment, so a line names the
  invocation that wrote it.
- threads a handler starts (``ThreadPoolExecutor`` workers) run in the environment of the
  thread that started them, as they would share their process on Lambda.

Outside any environment (moto's server threads, the poller, a test) everything is the process's
own, unchanged. How: a context variable names the current environment; ``os.environ``'s storage
and the Powertools attributes above read it (``install`` patches them once, process-wide).

Why not a process per function, which isolates by construction: the fault injector
(``local.faults``), the outcome log and the metric tap act in THIS process (matchers are Python
callables over each call's parameters, counters are shared, a simulated death is an exception
in the invoking thread); a process per environment would need all of them behind IPC and a
cold start of ~1 s per environment on this machine kind. The state listed here is the whole of
what the runtime and Powertools keep per process (tests/e2e/test_isolation.py drives two
functions through each of them at once, synchronised by barriers).
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

# Process variables an environment does NOT inherit: Lambda sets its own AWS_* variables and the
# function declares its Powertools settings; a developer's profile or endpoint must not leak.
NOT_INHERITED_PREFIXES = ("AWS_", "POWERTOOLS_")


@dataclass(eq=False)
class Environment:
    """One execution environment's state (an invocation's, in the emulator)."""

    variables: dict[Any, Any]
    """``os.environ``'s storage (keys and values as the process encodes them)."""
    copies: dict[int, Any] = field(default_factory=dict)
    """id(a process-wide dict or list) -> this environment's copy of it."""
    attributes: dict[tuple[int, str], Any] = field(default_factory=dict)
    """(id(object), attribute) -> the value this environment assigned."""
    originals: list[Any] = field(default_factory=list)
    """The process objects copied (kept alive, so their ids stay theirs)."""


_CURRENT: ContextVar[Environment | None] = ContextVar("execution_environment", default=None)
_install_lock = threading.Lock()
_installed = False
_original_thread_start = threading.Thread.start


def current() -> Environment | None:
    """The execution environment of the calling thread (None: the process's own state)."""
    return _CURRENT.get()


class _EnvironStorage(MutableMapping[Any, Any]):
    """``os.environ._data``: the current environment's variables, else the process's."""

    def __init__(self, process: dict[Any, Any]) -> None:
        self.process = process

    def _data(self) -> dict[Any, Any]:
        environment = _CURRENT.get()
        return self.process if environment is None else environment.variables

    def __getitem__(self, key: Any) -> Any:
        return self._data()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data()[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._data()[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._data()))

    def __len__(self) -> int:
        return len(self._data())


class _PerEnvironment:
    """A data descriptor replacing an instance attribute of a Powertools class: inside an
    execution environment reads and writes go to the environment's own value (a dict or list
    is copied on first use, once per process object, so objects that share one dict keep
    sharing the copy); outside, to the object's own attribute."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            own = obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None
        environment = _CURRENT.get()
        if environment is None:
            return own
        assigned = environment.attributes.get((id(obj), self.name), _MISSING)
        if assigned is not _MISSING:
            return assigned
        if isinstance(own, dict | list):
            mine = environment.copies.get(id(own))
            if mine is None:
                mine = environment.copies[id(own)] = copy.deepcopy(own)
                environment.originals.append(own)
            return mine
        return own

    def __set__(self, obj: Any, value: Any) -> None:
        environment = _CURRENT.get()
        # The first assignment is the object's construction: process state, wherever it runs.
        if environment is None or self.name not in obj.__dict__:
            obj.__dict__[self.name] = value
        else:
            environment.attributes[(id(obj), self.name)] = value
            environment.originals.append(obj)


_MISSING = object()


def _powertools_state() -> list[tuple[type, tuple[str, ...]]]:
    """The Powertools classes and the instance attributes that hold per-process state."""
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
    from aws_lambda_powertools.metrics.metrics import Metrics
    from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
        AmazonCloudWatchEMFProvider,
    )

    return [
        (Metrics, ("metric_set", "metadata_set", "default_dimensions", "dimension_set")),
        (
            AmazonCloudWatchEMFProvider,
            (
                "metric_set",
                "dimension_set",
                "metadata_set",
                "default_dimensions",
                "dimension_sets",
                "namespace",
                "service",
                "timestamp",
                "function_name",
            ),
        ),
        (LambdaPowertoolsFormatter, ("log_format",)),
    ]


def _thread_start(self: threading.Thread) -> None:
    environment = _CURRENT.get()
    if environment is not None:
        run = self.run

        def run_in_environment() -> None:
            _CURRENT.set(environment)
            run()

        self.run = run_in_environment  # type: ignore[method-assign]
    _original_thread_start(self)


def install() -> None:
    """Make os.environ, Powertools' metric set and logger keys per environment (process-wide,
    idempotent; outside an environment nothing changes)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        storage = _EnvironStorage(os.environ._data)  # type: ignore[attr-defined]
        os.environ._data = storage  # type: ignore[attr-defined]
        if hasattr(os, "environb"):
            os.environb._data = storage  # type: ignore[attr-defined]
        for cls, names in _powertools_state():
            for name in names:
                setattr(cls, name, _PerEnvironment(name))
        threading.Thread.start = _thread_start  # type: ignore[method-assign]
        _installed = True


def _encoded(variables: Mapping[str, str]) -> dict[Any, Any]:
    encode_key = os.environ.encodekey
    encode_value = os.environ.encodevalue
    return {encode_key(k): encode_value(v) for k, v in variables.items()}


@contextmanager
def execution_environment(variables: Mapping[str, str]) -> Iterator[Environment]:
    """Run the block in an execution environment whose ``os.environ`` is exactly
    ``variables`` plus the process's variables that are not ``AWS_*`` or ``POWERTOOLS_*``
    (``PATH`` and friends), with its own Powertools metric set and logger keys."""
    install()
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(NOT_INHERITED_PREFIXES)}
    environment = Environment(variables=_encoded({**inherited, **variables}))
    token = _CURRENT.set(environment)
    try:
        yield environment
    finally:
        _CURRENT.reset(token)
