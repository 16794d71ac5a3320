"""Every literal in README.md and docs/ that names a flag, an API or a fault does what it says.

- **Flags**: an inline literal that runs one of this project's commands
  (``idempotent-messaging-local --stack dev run --keep``), or a bare flag on the page that
  documents a command (``--one-row-per-event`` on docs/local.md), is checked against that
  command's own argparse parser: every flag it shows exists there (subcommands included).
- **API**: an inline literal that shows the signature of the local API (``local_stack(...)``,
  a ``LocalStack`` member, a ``FaultInjector`` method) states the real signature: the same
  parameters, keyword-only where the code says, with the same defaults; a call literal
  (``crash_once("PublishBatch")``) binds to it.
- **Faults**: every fault literal is armed on a real ``FaultInjector`` here (an operation name
  no client calls is refused when armed), and tests/e2e/test_docs_literals.py runs each one
  against the reference stack and requires it to fire.

Shell commands in ```` ```sh ```` blocks are tests/unit/test_docs.py's.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.unit.test_docs import blocks, pages, prose, rel

pytestmark = pytest.mark.unit

_INLINE = re.compile(r"`([^`\n]+)`")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

COMMANDS: dict[str, Callable[[], argparse.ArgumentParser]] = {}
"""A command as the docs write it -> its parser (filled below)."""


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _parser_of(module: str, entry: str = "main") -> Callable[[], argparse.ArgumentParser]:
    """The parser a command's entry point builds, captured where it parses (nothing runs)."""

    def build() -> argparse.ArgumentParser:
        def capture(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
            raise _Captured(self)

        original = argparse.ArgumentParser.parse_args
        argparse.ArgumentParser.parse_args = capture  # type: ignore[method-assign]
        try:
            getattr(importlib.import_module(module), entry)([])
        except _Captured as captured:
            return captured.parser
        finally:
            argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]
        raise AssertionError(f"{module}.{entry} built no parser")

    return build


def _local() -> argparse.ArgumentParser:
    from idempotent_messaging.local.cli import build_parser

    return build_parser()


def _ops() -> argparse.ArgumentParser:
    from idempotent_messaging.ops.cli import _parser

    return _parser()


for _name in ("idempotent-messaging-local", "python -m idempotent_messaging.local"):
    COMMANDS[_name] = _local
for _name in ("idempotent-messaging-ops", "python -m idempotent_messaging.ops", "ops"):
    COMMANDS[_name] = _ops
for _name in ("idempotent-messaging-check", "python -m idempotent_messaging.offline"):
    COMMANDS[_name] = _parser_of("idempotent_messaging.offline.cli")
COMMANDS["python -m idempotent_messaging.local.demo"] = _parser_of(
    "idempotent_messaging.local.demo"
)
COMMANDS["python -m idempotent_messaging.local.soak"] = _parser_of(
    "idempotent_messaging.local.soak"
)
COMMANDS["python -m bench"] = _parser_of("bench.__main__")

PAGE_COMMANDS = {
    "docs/local.md": ("idempotent-messaging-local",),
    "docs/operations.md": ("idempotent-messaging-ops", "python -m idempotent_messaging.local.demo"),
    "docs/soak.md": ("python -m idempotent_messaging.local.soak",),
    "docs/bench.md": ("python -m bench",),
}
"""The commands a page documents: its bare flags (``--json``) are one of theirs."""

EXTERNAL = ("pulumi", "aws ", "pip ", "git ", "make ", "npm ", "python -m pytest", "pytest",
            "export ", "cd ", "curl ", "docker ")  # fmt: skip
"""Literals that run other tools: their flags are those tools' (sh blocks: test_docs.py)."""


def options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of a parser and of its subcommands."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= options(sub)
    return found


@dataclass(frozen=True)
class Literal:
    page: str
    text: str


def literals() -> Iterator[Literal]:
    """Inline code of every page (prose and tables), and each line of its python blocks."""
    for page in pages():
        for match in _INLINE.finditer(prose(page)):
            yield Literal(rel(page), match.group(1).strip())
        for block in blocks(page):
            if block.language == "python":
                for line in block.body:
                    yield Literal(rel(page), line.strip())


def _commands_of(literal: Literal) -> tuple[str, ...]:
    text = literal.text.removeprefix(".venv/bin/")
    for command in sorted(COMMANDS, key=len, reverse=True):
        if text == command or text.startswith(command + " "):
            return (command,)
    if text.startswith(EXTERNAL) or re.match(r"^[\w.]+\(", text):
        return ()
    return PAGE_COMMANDS.get(literal.page, ())


@pytest.fixture(scope="module")
def parsers() -> dict[str, set[str]]:
    return {command: options(build()) for command, build in COMMANDS.items()}


def test_every_flag_a_literal_shows_is_an_option_of_its_command(
    parsers: dict[str, set[str]],
) -> None:
    unknown: list[str] = []
    checked = 0
    for literal in literals():
        commands = _commands_of(literal)
        for flag in _FLAG.findall(literal.text) if commands else ():
            checked += 1
            if flag != "--help" and not any(flag in parsers[c] for c in commands):
                unknown.append(
                    f"{literal.page}: `{literal.text}`: {' / '.join(commands)} has no {flag}"
                )
    assert not unknown, "\n".join(unknown)
    assert checked > 20  # the pages show flags; a scan that finds none is broken


# --- the local API's signatures -----------------------------------------------------------------


