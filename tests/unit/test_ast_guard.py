"""The `ast.parse` guard against python/cpython#106905 (a parse racing another thread's parse
fails with "AST constructor recursion depth mismatch" on 3.11.0-3.11.7 and 3.12.0-3.12.1)."""

from __future__ import annotations

import ast
import threading

import pytest

from idempotent_messaging import ast_guard


@pytest.mark.parametrize(
    ("version", "races"),
    [
        ((3, 11, 0), True),
        ((3, 11, 7), True),  # this machine kind's python3
        ((3, 11, 8), False),  # the fix's first 3.11 release
        ((3, 12, 1), True),
        ((3, 12, 2), False),
        ((3, 13, 0), False),
        ((3, 10, 13), False),  # before the shared counter (python/cpython#95185)
    ],
)
def test_the_guard_applies_to_the_releases_with_the_race(version: tuple[int, int, int], races):
    assert ast_guard.affected(version) is races


@pytest.mark.skipif(not ast_guard.affected(), reason="this interpreter's AST builder has no race")
def test_a_parse_waits_while_another_thread_parses_and_nests_in_its_own():
    assert ast_guard.install() is True  # the session installed it: installing again is a no-op
    assert ast.parse.__wrapped_by_ast_guard__  # type: ignore[attr-defined]
    done = threading.Event()

    def parse_elsewhere() -> None:
        ast.parse("x = 1")
        done.set()

    with ast_guard.LOCK:  # as if this thread were inside a parse
        assert isinstance(ast.parse("y = 2"), ast.Module)  # re-entrant in the same thread
        other = threading.Thread(target=parse_elsewhere)
        other.start()
        assert not done.wait(0.2), "another thread's parse ran beside this one"
    other.join(timeout=30)
    assert done.is_set()
