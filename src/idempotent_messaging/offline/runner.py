"""Run a Pulumi Python program in-process under mocks, as the engine would, and record it.

``run_program(project_dir, stack, *, preview=False, mocks=None, new_resource=None,
config_overrides=None, answers=None, package_paths=()) -> ProgramRun``
    Runs the project's program once and returns every registration. ``preview=True`` runs it
    as ``pulumi preview`` would for new resources: computed outputs are unknown. ``mocks``
    replaces the default ``AwsMocks`` entirely; ``new_resource`` is a lighter hook:
    ``callback(args, default_outputs) -> (id, outputs) | None``. ``package_paths`` are extra
    directories searched (after the checker's own packages, and after the program's own
    virtualenv) for the modules the program imports.
    Raises ``ProgramError`` (``MissingPackageError`` for a module that is not installed,
    ``MissingConfigError`` for a ``config.require`` the stack does not set, with the Pulumi
    CLI's own message, ``unknowns.UnsupportedError`` for what the engine cannot stand in for)
    with what failed, where in the user's program, and what to do. Values only the cloud knows
    reach the program as typed unknowns (``offline.unknowns``); the program's own modules run
    with builtins that keep them unknown, and a conversion that loses one elsewhere is noted on
    stderr.
``run_function(program, *, project, stack, preview=False, mocks=None, config=None)``
    The same engine for a program given as a Python callable (the infra tests' harness):
    returns ``(FunctionRun)`` with the recorded resources, component outputs and the
    callable's returned mapping resolved.

Runs are isolated from each other: each executes in a fresh ``contextvars.Context`` (Pulumi's
settings, config and root stack live in context variables), with the project directory as
working directory and first ``sys.path`` entry, and modules the program imported are dropped
afterwards so the next project with equally named modules gets its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import importlib.util
import os
import runpy
import sys
import sysconfig
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import pulumi
import pulumi.runtime.resource
from google.protobuf import struct_pb2
from pulumi.runtime.mocks import MockCallArgs, MockResourceArgs
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from ..rules.values import UNKNOWN
from . import unknowns
from .answers import ANSWERS_FILE_NAME, Answers, load_answers
from .errors import MissingConfigError, MissingPackageError, ProgramError
from .mocks import AwsMocks
from .project import (
    STACK_TYPE,
    ProjectSpec,
    StackConfig,
    _config_string,
    _qualify,
    load_project,
    load_stack_config,
)
from .recorder import EngineCallError, RecordedResource, RecordingMonitor

STACK_REFERENCE_TYPE = "pulumi:pulumi:StackReference"
_E = TypeVar("_E", bound=BaseException)


def _under(path: str, root: str) -> bool:
    return bool(path) and path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass
class ProgramRun:
    project: ProjectSpec
    stack: str
    preview: bool
    config: StackConfig
    resources: list[RecordedResource]
    stack_outputs: dict[str, Any] = field(default_factory=dict)
    # Some other stack's outputs were unknown (a StackReference no answers file pins).
    stack_outputs_unknown: bool = False

    @property
    def by_urn(self) -> dict[str, RecordedResource]:
        return {r.urn: r for r in self.resources}


def _link_components(resources: list[RecordedResource], project_dir: Path) -> None:
    by_urn = {r.urn: r for r in resources}
    for r in resources:
        if r.type == STACK_TYPE:
            r.source_file = r.source_line = None  # the SDK's own frame, not user code
            continue
        # The outermost component below the stack is where the user's program instantiated
        # the whole subtree: that is the line a reviewer changes.
        outer: RecordedResource | None = None
        parent = by_urn.get(r.parent or "")
        while parent is not None and parent.type != STACK_TYPE:
            outer = parent
            parent = by_urn.get(parent.parent or "")
        if outer is not None:
            r.component_file, r.component_line = outer.source_file, outer.source_line


def _resolve_outputs(value: Any) -> Any:
    """Stack exports as plain values (Outputs awaited; unknowns become UNKNOWN)."""

    async def resolve() -> Any:
        out = pulumi.Output.from_input(value)
        known = await out.is_known()
        return (await out.future()) if known else UNKNOWN

    try:
        return _sync_await(resolve())
    except Exception:  # an export that cannot be resolved offline is reported as unknown
        return UNKNOWN


NewResourceHook = Callable[[MockResourceArgs, dict[str, Any]], "tuple[str | None, dict] | None"]


class _HookedMocks(pulumi.runtime.Mocks):
    def __init__(self, base: pulumi.runtime.Mocks, hook: NewResourceHook) -> None:
        self.base, self.hook = base, hook

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        default_id, default_outputs = self.base.new_resource(args)
        result = self.hook(args, default_outputs)
        return (default_id, default_outputs) if result is None else result

    def call(self, args: MockCallArgs) -> Any:
        return self.base.call(args)


def _local_module_names(program_dir: Path) -> set[str]:
    """Top-level module names the program directory provides (`x.py`, packages `x/`)."""
    names: set[str] = set()
    for entry in program_dir.iterdir():
        if entry.suffix == ".py" and entry.stem != "__main__":
            names.add(entry.stem)
        elif entry.is_dir() and entry.name.isidentifier() and any(entry.glob("*.py")):
            names.add(entry.name)
    return names


_INSTALLED_ROOTS = tuple(
    str(Path(p).resolve())
    for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]}
)


def _is_installed(module: Any) -> bool:
    """A stdlib or site-packages module (never hidden: the SDK itself depends on them)."""
    file = getattr(module, "__file__", None)
    if not file:
        return True  # builtins and namespace packages without a file
    resolved = str(Path(file).resolve())
    return "site-packages" in resolved or resolved.startswith(_INSTALLED_ROOTS)


def _user_frame(exc: BaseException, project_dir: Path) -> str | None:
    """`file:line` of the innermost traceback frame inside the user's project."""
    where = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith(str(project_dir) + os.sep) and (
            "site-packages" not in frame.filename
        ):
            where = f"{os.path.relpath(frame.filename, project_dir)}:{frame.lineno}"
    return where


