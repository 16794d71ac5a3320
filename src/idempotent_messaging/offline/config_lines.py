"""Where a configuration key is written: its line in `Pulumi.<stack>.yaml` or `Pulumi.yaml`.

A key path (``<project>:consumers.orders.visibilityTimeoutSeconds``) is found by walking the
YAML node tree of the stack file's `config:`, then of the project file's defaults, so that a
refused value is shown at the line a team edits. Shared by the refusals of a program
(`offline.refusal`) and of the configuration itself (`offline.project`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

SECRET_SHOWN = "[secret]"
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


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


def walk(file: Path, project: str, parts: list[str | int], defaults: bool) -> tuple[int, int]:
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


def locate(
    directory: Path, project: str, stack: str, path: str | None
) -> tuple[str | None, int | None]:
    """Where the value at `path` is set: `Pulumi.<stack>.yaml`, else `Pulumi.yaml` (its
    default), else (None, None). A partial match (a required key that is absent) points at
    the deepest key that is there."""
    parts = segments(path) if path else []
    stack_file = directory / f"Pulumi.{stack}.yaml"
    project_file = next(
        (directory / n for n in ("Pulumi.yaml", "Pulumi.yml") if (directory / n).exists()),
        None,
    )
    candidates = [(stack_file, False)] + ([(project_file, True)] if project_file else [])
    best: tuple[int, str | None, int | None] = (0, None, None)
    for file, defaults in candidates:
        if not file.exists() or not parts:
            continue
        matched, line = walk(file, project, parts, defaults)
        if matched == len(parts):
            return str(file), line
        if matched > best[0]:
            best = (matched, str(file), line)
    return best[1], best[2]
