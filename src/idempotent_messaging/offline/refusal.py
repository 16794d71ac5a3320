"""A configuration the program refused, told apart from an engine fault and located.

``pulumi preview`` refuses a stack whose program raises on its configuration: the components'
``ArgumentError`` (``path``, ``value``, ``rule``; a ValueError), a ``pulumi.RunError`` the
program raises (the SDK's error "shown without a stack trace"), or a ``config.require`` of an
absent key (``Missing required configuration variable 'proj:key'``). ``refusal_of`` turns such
a failure of the program into ``ConfigRefusedError`` (exit 3) located at the key's line in
``Pulumi.<stack>.yaml`` (found by walking the YAML node tree for the key path:
``<project>:consumers -> orders -> visibilityTimeoutSeconds``), else in ``Pulumi.yaml``'s
``config:`` defaults, else at the line of the program that raised. Everything else (a mock, the
analyzer, a ``RunError`` of the SDK itself) stays an engine fault (exit 2).

A secret never appears: a value under a key the stack file encrypts (``secure:``), or equal to
the offline placeholder of one, is shown as ``[secret]``.
"""

from __future__ import annotations

import os
import re
import traceback
from pathlib import Path
from typing import Any

import pulumi
import yaml

from .errors import ConfigRefusedError, ProgramError
from .project import SECRET_PLACEHOLDER, ProjectSpec, _qualify, load_project, load_stack_config
from .recorder import EngineCallError

SECRET_SHOWN = "[secret]"
_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # idempotent_messaging/
_PULUMI_DIR = str(Path(pulumi.__file__).resolve().parent)
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _argument_error_shape(exc: BaseException) -> bool:
    """The components' ArgumentError (by shape: a program may vendor its own copy)."""
    return (
        isinstance(exc, ValueError)
        and isinstance(getattr(exc, "path", None), str)
        and isinstance(getattr(exc, "rule", None), str)
        and hasattr(exc, "value")
    )


def _raised_in_sdk(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    innermost = str(Path(frames[-1].filename).resolve()) if frames else ""
    return innermost.startswith(_PULUMI_DIR + os.sep)


def _program_frame(exc: BaseException, project: ProjectSpec) -> tuple[str | None, int | None]:
    """The innermost frame of the user's program (not this package, not site-packages)."""
    root = str(project.directory) + "/"
    found: tuple[str | None, int | None] = (None, None)
    current: BaseException | None = exc
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame in traceback.extract_tb(current.__traceback__):
            file = os.path.abspath(frame.filename)  # a symlinked program keeps its own path
            if (
                file.startswith(root)
                and "site-packages" not in file
                and not file.startswith(_PACKAGE_DIR)
            ):
                found = (file, frame.lineno)
        if found[0] is not None:
            return found
        current = current.__cause__
    return found


def segments(path: str) -> list[str | int]:
    """``consumers.orders.alarmEmails[0]`` -> ``["consumers", "orders", "alarmEmails", 0]``."""
    out: list[str | int] = []
    for name, index in _SEGMENT.findall(path):
        out.append(int(index) if index else name)
    return out


def _child(node: Any, key: str | int) -> tuple[Any, int] | None:
    """(value node, 1-based line of the key) of `key` in a YAML mapping / sequence node."""
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return v, k.start_mark.line + 1
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        item = node.value[key]
        return item, item.start_mark.line + 1
    return None


def _walk(file: Path, project: str, parts: list[str | int], defaults: bool) -> tuple[int, int]:
    """(how many parts matched, line of the deepest match) under `config:` of `file`; in
    Pulumi.yaml (`defaults`) a key's value sits under its `default:` / `value:` when given."""
    try:
        root = yaml.compose(file.read_text())
    except (OSError, yaml.YAMLError):
        return 0, 0
    config = _child(root, "config")
    if config is None:
        return 0, 0
    node, line = config
    if not parts or not isinstance(parts[0], str):
        return 0, line
    first = parts[0]
    local = first.split(":", 1)[1] if first.startswith(f"{project}:") else first
    names = (
        [first]
        if ":" in first and not first.startswith(f"{project}:")
        else [
            f"{project}:{local}",
            local,
        ]
    )
    hit = next((h for n in names if (h := _child(node, n)) is not None), None)
    if hit is None:
        return 0, line
    node, line = hit
    matched = 1
    if defaults and isinstance(node, yaml.MappingNode):
        for key in ("default", "value"):
            inner = _child(node, key)
            if inner is not None:
                node = inner[0]
                break
    for part in parts[1:]:
        hit = _child(node, part)
        if hit is None:
            break
        node, line = hit
        matched += 1
    return matched, line


def locate(project: ProjectSpec, stack: str, path: str | None) -> tuple[str | None, int | None]:
    """Where the value at `path` is set: `Pulumi.<stack>.yaml`, else `Pulumi.yaml` (its
    default), else (None, None). A partial match (a required key that is absent) points at
    the deepest key that is there."""
    parts = segments(path) if path else []
    stack_file = project.directory / f"Pulumi.{stack}.yaml"
    project_file = next(
        (
            project.directory / n
            for n in ("Pulumi.yaml", "Pulumi.yml")
            if (project.directory / n).exists()
        ),
        None,
    )
    candidates = [(stack_file, False)] + ([(project_file, True)] if project_file else [])
    best: tuple[int, str | None, int | None] = (0, None, None)
    for file, defaults in candidates:
        if not file.exists() or not parts:
            continue
        matched, line = _walk(file, project.name, parts, defaults)
        if matched == len(parts):
            return str(file), line
        if matched > best[0]:
            best = (matched, str(file), line)
    return best[1], best[2]


def _config_line(project: ProjectSpec, stack: str) -> tuple[str | None, int | None]:
    """The stack file's `config:` line (where an absent key is added), else the file."""
    stack_file = project.directory / f"Pulumi.{stack}.yaml"
    if not stack_file.exists():
        return None, None
    _, line = _walk(stack_file, project.name, [], False)
    return str(stack_file), line or None


def _scrub(value: Any, secret: bool) -> Any:
    if secret:
        return SECRET_SHOWN
    if isinstance(value, str):
        return SECRET_SHOWN if SECRET_PLACEHOLDER in value else value
    if isinstance(value, (list, tuple)):
        return [_scrub(v, False) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v, False) for k, v in value.items()}
    return value


