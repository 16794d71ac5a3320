"""Values computed once per test session, even when pytest-xdist runs it in several workers.

A module- or session-scoped fixture is per WORKER under xdist: `make test` runs two, and
`--dist worksteal` hands tests of one module to both, so an expensive fixture (the policy
corpus: 190 program runs) was computed twice. `SessionCache` keeps each value as a JSON file in
the session's base temporary directory, which every worker of a session shares (the directory
pytest-xdist's documentation uses for this, "Making session-scoped fixtures execute only
once"), and computes each key under an exclusive `flock` so exactly one worker computes it
while the other waits and reads it. Values are computed per key, so the workers split the work
and a run of a single test computes only what that test needs.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


def session_directory(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """`name` under the base temporary directory this session's workers share (the worker's
    own base directory's parent under xdist; the base directory itself without it)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    directory = base / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory


_BUSY = object()


class SessionCache:
    """JSON values by key, each computed by exactly one worker of the session."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._memory: dict[str, Any] = {}

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        """The value of `key`: read if some worker computed it, else computed here and stored
        (`compute()` returns a JSON value)."""
        return self._get(key, compute, wait=True)

    def _get(self, key: str, compute: Callable[[], Any], *, wait: bool) -> Any:
        """`get`; without `wait`, `_BUSY` for a key another worker is computing right now."""
        if key in self._memory:
            return self._memory[key]
        path = self._path(key)
        with open(path.with_suffix(".lock"), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                return _BUSY
            try:
                if path.exists():
                    value = json.loads(path.read_text())
                else:
                    value = compute()
                    partial = path.with_suffix(".partial")
                    partial.write_text(json.dumps(value))
                    partial.replace(path)  # atomic: a reader never sees half a value
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        self._memory[key] = value
        return value

    def get_all(self, keys: Iterable[str], compute: Callable[[str], Any]) -> dict[str, Any]:
        """Every key's value; keys another worker is computing are taken last, so this worker
        computes the others meanwhile instead of waiting on each in turn."""
        keys = list(keys)
        out: dict[str, Any] = {}
        for key in keys:
            value = self._get(key, functools.partial(compute, key), wait=False)
            if value is not _BUSY:
                out[key] = value
        for key in keys:
            if key not in out:
                out[key] = self.get(key, functools.partial(compute, key))
        return {key: out[key] for key in keys}
