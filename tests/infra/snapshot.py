"""A normalised recording of every stack's resources, and its comparison with the committed one.

The reference program (``__main__.py``) runs under the offline engine's recorder
(``idempotent_messaging.offline.run_program``) once per stack file (``Pulumi.<stack>.yaml``,
the local targets included) as ``pulumi up`` and as ``pulumi preview`` would run it. Each
registration is kept as its type, name, parent, inputs and resource options (dependencies,
property dependencies, protect, aliases, ...), sorted by URN, in
``tests/infra/snapshots/<stack>-<mode>.json``.

    .venv/bin/python -m tests.infra.snapshot --write   # regenerate (make snapshot)
    .venv/bin/python -m tests.infra.snapshot           # compare, as tests/infra/test_snapshot.py

Normalised so the file is the same on every machine and every run: URNs lose their
``urn:pulumi:<stack>::<project>::`` prefix, integral floats become integers (the wire has one
number type), unknowns become ``UNKNOWN_TEXT``, and a code asset or archive becomes one
content digest (``ARCHIVE_PREFIX``...). Source positions and the provider plugin's version
are left out: neither is something this program decides.

Differences the comparison accepts, each by name (``ALLOWED_DIFFERENCES``), and nothing else:
- ``code-asset-hashes``: a code archive's digest; archive contents change whenever code moves.
- ``idempotency-strategy-env``: the ``IDEMPOTENCY_STRATEGY`` variable of a function, removed
  from the consumers (the runtime no longer reads it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from google.protobuf import json_format

from idempotent_messaging.offline import RecordingMonitor, run_program
from idempotent_messaging.offline import runner as offline_runner
from idempotent_messaging.rules.values import is_unknown
from tests.stages import PROJECT_DIR, stack_files

SNAPSHOT_DIR = Path(__file__).resolve().parent / "snapshots"
MODES = ("up", "preview")
REGENERATE = "make snapshot  (= .venv/bin/python -m tests.infra.snapshot --write)"
UNKNOWN_TEXT = "<unknown>"
ARCHIVE_PREFIX = "code-archive sha256:"
ASSET_PREFIX = "code-asset sha256:"
FUNCTION_TYPE = "aws:lambda/function:Function"

# Pulumi's wire signatures of assets and archives (pulumi.runtime.rpc).
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17"
_ARCHIVE_SIG = "0def7320c3a5731c473e5ecbe6d01bc7"
_SKIPPED_PARTS = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache"})

# Resource options of a RegisterResource request, as the engine receives them (camelCase
# proto names). `dependencies` and `propertyDependencies` are sets: sorted.
_OPTION_FIELDS = (
    "protect",
    "dependencies",
    "propertyDependencies",
    "provider",
    "providers",
    "deleteBeforeReplace",
    "ignoreChanges",
    "additionalSecretOutputs",
    "aliasSpecs",
    "aliasURNs",
    "aliases",
    "customTimeouts",
    "importId",
    "replaceOnChanges",
    "retainOnDelete",
    "deletedWith",
    "remote",
    "hideDiffs",
    "replaceWith",
    "replace_with",
    "replacementTrigger",
    "replacement_trigger",
)


# --- Recording -----------------------------------------------------------------------------------


class _OptionsMonitor(RecordingMonitor):
    """The engine's recorder, also keeping each registration's resource options by URN (the
    RecordedResource has the dependencies but not protect, aliases, ignore_changes, ...)."""

    last: _OptionsMonitor | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.options: dict[str, dict[str, Any]] = {}
        _OptionsMonitor.last = self

    def _record(self, request: Any, response: Any, *, read: bool, remote: bool = False) -> None:
        super()._record(request, response, read=read, remote=remote)
        wire = json_format.MessageToDict(request)
        self.options[response.urn] = {k: wire[k] for k in _OPTION_FIELDS if k in wire}
        if read:
            self.options[response.urn]["read"] = True


@contextmanager
def recording_options() -> Iterator[Callable[[], dict[str, dict[str, Any]]]]:
    """While active, every run of the offline engine (``run_program``, ``run_function``: the
    infra harness too) also keeps each registration's resource options. Yields a function
    returning the last run's: URN -> options by their wire names (``protect``,
    ``retainOnDelete``, ...; an option left unset is absent)."""

    def last() -> dict[str, dict[str, Any]]:
        assert _OptionsMonitor.last is not None, "no program ran"
        return _OptionsMonitor.last.options

    _OptionsMonitor.last = None
    with mock.patch.object(offline_runner, "RecordingMonitor", _OptionsMonitor):
        yield last


def record(
    stack: str,
    mode: str,
    project_dir: Path = PROJECT_DIR,
    *,
    config_overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The normalised recording of one stack in one mode (``up`` or ``preview``);
    ``config_overrides`` replace stack-file keys, as ``run_program`` takes them."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: must be one of {MODES}")
    with recording_options():
        run = run_program(
            project_dir, stack, preview=mode == "preview", config_overrides=config_overrides
        )
    monitor = _OptionsMonitor.last
    assert monitor is not None
    prefix = f"urn:pulumi:{stack}::{run.project.name}::"

    def short(urn: str | None) -> str | None:
        return urn.removeprefix(prefix) if urn else None

    def options(urn: str) -> dict[str, Any]:
        raw = monitor.options.get(urn, {})
        out: dict[str, Any] = {}
        for key, value in raw.items():
            if key == "dependencies":
                value = sorted(short(u) for u in value)
            elif key == "propertyDependencies":
                value = {
                    prop: sorted(short(u) for u in deps.get("urns", []))
                    for prop, deps in sorted(value.items())
                }
            elif key in ("aliasURNs", "deletedWith", "provider"):
                value = [short(u) for u in value] if isinstance(value, list) else short(value)
            out[key] = normalise(value, project_dir)
        return out

    resources = [
        {
            "urn": short(r.urn),
            "type": r.type,
            "name": r.name,
            "parent": short(r.parent),
            "custom": r.custom,
            "inputs": normalise(r.inputs, project_dir),
            "options": options(r.urn),
        }
        for r in run.resources
    ]
    resources.sort(key=lambda r: r["urn"])
    return {"stack": stack, "mode": mode, "resources": resources}


def normalise(value: Any, project_dir: Path = PROJECT_DIR) -> Any:
    """Wire values made machine- and run-independent (see the module docstring)."""
    if is_unknown(value):
        return UNKNOWN_TEXT
    if isinstance(value, dict):
        if value.get(_SIG_KEY) == _ARCHIVE_SIG:
            return ARCHIVE_PREFIX + _digest(value)
        if value.get(_SIG_KEY) == _ASSET_SIG:
            return ASSET_PREFIX + _digest(value)
        return {k: normalise(v, project_dir) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [normalise(v, project_dir) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _digest(value: dict[str, Any]) -> str:
    """One sha256 over an asset's or archive's contents (keys and file bytes)."""
    sha = hashlib.sha256()
    for key, data in sorted(_contents(value, "")):
        sha.update(key.encode() + b"\0" + hashlib.sha256(data).digest())
    return sha.hexdigest()


def _contents(value: dict[str, Any], key: str) -> Iterator[tuple[str, bytes]]:
    if "text" in value:
        yield key, str(value["text"]).encode()
    elif "assets" in value:
        for sub, child in value["assets"].items():
            yield from _contents(child, f"{key}/{sub}" if key else sub)
    elif "path" in value:
        path = Path(value["path"])
        if path.is_dir():
            for file in sorted(path.rglob("*")):
                relative = file.relative_to(path)
                skipped = _SKIPPED_PARTS.intersection(relative.parts) or file.suffix == ".pyc"
                if file.is_file() and not skipped:
                    yield f"{key}/{relative.as_posix()}", file.read_bytes()
        elif path.is_file():
            yield key, path.read_bytes()
        else:
            yield key, f"missing:{path.name}".encode()
    elif "uri" in value:
        yield key, str(value["uri"]).encode()


# --- Snapshot files ------------------------------------------------------------------------------


def snapshot_path(stack: str, mode: str) -> Path:
    return SNAPSHOT_DIR / f"{stack}-{mode}.json"


def runs(project_dir: Path = PROJECT_DIR) -> list[tuple[str, str]]:
    """Every (stack, mode) the snapshot covers: every stack file, in both modes."""
    return [(stack, mode) for stack in stack_files(project_dir) for mode in MODES]


def dumps(recording: dict[str, Any]) -> str:
    return json.dumps(recording, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(project_dir: Path = PROJECT_DIR) -> list[Path]:
    SNAPSHOT_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for stack, mode in runs(project_dir):
        path = snapshot_path(stack, mode)
        path.write_text(dumps(record(stack, mode, project_dir)))
        written.append(path)
    return written


def load(stack: str, mode: str) -> dict[str, Any]:
    return json.loads(snapshot_path(stack, mode).read_text())


# --- Comparison ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    resource: str
    """The resource's short URN."""
    path: str
    """Where in the resource, e.g. ``inputs.environment.variables.LOG_LEVEL``; "" for an added
    or removed resource."""
    before: Any
    after: Any

    def __str__(self) -> str:
        where = f" {self.path}:" if self.path else ""
        return f"{self.resource}{where} snapshot {_show(self.before)} -> now {_show(self.after)}"


_ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "<absent>"})()


def _show(value: Any) -> str:
    text = repr(value) if value is _ABSENT else json.dumps(value, sort_keys=True)
    return text if len(text) <= 200 else text[:197] + "..."


def _code_asset_hash(resource: dict[str, Any], path: str, before: Any, after: Any) -> bool:
    """A code archive (or asset) whose digest changed: archive contents change whenever code
    moves, whatever the program deploys."""
    del resource, path
    return any(
        isinstance(before, str)
        and isinstance(after, str)
        and before.startswith(prefix)
        and after.startswith(prefix)
        for prefix in (ARCHIVE_PREFIX, ASSET_PREFIX)
    )


def _idempotency_strategy_env(resource: dict[str, Any], path: str, before: Any, after: Any) -> bool:
    """The consumers' removed IDEMPOTENCY_STRATEGY variable (the runtime has one way to run a
    batch; the component stopped setting it). Only its removal is accepted."""
    del before
    return (
        resource["type"] == FUNCTION_TYPE
        and path == "inputs.environment.variables.IDEMPOTENCY_STRATEGY"
        and after is _ABSENT
    )


ALLOWED_DIFFERENCES: dict[str, Callable[[dict[str, Any], str, Any, Any], bool]] = {
    "code-asset-hashes": _code_asset_hash,
    "idempotency-strategy-env": _idempotency_strategy_env,
}
"""The named differences the comparison accepts; every other difference fails it."""


