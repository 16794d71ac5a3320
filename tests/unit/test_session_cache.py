"""The test suite's cross-worker cache (tests/session_cache.py): one computation per key per
session, whichever xdist worker asks first; the others read it.

Two `SessionCache` objects on one directory stand for two workers (each opens its own lock
file, so their `flock`s exclude each other exactly as two processes' do); events, never
sleeps, order the threads.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.session_cache import SessionCache, session_directory

HANG_GUARD_S = 30  # only a deadlock reaches it


def test_a_key_is_computed_once_and_the_other_worker_reads_that_value(tmp_path: Path) -> None:
    first, second = SessionCache(tmp_path), SessionCache(tmp_path)
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []
    got: dict[str, Any] = {}

    def compute_first() -> dict[str, str]:
        calls.append("first")
        started.set()
        assert release.wait(HANG_GUARD_S)
        return {"by": "first"}

    def compute_second() -> dict[str, str]:
        calls.append("second")
        return {"by": "second"}

    a = threading.Thread(target=lambda: got.update(a=first.get("k", compute_first)))
    a.start()
    assert started.wait(HANG_GUARD_S)  # the first worker holds the key while computing it
    b = threading.Thread(target=lambda: got.update(b=second.get("k", compute_second)))
    b.start()
    release.set()
    a.join(HANG_GUARD_S)
    b.join(HANG_GUARD_S)
    assert calls == ["first"]
    assert got == {"a": {"by": "first"}, "b": {"by": "first"}}
    # A third worker, later: it reads the stored value and computes nothing.
    assert SessionCache(tmp_path).get("k", compute_second) == {"by": "first"}
    assert calls == ["first"]


def test_get_all_computes_the_free_keys_before_waiting_for_a_busy_one(tmp_path: Path) -> None:
    first, second = SessionCache(tmp_path), SessionCache(tmp_path)
    started, k2_stored = threading.Event(), threading.Event()
    computed_by_second: list[str] = []

    def compute_k1_slowly() -> int:
        started.set()
        # Returns only once the other worker has computed k2: had it waited on k1 first,
        # both would hang (and this wait fail).
        assert k2_stored.wait(HANG_GUARD_S)
        return 1

    def compute(key: str) -> int:
        computed_by_second.append(key)
        k2_stored.set()
        return 2

    a = threading.Thread(target=lambda: first.get("k1", compute_k1_slowly))
    a.start()
    assert started.wait(HANG_GUARD_S)
    assert second.get_all(["k1", "k2"], compute) == {"k1": 1, "k2": 2}
    a.join(HANG_GUARD_S)
    assert computed_by_second == ["k2"]


def test_under_xdist_the_directory_is_shared_by_the_sessions_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Factory:
        def __init__(self, base: Path) -> None:
            self.base = base

        def getbasetemp(self) -> Path:
            return self.base

    gw0, gw1 = tmp_path / "popen-gw0", tmp_path / "popen-gw1"  # xdist's worker base dirs
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    shared = session_directory(Factory(gw0), "runs")  # type: ignore[arg-type]
    assert shared == session_directory(Factory(gw1), "runs") == tmp_path / "runs"  # type: ignore[arg-type]
    assert shared.is_dir()
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert session_directory(Factory(gw0), "runs") == gw0 / "runs"  # type: ignore[arg-type]
