"""Check a stack written in any Pulumi language from the CLI's JSON instead of running it.

Two documented formats of the Pulumi CLI (the `apitype` definitions of pulumi/pulumi) are read:

``pulumi stack export`` (``UntypedDeployment``: ``{"version": 3, "deployment": DeploymentV3}``)
    the deployed state, checked as ``up``. Of each ``deployment.resources[]`` (``ResourceV3``)
    the fields read are ``urn``, ``type``, ``custom``, ``id``, ``parent``, ``provider``,
    ``inputs``, ``outputs``, ``dependencies``, ``propertyDependencies``, ``external`` (a read
    resource, not validated) and ``sourcePosition`` (``project:///file#line,col``). Resources
    marked ``delete`` (pending deletion) are skipped.
``pulumi preview --json`` (``previewDigest``: ``{"config", "steps": [previewStep], ...}``)
    the planned state, checked as ``preview``. Of each ``steps[]`` the fields read are ``op``
    and ``newState`` (a ``ResourceV3``, read as above; ``outputs``, or ``inputs`` when a step
    has none). Steps that remove a resource (``delete``, ``delete-replaced``,
    ``discard``) have no new state and are skipped; ``config`` gives the stack config
    (``aws:region`` ...).

Property values are Pulumi's JSON property values: secrets (``{"4dabf...": "1b47...",
"plaintext"|"ciphertext"}``) become secrets of their plaintext, or of an unknown when only
ciphertext is there; resource references become the referenced resource's id (its URN for a
component), as the engine hands them to a policy pack; the unknown sentinel stays unknown.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from google.protobuf import struct_pb2

from ..rules.values import UNKNOWN_STRING_SENTINEL
from .errors import OfflineCheckError
from .project import ProjectSpec, StackConfig
from .recorder import RecordedResource
from .runner import ProgramRun

SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
RESOURCE_REFERENCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_REMOVING_OPS = frozenset({"delete", "delete-replaced", "discard", "discard-replaced"})


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
    )


def _stack_and_project(resources: list[RecordedResource], path: Path) -> tuple[str, str]:
    # urn:pulumi:<stack>::<project>::<type>::<name>
    for r in resources:
        parts = r.urn.split("::")
        if r.urn.startswith("urn:pulumi:") and len(parts) >= 4:
            return parts[0][len("urn:pulumi:") :], parts[1]
    raise StateFileError(f"{path}: no resource with a `urn:pulumi:<stack>::<project>::...` URN")


def load_state(path: str | os.PathLike[str]) -> ProgramRun:
    """A stack export (mode `up`) or a preview JSON (mode `preview`) as a recorded run."""
    file = Path(path)
    try:
        doc = json.loads(file.read_text())
    except OSError as exc:
        raise StateFileError(f"cannot read {file}: {exc}") from exc
    except ValueError as exc:
        raise StateFileError(f"{file} is not JSON: {exc}") from exc
    root = file.resolve().parent
    config: dict[str, str] = {}
    if isinstance(doc, dict) and isinstance(doc.get("deployment"), dict):
        preview = False
        states = [
            (r, f"{file}: deployment.resources[{i}]")
            for i, r in enumerate(doc["deployment"].get("resources") or [])
            if isinstance(r, dict) and not r.get("delete")
        ]
    elif isinstance(doc, dict) and isinstance(doc.get("steps"), list):
        preview = True
        states = [
            (step["newState"], f"{file}: steps[{i}].newState")
            for i, step in enumerate(doc["steps"])
            if isinstance(step, dict)
            and step.get("op") not in _REMOVING_OPS
            and isinstance(step.get("newState"), dict)
        ]
        config = {
            str(k): v if isinstance(v, str) else json.dumps(v)
            for k, v in (doc.get("config") or {}).items()
        }
    else:
        raise StateFileError(
            f"{file} is neither a `pulumi stack export` file (`deployment.resources`) nor "
            f"`pulumi preview --json` output (`steps`)"
        )
    resources = [_resource(state, root, where) for state, where in states]
    if preview:
        for r in resources:
            if r.custom and not r.read and not r.type.startswith("pulumi:"):
                # What the provider computes on create is unknown in a preview, as the
                # in-process runner shows it (an absent value would mean "the AWS default").
                computed = ["arn", "id"] + (["url"] if r.type == "aws:sqs/queue:Queue" else [])
                for key in computed:
                    if key not in r.outputs_struct.fields:
                        r.outputs_struct[key] = UNKNOWN_STRING_SENTINEL
    stack, project_name = _stack_and_project(resources, file)
    project = ProjectSpec(root, project_name, file, {})
    return ProgramRun(project, stack, preview, StackConfig(config, []), resources)