def _missing_module(exc: BaseException) -> str | None:
    """The module a ModuleNotFoundError that made the program fail could not find.

    Only the failure itself, its explicit causes (``raise ... from``) and import errors
    re-raised as import errors count: an ImportError the program (or the standard library, e.g.
    zoneinfo trying the optional ``tzdata`` package) handled before raising something else is
    not why the program failed."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ModuleNotFoundError) and current.name:
            return current.name
        if current.__cause__ is not None:
            current = current.__cause__
        elif isinstance(current, ImportError):
            current = current.__context__
        else:
            current = None
    return None


def _engine_call_error(exc: BaseException) -> EngineCallError | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, EngineCallError):
            return current
        current = current.__cause__ or current.__context__
    return None


def _cause_of(exc: BaseException, kind: type[_E]) -> _E | None:
    """The first exception of `kind` in the chain of causes of `exc`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, kind):
            return current
        current = current.__cause__ or current.__context__
    return None


def _config_missing(exc: BaseException) -> pulumi.ConfigMissingError | None:
    return _cause_of(exc, pulumi.ConfigMissingError)


def _program_failure(
    exc: BaseException,
    project: ProjectSpec,
    stack: str,
    provenance: Provenance | None = None,
) -> ProgramError:
    call_error = _engine_call_error(exc)
    unsupported = _cause_of(exc, unknowns.UnsupportedError) or (
        call_error.cause
        if call_error is not None and isinstance(call_error.cause, unknowns.UnsupportedError)
        else None
    )
    if unsupported is not None:
        location = _user_frame(exc, project.directory)
        if call_error is not None and call_error.where:
            location = os.path.relpath(call_error.where, project.directory)
        return unknowns.UnsupportedError(
            unsupported.feature, f"{unsupported}{f' (at {location})' if location else ''}"
        )
    missing = _config_missing(exc)
    if missing is not None:
        # The Pulumi CLI refuses the stack with the SDK's own message: the same one here.
        return MissingConfigError(missing.key, str(missing))
    engine_error = _engine_call_error(exc)
    if engine_error is not None and engine_error.where:
        where: str | None = os.path.relpath(engine_error.where, project.directory)
    else:
        where = _user_frame(exc, project.directory)
    at = f" at {where}" if where else ""
    module = _missing_module(exc)
    if module is not None and importlib.util.find_spec(module.split(".")[0]) is None:
        package = module.split(".")[0].replace("_", "-")
        return MissingPackageError(
            module,
            f"program {project.main} imports module {module!r}{at}, which is not installed "
            f"where the offline check runs. Install it next to the checker (`pip install "
            f"{package}`), or create the program's own virtualenv (Pulumi.yaml "
            f"`runtime.options.virtualenv`, or `venv/` beside Pulumi.yaml), or pass "
            f"`--package-path DIR` with a directory that holds it.",
        )
    detail = "".join(traceback.format_exception(exc)).rstrip()
    handed = sorted(provenance.handed) if provenance is not None else []
    hint = (
        f"(the program read values only the cloud knows, unknown offline: "
        f"{', '.join(handed[:6])}{', ...' if len(handed) > 6 else ''}; if it parsed one, pin "
        f"the real value with --answers FILE; see docs/offline-engine.md)\n"
        if handed
        else ""
    )
    return ProgramError(
        f"program {project.main} (stack {stack}) failed{at}: {type(exc).__name__}: {exc}\n"
        f"{hint}"
        f"(the program raised under the offline engine; if it runs with `pulumi preview`, "
        f"the offline engine is at fault: report it with this traceback)\n{detail}"
    )


