"""Check a stack written in any Pulumi language from the CLI's JSON instead of running it.

Two documented formats of the Pulumi CLI (the `apitype` definitions of pulumi/pulumi) are read:

``pulumi stack export`` (``UntypedDeployment``: ``{"version": 3, "deployment": DeploymentV3}``)
    the deployed state, checked as ``up``. Of each ``deployment.resources[]`` (``ResourceV3``)
    the fields read are ``urn``, ``type``, ``custom``, ``id``, ``parent``, ``provider``,
    ``inputs``, ``outputs``, ``dependencies``, ``propertyDependencies``, ``external`` (a read
    resource, not validated), the options a policy pack sees (``protect``, ``aliases``,
    ``ignoreChanges``, ``additionalSecretOutputs``) and ``sourcePosition``
    (``project:///file#line,col``). Resources marked ``delete`` (pending deletion) are skipped.
``pulumi preview --json`` (``previewDigest``: ``{"config", "steps": [previewStep], ...}``;
``pulumi destroy --preview-only --json`` writes the same digest, of ``delete`` steps only)
    the planned state, checked as ``preview``. Every step kind is read (``same``, ``create``,
    ``update``, ``replace``, ``create-replacement``, ``delete-replaced``, ``delete``,
    ``discard``, ``read``, ``import``, ``refresh`` ...), each resource ONCE per URN (with
    ``--show-replacement-steps`` a replaced resource is listed as ``create-replacement``,
    ``replace`` and ``delete-replaced``): of each ``steps[]`` the fields read are ``op``,
    ``urn``, ``oldState`` and ``newState`` (``ResourceV3``, read as above; ``outputs``, or
    ``inputs`` when a state has none; ``retainOnDelete`` too) and ``replaceReasons``. A
    resource the plan removes (``delete``, ``delete-replaced`` alone, ``discard``,
    ``discard-replaced``) comes from its ``oldState`` and is not part of the stack the rules
    check (it is gone afterwards) but is a planned change (``plan.py``); every other resource
    comes from its ``newState``. ``config`` gives the stack config
    (``aws:region`` ...).

A preview document is partial when it lacks resources a rule needs: ``pulumi preview --json``
leaves out unchanged resources unless ``--show-sames``. ``load_documents`` refuses
(``PartialDocumentError``, exit 2) a preview of an existing stack (an ``update``, ``replace``,
``delete`` ... step) with no ``same`` step, one whose ``changeSummary`` counts more unchanged
resources than it lists, and one whose resources name (``parent``, ``provider``,
``dependencies``, ``propertyDependencies``, a property value) a URN of the stack it lacks. The
fix is ``pulumi preview --json --show-sames``, or the stack export given too
(``--state preview.json --state stack-export.json``): the export's resources the preview does
not list are then loaded as unchanged. A destroy preview (it deletes the stack's root
``pulumi:pulumi:Stack``) lists every resource and is complete.

Property values are Pulumi's JSON property values: secrets (``{"4dabf...": "1b47...",
"plaintext"|"ciphertext"}``) become secrets of their plaintext, or of an unknown when only
ciphertext is there; resource references become the referenced resource's id (its URN for a
component), as the engine hands them to a policy pack; the unknown sentinel stays unknown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from google.protobuf import struct_pb2

from ..rules.values import UNKNOWN_STRING_SENTINEL
from .errors import OfflineCheckError, PartialDocumentError
from .project import STACK_TYPE, ProjectSpec, StackConfig
from .recorder import RecordedResource
from .runner import ProgramRun

SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
RESOURCE_REFERENCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
# Step ops (pulumi/pkg/resource/deploy/step.go `StepOps`).
REMOVING_OPS = frozenset(
    {"delete", "delete-replaced", "discard", "discard-replaced", "remove-pending-replace"}
)
REPLACING_OPS = frozenset(
    {"replace", "create-replacement", "delete-replaced", "import-replacement"}
)
# Ops only a stack that already has resources can plan.
EXISTING_STACK_OPS = frozenset(
    {
        "update",
        "replace",
        "create-replacement",
        "delete-replaced",
        "delete",
        "discard",
        "discard-replaced",
        "remove-pending-replace",
        "refresh",
        "import-replacement",
        "read-replacement",
    }
)
SHOW_SAMES_FIX = (
    "run `pulumi preview --json --show-sames` (it lists the unchanged resources too), or pass "
    "the stack export as well: `--state preview.json --state stack-export.json` (from "
    "`pulumi stack export --file stack-export.json`)"
)


class StateFileError(OfflineCheckError):
    """The file is not a stack export or preview JSON; the message says what is missing."""


def _property_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_property_value(v) for v in value]
    if not isinstance(value, dict):
        return value
    sig = value.get(SECRET_SIG_KEY)
    if sig == SECRET_SIG or (sig is not None and ("ciphertext" in value or "plaintext" in value)):
        if "plaintext" in value:
            plain = _property_value(json.loads(value["plaintext"]))
        elif "value" in value:
            plain = _property_value(value["value"])
        else:  # only the stack's secrets provider could decrypt it
            plain = UNKNOWN_STRING_SENTINEL
        return {SECRET_SIG_KEY: SECRET_SIG, "value": plain}
    if sig == RESOURCE_REFERENCE_SIG:
        return value.get("id") or value.get("urn") or UNKNOWN_STRING_SENTINEL
    return {k: _property_value(v) for k, v in value.items()}


def _struct(values: Any) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    if isinstance(values, dict):
        struct.update(_property_value(values))
    return struct


def _source(position: Any, root: Path) -> tuple[str | None, int | None]:
    """`project:///__main__.py#12,5` -> (root/__main__.py, 12)."""
    if not isinstance(position, str) or not position:
        return None, None
    parsed = urlparse(position)
    line_part = parsed.fragment.split(",")[0]
    line = int(line_part) if line_part.isdigit() else None
    path = unquote(parsed.path)
    if parsed.scheme == "project":
        path = str(root / path.lstrip("/"))
    return path or None, line


def _resource(state: dict[str, Any], root: Path, where: str) -> RecordedResource:
    """A ResourceV3 as the recorder would have recorded it."""
    for key in ("urn", "type"):
        if not isinstance(state.get(key), str):
            raise StateFileError(f"{where}: missing string `{key}` (a ResourceV3 needs it)")
    urn, typ = state["urn"], state["type"]
    file, line = _source(state.get("sourcePosition"), root)
    outputs = state.get("outputs")
    property_dependencies = state.get("propertyDependencies") or {}
    return RecordedResource(
        type=typ,
        name=urn.rsplit("::", 1)[-1],
        urn=urn,
        id=str(state.get("id") or ""),
        custom=bool(state.get("custom")),
        parent=state.get("parent") or None,
        dependencies=list(state.get("dependencies") or []),
        property_dependencies={k: list(v) for k, v in property_dependencies.items()},
        provider=state.get("provider") or None,
        inputs_struct=_struct(state.get("inputs")),
        outputs_struct=_struct(outputs if outputs else state.get("inputs")),
        source_file=file,
        source_line=line,
        read=bool(state.get("external")),
        # The resource options a policy pack sees (`PolicyResource.opts`).
        protect=bool(state.get("protect")),
        ignore_changes=[str(k) for k in state.get("ignoreChanges") or []],
        additional_secret_outputs=[str(k) for k in state.get("additionalSecretOutputs") or []],
        aliases=[str(a) for a in state.get("aliases") or [] if isinstance(a, str)],
    )


@dataclass
class PlannedChange:
    """What the plan does to one resource (one URN, however many steps list it)."""

    urn: str
    op: str  # `replace` for any replacement step; else the step's op (`same` from an export)
    ops: list[str]  # every op the document lists for the URN, in document order
    old: RecordedResource | None  # its state before the plan (oldState), when the step has it
    new: RecordedResource | None  # its state after the plan (newState); None when removed
    replace_reasons: list[str] = field(default_factory=list)
    protect: bool = False
    retain_on_delete: bool = False

    @property
    def removed(self) -> bool:
        return self.new is None

    @property
    def resource(self) -> RecordedResource:
        resource = self.new or self.old
        assert resource is not None
        return resource


@dataclass
class StateDocument:
    """The documents given with `--state`, as one recorded run plus the plan (if a preview)."""

    run: ProgramRun  # the stack after the plan: what the rules check (removed resources absent)
    changes: list[PlannedChange]  # one per URN; empty for a stack export alone
    files: list[Path]
    is_preview: bool
    destroy: bool = False  # a destroy preview (the root stack resource is deleted)

    @property
    def removed(self) -> list[RecordedResource]:
        return [c.resource for c in self.changes if c.removed]


def _stack_and_project(resources: Iterable[RecordedResource], path: Path) -> tuple[str, str]:
    # urn:pulumi:<stack>::<project>::<type>::<name>
    for r in resources:
        parts = r.urn.split("::")
        if r.urn.startswith("urn:pulumi:") and len(parts) >= 4:
            return parts[0][len("urn:pulumi:") :], parts[1]
    raise StateFileError(f"{path}: no resource with a `urn:pulumi:<stack>::<project>::...` URN")


def _read_json(file: Path) -> Any:
    try:
        return json.loads(file.read_text())
    except OSError as exc:
        raise StateFileError(f"cannot read {file}: {exc}") from exc
    except ValueError as exc:
        raise StateFileError(f"{file} is not JSON: {exc}") from exc


def _is_export(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("deployment"), dict)


def _is_preview(doc: Any) -> bool:
    # `steps` is `omitempty`: a preview that shows no step has only the summary.
    return isinstance(doc, dict) and (
        isinstance(doc.get("steps"), list) or ("changeSummary" in doc and "deployment" not in doc)
    )


def _export_states(doc: dict[str, Any], file: Path) -> list[tuple[dict[str, Any], str]]:
    resources = doc["deployment"].get("resources") or []
    if not isinstance(resources, list):
        raise StateFileError(f"{file}: deployment.resources is not a list")
    return [
        (r, f"{file}: deployment.resources[{i}]")
        for i, r in enumerate(resources)
        if isinstance(r, dict) and not r.get("delete")
    ]


def _effective_op(ops: Sequence[str]) -> str:
    if any(op in REPLACING_OPS for op in ops):
        return "replace"
    if "delete" in ops:
        return "delete"
    return ops[0]


def _preview_changes(doc: dict[str, Any], file: Path, root: Path) -> list[PlannedChange]:
    """One PlannedChange per URN, in the order the document first lists each."""
    grouped: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, step in enumerate(doc.get("steps") or []):
        if not isinstance(step, dict):
            raise StateFileError(f"{file}: steps[{i}] is not an object")
        state = step.get("newState") or step.get("oldState")
        urn = step.get("urn") or (state.get("urn") if isinstance(state, dict) else None)
        if not isinstance(urn, str) or not isinstance(step.get("op"), str):
            raise StateFileError(f"{file}: steps[{i}] needs a string `op` and `urn`")
        grouped.setdefault(urn, []).append((i, step))
    changes: list[PlannedChange] = []
    for urn, steps in grouped.items():
        ops = [str(step["op"]) for _, step in steps]
        new_state: tuple[int, dict[str, Any]] | None = None
        old_state: tuple[int, dict[str, Any]] | None = None
        reasons: list[str] = []
        for i, step in steps:
            if step["op"] not in REMOVING_OPS and isinstance(step.get("newState"), dict):
                new_state = (i, step["newState"])
            if old_state is None and isinstance(step.get("oldState"), dict):
                old_state = (i, step["oldState"])
            reasons += [str(r) for r in step.get("replaceReasons") or [] if str(r) not in reasons]
        if new_state is None and old_state is None:
            raise StateFileError(f"{file}: the steps of {urn} have neither newState nor oldState")
        new = (
            _resource(new_state[1], root, f"{file}: steps[{new_state[0]}].newState")
            if (new_state)
            else None
        )
        old = (
            _resource(old_state[1], root, f"{file}: steps[{old_state[0]}].oldState")
            if (old_state)
            else None
        )
        # `protect` as the plan leaves it: the engine applies a newState's `protect` (absent:
        # false, ResourceV3 omits it) before it replaces, so one `pulumi up` may unprotect and
        # replace; a removed resource keeps its oldState's.
        flags = new_state[1] if new_state else (old_state[1] if old_state else {})
        changes.append(
            PlannedChange(
                urn=urn,
                op=_effective_op(ops),
                ops=ops,
                old=old,
                new=new,
                replace_reasons=reasons,
                protect=bool(flags.get("protect")),
                retain_on_delete=bool((old_state[1] if old_state else flags).get("retainOnDelete")),
            )
        )
    return changes


def _mark_computed_unknown(resources: Iterable[RecordedResource]) -> None:
    """What the provider computes on create is unknown in a preview, as the in-process runner
    shows it (an absent value would mean "the AWS default")."""
    for r in resources:
        if r.custom and not r.read and not r.type.startswith("pulumi:"):
            computed = ["arn", "id"] + (["url"] if r.type == "aws:sqs/queue:Queue" else [])
            for key in computed:
                if key not in r.outputs_struct.fields:
                    r.outputs_struct[key] = UNKNOWN_STRING_SENTINEL


def _urn_refs(value: Any, prefix: str) -> Iterable[str]:
    if isinstance(value, str):
        if value.startswith(prefix):
            yield value
    elif isinstance(value, list):
        for v in value:
            yield from _urn_refs(v, prefix)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _urn_refs(v, prefix)


def references(r: RecordedResource, prefix: str) -> set[str]:
    """The URNs of this stack (`prefix` = `urn:pulumi:<stack>::<project>::`) that `r` names:
    parent, provider, dependencies, property dependencies and property values."""
    found = set(r.dependencies)
    for urns in r.property_dependencies.values():
        found.update(urns)
    if r.parent:
        found.add(r.parent)
    if r.provider:  # `<provider urn>::<provider id>`
        found.add(r.provider.rsplit("::", 1)[0] if r.provider.count("::") > 3 else r.provider)
    found.update(_urn_refs(r.inputs, prefix))
    found.update(_urn_refs(r.outputs, prefix))
    return {u for u in found if u.startswith(prefix)}


def _check_complete(
    doc: dict[str, Any],
    file: Path,
    changes: list[PlannedChange],
    prefix: str,
) -> bool:
    """Raise PartialDocumentError when the preview lacks resources; True for a destroy."""
    ops = {op for c in changes for op in c.ops}
    destroy = (
        any(c.removed and c.resource.type == STACK_TYPE and c.op == "delete" for c in changes)
        and ops <= REMOVING_OPS
    )
    if destroy:
        return True
    same = sum(1 for c in changes if "same" in c.ops)
    summary = doc.get("changeSummary")
    counted = summary.get("same") if isinstance(summary, dict) else None
    if isinstance(counted, int) and counted > same:
        raise PartialDocumentError(
            f"{file} is a partial preview: its changeSummary counts {counted} unchanged "
            f"resource(s) but it lists {same}; the rules need them to judge the stack. "
            f"{SHOW_SAMES_FIX[0].upper()}{SHOW_SAMES_FIX[1:]}",
        )
    existing = sorted(ops & EXISTING_STACK_OPS)
    if existing and same == 0:
        raise PartialDocumentError(
            f"{file} is a partial preview: it changes an existing stack ({', '.join(existing)} "
            f"steps) but lists no unchanged (`same`) resource, which `pulumi preview --json` "
            f"leaves out unless `--show-sames`; the rules need them to judge the stack. "
            f"{SHOW_SAMES_FIX[0].upper()}{SHOW_SAMES_FIX[1:]}",
        )
    # An aliased resource's old state keeps its former URN (and names its former relatives).
    known = {c.urn for c in changes} | {c.old.urn for c in changes if c.old is not None}
    missing: dict[str, set[str]] = {}
    for c in changes:
        for r in (c.new, c.old):
            if r is None:
                continue
            for urn in references(r, prefix) - known:
                missing.setdefault(urn, set()).add(c.urn)
    if missing:
        shown = sorted(missing)[:5]
        more = f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
        raise PartialDocumentError(
            f"{file} is a partial preview: {len(missing)} resource(s) of the stack that its "
            f"resources name (parent, provider, dependency or property) are not in it: "
            f"{', '.join(shown)}{more}. `pulumi preview --json` leaves unchanged resources out "
            f"unless `--show-sames`; the rules need them to judge the stack. "
            f"{SHOW_SAMES_FIX[0].upper()}{SHOW_SAMES_FIX[1:]}",
            sorted(missing),
        )
    return False


def load_documents(
    paths: Sequence[str | os.PathLike[str]], *, source_root: str | os.PathLike[str] | None = None
) -> StateDocument:
    """One stack export (mode `up`), one preview JSON (mode `preview`), or a preview plus the
    stack's export (the export's resources the preview does not list are unchanged).

    `source_root` is the project directory `project:///` source positions are relative to
    (default: the directory of the first document). Raises StateFileError for a file that is
    neither format and PartialDocumentError for a preview that lacks resources."""
    if not paths:
        raise StateFileError("no state file given")
    files = [Path(p) for p in paths]
    docs = [(f, _read_json(f)) for f in files]
    exports = [(f, d) for f, d in docs if _is_export(d)]
    previews = [(f, d) for f, d in docs if not _is_export(d) and _is_preview(d)]
    for f, d in docs:
        if not _is_export(d) and not _is_preview(d):
            raise StateFileError(
                f"{f} is neither a `pulumi stack export` file (`deployment.resources`) nor "
                f"`pulumi preview --json` output (`steps`)"
            )
    if len(exports) > 1 or len(previews) > 1:
        raise StateFileError(
            f"give at most one preview and one stack export, of the same stack; got "
            f"{len(previews)} preview(s) and {len(exports)} export(s)"
        )
    root = Path(source_root).resolve() if source_root is not None else files[0].resolve().parent
    export_resources: list[RecordedResource] = []
    if exports:
        f, d = exports[0]
        export_resources = [_resource(s, root, where) for s, where in _export_states(d, f)]
    if not previews:
        stack, project_name = _stack_and_project(export_resources, exports[0][0])
        project = ProjectSpec(root, project_name, exports[0][0], {})
        run = ProgramRun(project, stack, False, StackConfig({}, []), export_resources)
        return StateDocument(run, [], files, is_preview=False)

    file, doc = previews[0]
    changes = _preview_changes(doc, file, root)
    if not changes and not export_resources:
        summary = doc.get("changeSummary") or {}
        if isinstance(summary, dict) and summary.get("same"):
            raise PartialDocumentError(
                f"{file} is a partial preview: it lists no step, but its changeSummary counts "
                f"{summary['same']} unchanged resource(s). {SHOW_SAMES_FIX[0].upper()}"
                f"{SHOW_SAMES_FIX[1:]}"
            )
        raise StateFileError(f"{file} lists no step: there is no resource to check")
    stack, project_name = _stack_and_project([c.resource for c in changes] + export_resources, file)
    prefix = f"urn:pulumi:{stack}::{project_name}::"
    if export_resources:
        other = _stack_and_project(export_resources, exports[0][0])
        if other != (stack, project_name):
            raise StateFileError(
                f"{exports[0][0]} is the export of stack {other[0]} of project {other[1]}, "
                f"but {file} previews stack {stack} of project {project_name}"
            )
    _mark_computed_unknown(c.new for c in changes if c.new is not None and c.op != "same")
    listed = {c.urn for c in changes}
    unchanged = [
        PlannedChange(urn=r.urn, op="same", ops=["same"], old=r, new=r)
        for r in export_resources
        if r.urn not in listed
    ]
    destroy = _check_complete(doc, file, changes + unchanged, prefix)
    # The export's order (dependencies first), each resource in its planned state, then the
    # resources the plan creates.
    by_urn = {c.urn: c for c in changes + unchanged}
    ordered = [by_urn[r.urn] for r in export_resources] + [
        c for c in changes if c.urn not in {r.urn for r in export_resources}
    ]
    config = {
        str(k): v if isinstance(v, str) else json.dumps(v)
        for k, v in (doc.get("config") or {}).items()
    }
    resources = [c.new for c in ordered if c.new is not None]
    project = ProjectSpec(root, project_name, file, {})
    run = ProgramRun(project, stack, True, StackConfig(config, []), resources)
    return StateDocument(run, ordered, files, is_preview=True, destroy=destroy)


def load_state(path: str | os.PathLike[str]) -> ProgramRun:
    """A stack export (mode `up`) or a preview JSON (mode `preview`) as a recorded run (the
    stack after the plan); see `load_documents` for the plan itself."""
    return load_documents([path]).run