def _allowed(resource: dict[str, Any], path: str, before: Any, after: Any) -> bool:
    return any(accept(resource, path, before, after) for accept in ALLOWED_DIFFERENCES.values())


def differences(snapshot: dict[str, Any], current: dict[str, Any]) -> list[Difference]:
    """Every difference of ``current`` from ``snapshot`` that no ALLOWED_DIFFERENCES accepts."""
    before = {r["urn"]: r for r in snapshot["resources"]}
    after = {r["urn"]: r for r in current["resources"]}
    found: list[Difference] = []
    for urn in sorted(before.keys() | after.keys()):
        if urn not in after:
            found.append(Difference(urn, "", "present", _ABSENT))
        elif urn not in before:
            found.append(Difference(urn, "", _ABSENT, "present"))
        else:
            resource = after[urn]
            for path, old, new in _walk("", before[urn], resource):
                if not _allowed(resource, path, old, new):
                    found.append(Difference(urn, path, old, new))
    return found


def _walk(path: str, before: Any, after: Any) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys()):
            sub = f"{path}.{key}" if path else key
            yield from _walk(sub, before.get(key, _ABSENT), after.get(key, _ABSENT))
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (old, new) in enumerate(zip(before, after, strict=True)):
            yield from _walk(f"{path}[{i}]", old, new)
    elif (parsed := _json_pair(before, after)) is not None:
        # Policies, dashboards, redrive policies: JSON strings, compared as what they encode.
        yield from _walk(f"{path}<json>", *parsed)
    elif before != after or type(before) is not type(after):
        yield path, before, after


def _json_pair(before: Any, after: Any) -> tuple[Any, Any] | None:
    """Both values decoded, when both are JSON-encoded objects or arrays that differ."""
    if not (isinstance(before, str) and isinstance(after, str)) or before == after:
        return None
    if not (before[:1] in "{[" and after[:1] in "{[" and before and after):
        return None
    try:
        return json.loads(before), json.loads(after)
    except ValueError:
        return None


def report(stack: str, mode: str, found: list[Difference]) -> str:
    lines = [
        f"stack {stack} ({mode}) differs from {snapshot_path(stack, mode).relative_to(PROJECT_DIR)}"
        f" in {len(found)} place(s):",
        *(f"  {d}" for d in found),
        f"If the change is intended, regenerate the snapshots: {REGENERATE}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.infra.snapshot", description=__doc__)
    parser.add_argument("--write", action="store_true", help="regenerate the snapshot files")
    args = parser.parse_args(argv)
    if args.write:
        for path in write():
            print(f"wrote {path.relative_to(PROJECT_DIR)}")
        return 0
    failed = False
    for stack, mode in runs():
        if not snapshot_path(stack, mode).exists():
            print(f"stack {stack} ({mode}): no snapshot; {REGENERATE}")
            failed = True
            continue
        found = differences(load(stack, mode), record(stack, mode))
        if found:
            print(report(stack, mode, found))
            failed = True
        else:
            print(f"stack {stack} ({mode}): matches the snapshot")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