def _stack_output(self: pulumi.StackReference, name: Any) -> pulumi.Output[Any]:
    """`get_output` / `require_output` offline: the pinned value of another stack's output
    (answers file `stack_references:`), else unknown, in `up` as in a preview, never None.

    A value another stack owns is not this stack's to judge, and taking it for absent would
    judge the AWS default instead (a visibility timeout "of 30 s" the other stack never set)."""

    async def pick() -> tuple[Any, bool]:
        key = await pulumi.Output.from_input(name).future()
        outputs = await self.outputs.future() if await self.outputs.is_known() else None
        if isinstance(outputs, dict) and key in outputs:
            return outputs[key], True
        return None, False

    picked = asyncio.ensure_future(pick())

    async def value() -> Any:
        return (await picked)[0]

    async def known() -> bool:
        return (await picked)[1]

    async def secret() -> bool:
        return False

    return pulumi.Output(
        {self},
        asyncio.ensure_future(value()),
        asyncio.ensure_future(known()),
        asyncio.ensure_future(secret()),
    )


@dataclass
class Provenance:
    """What a run did with values only the cloud knows (`offline.unknowns`)."""

    handed: set[str] = field(default_factory=set)  # "token.field" given to the program
    lost: list[tuple[str | None, int | None, str, str]] = field(default_factory=list)

    def notes(self, project_dir: Path) -> list[str]:
        out = []
        for file, line, what, origin in dict.fromkeys(self.lost):
            where = f"{os.path.relpath(file, project_dir)}:{line}" if file else "(unknown line)"
            out.append(
                f"note: {where}: {what} turned the unknown {origin} into its placeholder "
                f"outside the program's own modules, so what derives from it is checked as "
                f"that placeholder; pin the real value with --answers"
            )
        return out


# Pulumi's SDK records where each resource is declared: on every registration it converts
# EVERY frame of the stack to a file URI (resource.py, _get_stack_trace / rpc_frame), about a
# fifth of a mocked program's CPU under a deep caller (the check's CLI, a test). The conversion
# depends on the frame's file and line alone, so it is memoised on them; the engine receives
# the same positions (tests/policy/test_secrets_and_places.py).
_FRAME_POSITION = pulumi.runtime.resource._get_source_position_for_frame


@functools.lru_cache(maxsize=16384)
def _position_at(filename: str, lineno: int | None) -> Any:
    return _FRAME_POSITION(traceback.FrameSummary(filename, lineno, "", lookup_line=False))


def _frame_position(frame: traceback.FrameSummary) -> Any:
    return _position_at(frame.filename, frame.lineno)