def _scrub_text(text: str) -> str:
    return text.replace(SECRET_PLACEHOLDER, SECRET_SHOWN)


def refusal_of(
    exc: BaseException, project_dir: str | os.PathLike[str], stack: str
) -> ConfigRefusedError | None:
    """The ConfigRefusedError a failed program run means, or None for an engine fault."""
    original = exc.__cause__ if isinstance(exc, ProgramError) else exc
    if original is None or isinstance(original, (EngineCallError, ProgramError)):
        return None
    try:
        project = load_project(project_dir)
        secret_keys = set(load_stack_config(project, stack).secret_keys)
    except ProgramError:
        return None

    def secret(path: str | None) -> bool:
        parts = segments(path) if path else []
        return (
            bool(parts)
            and isinstance(parts[0], str)
            and (_qualify(parts[0], project.name) in secret_keys)
        )

    program_file, program_line = _program_frame(original, project)
    if _argument_error_shape(original):
        argument: Any = original
        path = str(argument.path)
        file, line = locate(project, stack, path)
        return ConfigRefusedError(
            path,
            _scrub(argument.value, secret(path)),
            _scrub_text(str(argument.rule)),
            file=file or program_file,
            line=line if file else program_line,
            stack=stack,
            program_file=program_file,
            program_line=program_line,
        )
    if isinstance(original, pulumi.ConfigMissingError):
        key = original.key
        file, line = _config_line(project, stack)
        flag = " --secret" if original.secret else ""
        return ConfigRefusedError(
            key,
            None,
            f"Missing required configuration variable '{key}': set it with "
            f"`pulumi config set{flag} {key} <value>` (stack {stack})",
            file=file or program_file,
            line=line if file else program_line,
            stack=stack,
            absent=True,
            program_file=program_file,
            program_line=program_line,
        )
    if isinstance(original, pulumi.ConfigTypeError):
        key = original.key
        file, line = locate(project, stack, key)
        return ConfigRefusedError(
            key,
            _scrub(original.value, secret(key)),
            f"is not a valid {original.expect_type}",
            file=file or program_file,
            line=line if file else program_line,
            stack=stack,
            program_file=program_file,
            program_line=program_line,
        )
    if isinstance(original, pulumi.RunError) and not _raised_in_sdk(original):
        file, line = (program_file, program_line)
        if file is None:
            file, line = _config_line(project, stack)
        return ConfigRefusedError(
            None,
            None,
            _scrub_text(str(original)),
            file=file,
            line=line,
            stack=stack,
            program_file=program_file,
            program_line=program_line,
        )
    return None
