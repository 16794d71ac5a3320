"""The program change behind a remediation, as a SARIF `fix` where the source allows one.

The pack's remediation changes a resource's inputs at deploy time; the program still says the
old value, so every later `pulumi up` remediates again (and a `pulumi preview` without the pack
shows the old one). A SARIF `fix` (SARIF 2.1.0, section 3.55: `artifactChanges` with
`replacements` of `deletedRegion` by `insertedContent`) proposes the edit that makes the
program say it: the keyword argument of the resource's constructor call at the finding's line,
replaced when it is a literal, added when it is absent. A value that is not a plain literal, a
nested property (a JSON document's field, a nested object's key) or a call the source does not
show plainly gets no `fix`: the report still says what changed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

_LITERALS = (ast.Constant, ast.List, ast.Tuple)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _literal(value: Any) -> str | None:
    """Python source for a JSON value of the wire (numbers as ints when whole)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float) and value.is_integer():
        return repr(int(value))
    if isinstance(value, (int, float, str)):
        return repr(value)
    if isinstance(value, list):
        items = [_literal(v) for v in value]
        return None if any(i is None for i in items) else "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
    return None


def _call_at(tree: ast.AST, line: int, name: str) -> ast.Call | None:
    """The resource constructor call starting at `line` (the one naming `name`, if several)."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno == line]
    named = [
        c
        for c in calls
        if c.args and isinstance(c.args[0], ast.Constant) and c.args[0].value == name
    ]
    if len(named) == 1:
        return named[0]
    return calls[0] if len(calls) == 1 else None


def _region(node: ast.expr | ast.keyword) -> dict[str, int]:
    return {
        "startLine": node.lineno,
        "startColumn": node.col_offset + 1,
        "endLine": node.end_lineno or node.lineno,
        "endColumn": (node.end_col_offset or node.col_offset) + 1,
    }


def keyword_fix(
    file: str | None,
    root: Path,
    line: int | None,
    name: str,
    prop: str,
    value: Any,
    description: str,
) -> dict[str, Any] | None:
    """A SARIF fix setting keyword `prop` (a top-level wire property) of the constructor call of
    resource `name` at `file:line` to `value`; None when the source cannot show it plainly."""
    if not file or not line or "." in prop:
        return None
    literal = _literal(value)
    path = root / file if not Path(file).is_absolute() else Path(file)
    if literal is None or path.suffix != ".py":
        return None
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    call = _call_at(tree, line, name)
    if call is None:
        return None
    keyword = _snake(prop)
    found = next((k for k in call.keywords if k.arg == keyword), None)
    if found is not None:
        if not isinstance(found.value, _LITERALS):
            return None  # computed (an Output, a variable): not ours to rewrite
        region, inserted = _region(found.value), literal
    else:
        if any(k.arg is None for k in call.keywords):
            return None  # **kwargs may already set it
        nodes: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
        last = max(nodes, key=lambda n: (n.end_lineno or n.lineno, n.end_col_offset or 0))
        end = _region(last)
        region = {
            "startLine": end["endLine"],
            "startColumn": end["endColumn"],
            "endLine": end["endLine"],
            "endColumn": end["endColumn"],
        }
        inserted = f", {keyword}={literal}"
    return {
        "description": {"text": description},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"},
                "replacements": [{"deletedRegion": region, "insertedContent": {"text": inserted}}],
            }
        ],
    }
