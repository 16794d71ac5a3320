"""One `ast.parse` at a time on the CPython releases whose AST builder races between threads.

CPython 3.11.0-3.11.7 and 3.12.0-3.12.1 keep the AST constructor's recursion depth in state
shared by every thread (python/cpython#106905, fixed in 3.11.8 and 3.12.2 by a per-call
counter). A garbage collection inside one thread's `ast.parse` can run Python code and so hand
the GIL to another thread; if that thread parses too, the first one fails with
``SystemError: AST constructor recursion depth mismatch``. Threads that parse are ordinary in
an emulator run (moto's werkzeug request threads and the poller's handler threads format
tracebacks, and 3.11's traceback module parses source lines to place its carets) and in an
offline check (the Pulumi SDK runs its registrations on executor threads while the program's
components parse their handlers' source).

`install()` wraps `ast.parse` in one re-entrant lock on those releases only (re-entrant: a
collection inside a parse may itself format a traceback) and is a no-op elsewhere. Only the
processes this project starts install it (the emulator, the offline check's console script,
the test session): a library must not rebind the standard library under its importer.
"""

from __future__ import annotations

import ast
import functools
import sys
import threading
from typing import Any

AFFECTED = ((3, 11, 0), (3, 11, 8)), ((3, 12, 0), (3, 12, 2))
"""Half-open version ranges with the race (python/cpython#106905)."""

LOCK = threading.RLock()


def affected(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> bool:
    """Whether this interpreter's AST builder shares its recursion counter between threads."""
    return any(low <= version < high for low, high in AFFECTED)


def install() -> bool:
    """Serialise `ast.parse` if this interpreter needs it; True when the guard is in place."""
    if not affected():
        return False
    if getattr(ast.parse, "__wrapped_by_ast_guard__", False):
        return True
    parse = ast.parse

    @functools.wraps(parse)
    def serialised_parse(*args: Any, **kwargs: Any) -> Any:
        with LOCK:
            return parse(*args, **kwargs)

    serialised_parse.__wrapped_by_ast_guard__ = True  # type: ignore[attr-defined]
    ast.parse = serialised_parse
    return True