def _api() -> dict[str, Callable[..., Any]]:
    from idempotent_messaging.local.faults import FaultInjector
    from idempotent_messaging.local.stack import LocalStack, local_stack, start_local_stack

    found: dict[str, Callable[..., Any]] = {
        "local_stack": local_stack,
        "start_local_stack": start_local_stack,
    }
    for owner in (LocalStack, FaultInjector):
        for name, member in vars(owner).items():
            if callable(member) and not name.startswith("_"):
                found[name] = member
    return found


_CALL = re.compile(r"^(?:[\w.]*\.)?(?P<name>[a-z_]\w*)\((?P<args>.*)\)$")


def _as_signature(name: str, args: str) -> inspect.Signature | None:
    """A literal written as a signature (``send(consumer, body, *, count=1)``), else None."""
    try:
        tree = ast.parse(f"def {name}({args}): pass")
    except SyntaxError:
        return None
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    spec = function.args
    parameters: list[inspect.Parameter] = []
    positional = spec.posonlyargs + spec.args
    defaults = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        parameters.append(
            inspect.Parameter(
                arg.arg,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=inspect.Parameter.empty if default is None else ast.literal_eval(default),
            )
        )
    if spec.vararg is not None:
        parameters.append(inspect.Parameter(spec.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    for arg, kw_default in zip(spec.kwonlyargs, spec.kw_defaults, strict=True):
        parameters.append(
            inspect.Parameter(
                arg.arg,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty
                if kw_default is None
                else ast.literal_eval(kw_default),
            )
        )
    if spec.kwarg is not None:
        parameters.append(inspect.Parameter(spec.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(parameters)


def _shape(signature: inspect.Signature, shown: set[str]) -> list[tuple[str, Any, Any]]:
    return [
        (p.name, p.kind, p.default)
        for p in signature.parameters.values()
        if p.name != "self" and p.name in shown
    ]


def api_literals() -> Iterator[tuple[Literal, str, str]]:
    api = _api()
    for literal in literals():
        match = _CALL.match(literal.text)
        if match and match["name"] in api:
            yield literal, match["name"], match["args"]


def test_every_signature_the_docs_show_is_the_codes() -> None:
    api = _api()
    wrong: list[str] = []
    checked = 0
    for literal, name, args in api_literals():
        shown = _as_signature(name, args)
        real = inspect.signature(api[name])
        if shown is None:
            continue  # a call: the next test binds it
        checked += 1
        names = [p for p in shown.parameters if p not in ("self",)]
        real_names = [p for p in real.parameters if p != "self"]
        if names != real_names[: len(names)] or _shape(shown, set(names)) != _shape(
            real, set(names)
        ):
            wrong.append(f"{literal.page}: `{literal.text}`: the code says {name}{real}")
    assert not wrong, "\n".join(wrong)
    assert checked >= 5


def test_every_call_the_docs_show_binds_to_the_codes_signature() -> None:
    api = _api()
    wrong: list[str] = []
    for literal, name, args in api_literals():
        if _as_signature(name, args) is not None:
            continue
        try:
            call = ast.parse(f"f({args})", mode="eval").body
        except SyntaxError:
            continue  # prose with parentheses, not a call
        assert isinstance(call, ast.Call)
        positional = [object() for _ in call.args]
        keywords = {k.arg: object() for k in call.keywords if k.arg}
        signature = inspect.signature(api[name])
        self_arg = [object()] if "self" in signature.parameters else []
        try:
            signature.bind(*self_arg, *positional, **keywords)
        except TypeError as exc:
            wrong.append(f"{literal.page}: `{literal.text}`: {exc} (the code: {name}{signature})")
    assert not wrong, "\n".join(wrong)


# --- faults: every literal is armed (and refused if no client calls it) -------------------

_FAULT = re.compile(r"\b(?P<call>(?:crash_once|crash|throttle|fail_entries|error)\()")
FAULT_METHODS = ("crash_once", "crash", "throttle", "fail_entries", "error")


def fault_literals() -> list[tuple[str, str]]:
    """(page, ``method(args)``) for every fault call the pages show, parentheses balanced."""
    found: list[tuple[str, str]] = []
    for page in pages():
        text = page.read_text()
        for match in _FAULT.finditer(text):
            start = match.start()
            before = text[max(0, start - 12) : start]
            if match["call"].startswith("error(") and not re.search(
                r"(faults|injector)\.$", before
            ):
                continue
            depth, end = 0, start
            for end in range(match.end() - 1, min(len(text), start + 400)):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                if depth == 0:
                    break
            literal = text[start : end + 1]
            name, _, args = literal[:-1].partition("(")
            if _as_signature(name, args) is None:  # a call, not the signature a table shows
                found.append((rel(page), literal))
    return found


def arm(literal: str) -> Any:
    from idempotent_messaging.local import faults

    injector = faults.FaultInjector()
    namespace = {
        "injector": injector,
        "mentions": faults.mentions,
        "entry_mentions": faults.entry_mentions,
        "writes_item_with": faults.writes_item_with,
    }
    return injector, eval(f"injector.{literal}", namespace)


def test_the_docs_show_fault_literals_and_each_is_armed_on_an_operation_a_client_calls() -> None:
    """Arming validates the operation names against botocore's models (UnknownOperation)."""
    found = fault_literals()
    assert found, "no fault literal in the docs: docs/faults.md shows them"
    for page, literal in found:
        try:
            arm(literal)
        except Exception as exc:
            pytest.fail(f"{page}: `{literal}` cannot be armed: {exc}")


def test_a_misspelt_fault_literal_would_be_refused() -> None:
    """The check above can fail: the literal the docs once showed, misspelt, is refused."""
    from idempotent_messaging.local.faults import UnknownOperation

    with pytest.raises(UnknownOperation, match="PublishBatch"):
        arm('crash_once("PublishBatches")')
