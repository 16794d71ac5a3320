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
import traceback
from pathlib import Path
from typing import Any

import pulumi

from .config_lines import SECRET_SHOWN, locate, segments, walk
from .errors import ConfigRefusedError, ProgramError
from .project import SECRET_PLACEHOLDER, ProjectSpec, _qualify, load_project, load_stack_config
from .recorder import EngineCallError

_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # idempotent_messaging/
_PULUMI_DIR = str(Path(pulumi.__file__).resolve().parent)


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


def _config_line(project: ProjectSpec, stack: str) -> tuple[str | None, int | None]:
    """The stack file's `config:` line (where an absent key is added), else the file."""
    stack_file = project.directory / f"Pulumi.{stack}.yaml"
    if not stack_file.exists():
        return None, None
    _, line = walk(stack_file, project.name, [], False)
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
    except (ProgramError, ConfigRefusedError):
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
        file, line = locate(project.directory, project.name, stack, path)
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
        file, line = locate(project.directory, project.name, stack, key)
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