def _execute(
    body: Callable[[], Any],
    *,
    mocks: pulumi.runtime.Mocks,
    monitor: RecordingMonitor,
    project: str,
    stack: str,
    preview: bool,
    config: Mapping[str, str],
    secret_keys: Iterable[str] = (),
    provenance: Provenance | None = None,
) -> None:
    """Run `body` as a Pulumi program in a fresh context, against `monitor`."""
    provenance = provenance if provenance is not None else Provenance()
    # Another stack's outputs cannot be read offline: `require_output` must not fail the
    # program for that. They are unknown (callbacks over them do not run) unless pinned.
    get_output = _stack_output

    def execute() -> None:
        unknowns.HANDED.set(provenance.handed)
        unknowns.LOST.set(provenance.lost)
        pulumi.runtime.set_mocks(
            mocks, project=project, stack=stack, preview=preview, monitor=monitor
        )
        pulumi.runtime.set_all_config(dict(config), list(secret_keys))
        SETTINGS.rpc_manager.clear()
        SETTINGS.outputs.clear()
        with (
            mock.patch.object(pulumi.StackReference, "get_output", get_output),
            mock.patch.object(pulumi.StackReference, "require_output", get_output),
            mock.patch.object(
                pulumi.runtime.resource, "_get_source_position_for_frame", _frame_position
            ),
            unknowns.engine_patches(),
        ):
            try:
                _sync_await(run_pulumi_func(body))
            except BaseException:
                _cancel_pending_tasks()
                raise
        root = pulumi.runtime.get_root_resource()
        exports = getattr(root, "outputs", None) or {}
        for key, value in exports.items():
            monitor.stack_outputs.setdefault(key, _resolve_outputs(value))

    contextvars.Context().run(execute)


def default_answers(
    project: ProjectSpec, answers: Answers | str | os.PathLike[str] | None
) -> Answers:
    """The answers given, else `offline-answers.yaml` beside the program, else none."""
    if isinstance(answers, Answers):
        return answers
    if answers is not None:
        return load_answers(answers)
    beside = project.main.parent / ANSWERS_FILE_NAME
    return load_answers(beside) if beside.exists() else Answers()


def run_program(
    project_dir: str | os.PathLike[str],
    stack: str,
    *,
    preview: bool = False,
    mocks: pulumi.runtime.Mocks | None = None,
    new_resource: NewResourceHook | None = None,
    config_overrides: Mapping[str, Any] | None = None,
    answers: Answers | str | os.PathLike[str] | None = None,
    package_paths: Iterable[str | os.PathLike[str]] = (),
) -> ProgramRun:
    project = load_project(project_dir)
    config = load_stack_config(project, stack)
    if config_overrides:
        config.values.update(
            {_qualify(k, project.name): _config_string(v) for k, v in config_overrides.items()}
        )
    base = mocks or AwsMocks(
        preview=preview, region=config.aws_region, answers=default_answers(project, answers)
    )
    effective: pulumi.runtime.Mocks = _HookedMocks(base, new_resource) if new_resource else base

    def program() -> None:
        # The program's own code runs with builtins that keep values only the cloud knows
        # unknown through int()/float()/min()/max() (`offline.unknowns`).
        runpy.run_path(
            str(project.main),
            init_globals={"__builtins__": unknowns.TRACKING_BUILTINS},
            run_name="__main__",
        )

    provenance = Provenance()
    monitor = RecordingMonitor(effective, preview=preview)
    monitor.program_dir = project.directory
    try:
        with _program_environment(project, package_paths):
            _execute(
                program,
                mocks=effective,
                monitor=monitor,
                project=project.name,
                stack=stack,
                preview=preview,
                config=config.values,
                secret_keys=config.secret_keys,
                provenance=provenance,
            )
    except ProgramError:
        raise
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise _program_failure(exc, project, stack, provenance) from exc
    for note in provenance.notes(project.directory):
        print(note, file=sys.stderr)
    _link_components(monitor.recorded, project.directory)
    pinned = base.answers if isinstance(base, AwsMocks) else Answers()
    return ProgramRun(
        project,
        stack,
        preview,
        config,
        monitor.recorded,
        monitor.stack_outputs,
        stack_outputs_unknown=any(
            r.type == STACK_REFERENCE_TYPE and pinned.stack_outputs(r.id or r.name) is None
            for r in monitor.recorded
        ),
    )


