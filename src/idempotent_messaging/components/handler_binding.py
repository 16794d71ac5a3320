"""Is the handler's NAME bound at module level in the user's code? Read with ``ast``, never run.

``bundle.user_code_archive`` already refuses a handler whose MODULE is not in the code; this
module checks the last part of the handler string too (``handler`` in
``billing.invoices.handler``), so a typo or a renamed function fails ``pulumi preview`` instead of
every invocation in AWS (``Runtime.HandlerNotFound``).

The module is parsed, not imported: importing user code at deploy time would run its import-time
side effects and need its dependencies where the Pulumi program runs. What binds a name at module
level (also inside a top-level ``if``/``try``/``with``/``for``/``while``):
``def``/``async def``/``class``, an assignment (``handler = lambda_handler(...)``, annotated,
augmented, unpacking, a walrus), an import (``from app.entry import handler``,
``import handler``), a ``for``/``with ... as``/``except ... as`` target.

What cannot be known without running the module gives a warning, never a failure: a star import
(``from x import *``), a module-level ``__getattr__`` (PEP 562), or writes through ``globals()``.
A file that is not valid Python is a failure (Lambda could not import it either).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pulumi

from .errors import ArgumentError


@dataclass(frozen=True)
class Binding:
    """What reading the handler's module found."""

    bound: bool | None
    """True: bound at module level; False: not bound; None: cannot be known statically."""
    where: str
    """The file read (its path when it is a file on disk, else its key in the archive)."""
    why: str = ""
    """Why it is unknown (bound is None), or the parse error."""


def _source(asset: pulumi.Asset) -> tuple[str, str] | None:
    """(where, text) of an asset whose content is local; None for a remote asset."""
    if isinstance(asset, pulumi.FileAsset):
        path = Path(str(asset.path))
        return str(path), path.read_text(encoding="utf-8", errors="replace")
    if isinstance(asset, pulumi.StringAsset):
        return "", str(asset.text)
    return None


def _targets(node: ast.AST) -> Iterator[str]:
    """Names an assignment target binds (``a``, ``a, *b``, ``[a, b]``); attributes and
    subscripts bind no module name."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)
    elif isinstance(node, ast.Tuple | ast.List):
        for element in node.elts:
            yield from _targets(element)


def _walrus_names(node: ast.AST) -> Iterator[str]:
    """``(x := ...)`` anywhere in a module-level expression (not inside a lambda or a
    comprehension's own scope: Python binds those in the module too, so they count)."""
    for child in ast.walk(node):
        if isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
            yield child.target.id


def module_level_names(tree: ast.Module) -> tuple[set[str], list[str]]:
    """(every name the module binds at module level, why other names may be bound too)."""
    names: set[str] = set()
    dynamic: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(stmt.name)
                if stmt.name == "__getattr__":
                    dynamic.append("it defines a module-level __getattr__ (PEP 562)")
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    names.update(_targets(target))
                names.update(_walrus_names(stmt.value))
            elif isinstance(stmt, ast.AnnAssign):
                if stmt.value is not None:
                    names.update(_targets(stmt.target))
            elif isinstance(stmt, ast.AugAssign):
                names.update(_targets(stmt.target))
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if alias.name == "*":
                        dynamic.append(
                            f"it star-imports from {'.' * stmt.level}{stmt.module or ''}"
                        )
                    else:
                        names.add(alias.asname or alias.name)
            elif isinstance(stmt, ast.Expr):
                names.update(_walrus_names(stmt.value))
                if "globals" in {
                    n.func.id
                    for n in ast.walk(stmt.value)
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                }:
                    dynamic.append("it calls globals() at module level")
            elif isinstance(stmt, ast.If | ast.While):
                names.update(_walrus_names(stmt.test))
                visit(stmt.body)
                visit(stmt.orelse)
            elif isinstance(stmt, ast.For | ast.AsyncFor):
                names.update(_targets(stmt.target))
                visit(stmt.body)
                visit(stmt.orelse)
            elif isinstance(stmt, ast.With | ast.AsyncWith):
                for item in stmt.items:
                    if item.optional_vars is not None:
                        names.update(_targets(item.optional_vars))
                visit(stmt.body)
            elif isinstance(stmt, ast.Try | ast.TryStar):
                visit(stmt.body)
                for handler in stmt.handlers:
                    visit(handler.body)
                visit(stmt.orelse)
                visit(stmt.finalbody)
            elif isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    visit(case.body)

    visit(tree.body)
    return names, dynamic


def find_binding(handler: str, files: Mapping[str, pulumi.Asset]) -> Binding | None:
    """How the handler's function name is bound in its module among ``files`` (archive key ->
    asset); None when the module is not among them or its content is not local (remote)."""
    module, _, name = handler.rpartition(".")
    base = module.replace(".", "/")
    for key in (f"{base}.py", f"{base}/__init__.py"):
        asset = files.get(key)
        if asset is None:
            continue
        source = _source(asset)
        if source is None:
            return None
        path, text = source
        where = path or key
        try:
            tree = ast.parse(text, filename=where)
        except SyntaxError as exc:
            return Binding(False, where, f"it is not valid Python: {exc.msg} (line {exc.lineno})")
        names, dynamic = module_level_names(tree)
        if name in names:
            return Binding(True, where)
        if dynamic:
            return Binding(None, where, "; ".join(dynamic))
        return Binding(False, where)
    return None


def check_handler_binding(handler: str, files: Mapping[str, pulumi.Asset]) -> None:
    """An ArgumentError (field ``handler``: the value and the file) when the handler's module
    does not bind its function name at module level; a warning when that cannot be known."""
    binding = find_binding(handler, files)
    if binding is None or binding.bound:
        return
    name = handler.rpartition(".")[2]
    if binding.bound is None:
        pulumi.log.warn(
            f"handler={handler!r}: cannot tell from {binding.where} whether it binds {name!r} "
            f"({binding.why}); Lambda fails every invocation if it does not"
        )
        return
    if binding.why:
        raise ArgumentError("handler", handler, f"{binding.where}: {binding.why}")
    raise ArgumentError(
        "handler",
        handler,
        f"{binding.where} binds no {name!r} at module level (no def, assignment or import of "
        f"it), so Lambda could not find it; define it there (e.g. `{name} = "
        "lambda_handler(...)`) or name the function it has",
    )