def _cancel_pending_tasks() -> None:
    """A failed program leaves registrations and callbacks scheduled on the SDK's loop: end
    them, so that the next run on this thread does not execute them."""
    loop = asyncio.get_event_loop()
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending and not loop.is_running():
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


@contextlib.contextmanager
def _program_environment(
    project: ProjectSpec, package_paths: Iterable[str | os.PathLike[str]]
) -> Iterator[None]:
    """The program's directory as working directory and first import root, its own modules
    winning over equally named ones of this process, and nothing left behind."""
    program_dir = str(project.main.parent)
    # The program's own modules (a `policy.py`, a `components/` package) must win over equally
    # named modules this process already imported (this pack is `policy`): hide those for the
    # run, as a fresh `pulumi` language host would never have loaded them.
    shadowed = _local_module_names(project.main.parent)
    stashed = {
        n: m for n, m in sys.modules.items() if n.split(".")[0] in shadowed and not _is_installed(m)
    }
    for n in stashed:
        del sys.modules[n]
    modules_before = set(sys.modules)
    cwd, path0, argv = os.getcwd(), list(sys.path), list(sys.argv)
    tracking = unknowns.tracking_imports(project.main.parent)
    tracking.__enter__()
    try:
        os.chdir(project.directory)
        sys.path.insert(0, program_dir)
        # The program's own packages come after the checker's: its pulumi SDK must not
        # replace the one the engine runs on, but a provider SDK only it has is found.
        sys.path.extend(str(p) for p in [*project.package_paths, *package_paths])
        sys.argv = [str(project.main)]
        yield
    finally:
        tracking.__exit__(None, None, None)
        os.chdir(cwd)
        sys.path[:] = path0
        sys.argv = argv
        # Forgotten after the run: the program's own modules, and what only its own package
        # paths could import (another project checked next in this process must not see a
        # package it does not have). What this process can import itself stays loaded.
        own = [p for p in path0 if p and os.path.isdir(p)]
        extra = [str(p) for p in [*project.package_paths, *package_paths]]
        for mod_name in set(sys.modules) - modules_before:
            module_file = getattr(sys.modules[mod_name], "__file__", None) or ""
            program_module = _under(module_file, str(project.directory)) and (
                "site-packages" not in module_file
            )
            run_only = any(_under(module_file, root) for root in extra) and not any(
                _under(module_file, root) for root in own
            )
            if program_module or run_only:
                del sys.modules[mod_name]
        for mod_name in [n for n in sys.modules if n.split(".")[0] in stashed]:
            del sys.modules[mod_name]
        sys.modules.update(stashed)


@dataclass
class FunctionRun:
    """What a program given as a callable registered, and its returned mapping resolved."""

    resources: list[RecordedResource]
    values: dict[str, Any]
    component_outputs: dict[str, struct_pb2.Struct]  # URN -> `register_outputs`, wire form


def run_function(
    program: Callable[[], Any],
    *,
    project: str,
    stack: str,
    preview: bool = False,
    mocks: pulumi.runtime.Mocks | None = None,
    config: Mapping[str, str] | None = None,
) -> FunctionRun:
    """Run `program()` as a Pulumi program; when it returns a mapping of names to Outputs,
    `values` holds them resolved (UNKNOWN where a preview cannot know them)."""
    config = dict(config or {})
    effective = mocks or AwsMocks(preview=preview, region=config.get("aws:region") or "us-east-1")
    monitor = RecordingMonitor(effective, preview=preview)
    values: dict[str, Any] = {}

    async def body() -> None:
        exported = program()
        if not isinstance(exported, Mapping):
            return
        for key, value in exported.items():
            out = pulumi.Output.from_input(value)
            values[key] = await out.future() if await out.is_known() else UNKNOWN

    _execute(
        body,
        mocks=effective,
        monitor=monitor,
        project=project,
        stack=stack,
        preview=preview,
        config=config,
    )
    return FunctionRun(monitor.recorded, values, monitor.component_outputs)
