"""Feed a recorded program run to the pack through pulumi-policy's own analyzer servicer.

This is the path `pulumi preview --policy-pack policy` drives over gRPC, taken in-process:
`Configure` with the effective policy config (enforcement levels + properties, defaults from
each policy's schema, as the CLI computes them), `Analyze` once per resource with its inputs,
then `AnalyzeStack` with every resource's outputs, parent, dependencies and property
dependencies. Diagnostics come back exactly as the CLI would receive them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import struct_pb2
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from policy.pack import PACK_DESCRIPTION, PACK_NAME, POLICIES
from policy.program import STACK_TYPE, ProgramRun

_LEVELS = {
    "advisory": proto.ADVISORY,
    "mandatory": proto.MANDATORY,
    "remediate": proto.REMEDIATE,
    "disabled": proto.DISABLED,
}
_LEVEL_NAMES = {v: k for k, v in _LEVELS.items()}
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "number": (int, float),
    "integer": (int,),
    "string": (str,),
    "array": (list,),
    "boolean": (bool,),
    "object": (dict,),
}


class PolicyConfigError(ValueError):
    """The policy config file is malformed; the message names the key and the problem."""


@dataclass
class Violation:
    policy: str
    enforcement: str
    urn: str
    type: str
    name: str
    message: str
    file: str | None = None
    line: int | None = None
    component_file: str | None = None
    component_line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def pack_version() -> str:
    doc = yaml.safe_load((Path(__file__).parent / "PulumiPolicy.yaml").read_text()) or {}
    return str(doc.get("version") or "0.0.1")


def _level(value: Any, where: str) -> int:
    if not isinstance(value, str) or value not in _LEVELS:
        raise PolicyConfigError(
            f"{where}: enforcementLevel {value!r} is not one of {sorted(_LEVELS)}"
        )
    return _LEVELS[value]


def effective_config(user: Mapping[str, Any] | None) -> dict[str, tuple[int, dict[str, Any]]]:
    """Policy name -> (enforcement level, properties), as the CLI sends it to `Configure`.

    `user` is the CLI's policy-config JSON: {"all": level | {"enforcementLevel": level},
    "<policy>": level | {"enforcementLevel": level, "<property>": value, ...}}.
    """
    user = dict(user or {})
    by_name = {p.name: p for p in POLICIES}
    unknown = sorted(set(user) - set(by_name) - {"all"})
    if unknown:
        raise PolicyConfigError(
            f"policy config names unknown policies {unknown}; known: {sorted(by_name)}"
        )
    all_level: int | None = None
    if "all" in user:
        entry = user["all"]
        value = entry.get("enforcementLevel") if isinstance(entry, dict) else entry
        all_level = _level(value, "all")
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for name, policy in by_name.items():
        default_level = policy.enforcement_level or EnforcementLevel.ADVISORY
        level = all_level if all_level is not None else _LEVELS[default_level.value]
        schema = policy.config_schema.properties if policy.config_schema else {}
        props = {k: v["default"] for k, v in schema.items() if "default" in v}
        entry = user.get(name)
        if isinstance(entry, str):
            level = _level(entry, name)
        elif isinstance(entry, dict):
            for key, value in entry.items():
                if key == "enforcementLevel":
                    level = _level(value, name)
                    continue
                if key not in schema:
                    raise PolicyConfigError(
                        f"{name}: unknown property {key!r}; the policy accepts "
                        f"{sorted(schema) or 'no properties'}"
                    )
                expected = _JSON_TYPES.get(str(schema[key].get("type")), (object,))
                if not isinstance(value, expected) or isinstance(value, bool) != (bool in expected):
                    raise PolicyConfigError(
                        f"{name}.{key}: {value!r} is not of type {schema[key].get('type')}"
                    )
                if "minimum" in schema[key] and value < schema[key]["minimum"]:
                    raise PolicyConfigError(
                        f"{name}.{key}: {value!r} is below the minimum {schema[key]['minimum']}"
                    )
                props[key] = value
        elif entry is not None:
            raise PolicyConfigError(f"{name}: expected a level string or an object, got {entry!r}")
        out[name] = (level, props)
    return out


def load_config_file(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise PolicyConfigError(f"cannot read policy config {path}: {exc}") from exc
    except ValueError as exc:
        raise PolicyConfigError(f"policy config {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise PolicyConfigError(f"policy config {path} must be a JSON object")
    return data


def make_servicer(config: Mapping[str, Any] | None = None) -> _PolicyAnalyzerServicer:
    servicer = _PolicyAnalyzerServicer(
        PACK_NAME, pack_version(), POLICIES, EnforcementLevel.ADVISORY, None, PACK_DESCRIPTION
    )
    request = proto.ConfigureAnalyzerRequest()
    for name, (level, props) in effective_config(config).items():
        properties = struct_pb2.Struct()
        properties.update(props)
        request.policyConfig[name].CopyFrom(
            proto.PolicyConfig(enforcementLevel=level, properties=properties)  # type: ignore[arg-type]
        )
    servicer.Configure(request, None)
    return servicer


def _strip_description(message: str, policy_name: str) -> str:
    # The servicer prefixes every message with the policy description and a newline.
    for policy in POLICIES:
        if policy.name == policy_name and message.startswith(policy.description + "\n"):
            return message[len(policy.description) + 1 :]
    return message


def analyze(run: ProgramRun, config: Mapping[str, Any] | None = None) -> list[Violation]:
    servicer = make_servicer(config)
    # The CLI tells the analyzer which stack it checks before analyzing it.
    servicer.ConfigureStack(
        proto.AnalyzerStackConfigureRequest(
            stack=run.stack,
            project=run.project.name,
            organization="organization",
            dry_run=run.preview,
            config=run.config.values,
            config_secret_keys=run.config.secret_keys,
        ),
        None,
    )
    by_urn = run.by_urn
    diagnostics: list[tuple[Any, str]] = []
    for r in run.resources:
        if r.type == STACK_TYPE or r.read:
            continue  # a read resource is not created by this program: nothing to validate
        request = proto.AnalyzeRequest(
            type=r.type,
            properties=r.inputs_struct,
            urn=r.urn,
            name=r.name,
            options=proto.AnalyzerResourceOptions(parent=r.parent or ""),
        )
        for diag in servicer.Analyze(request, None).diagnostics:
            diagnostics.append((diag, diag.urn or r.urn))
    stack_request = proto.AnalyzeStackRequest(
        resources=[
            proto.AnalyzerResource(
                type=r.type,
                properties=r.outputs_struct,
                urn=r.urn,
                name=r.name,
                options=proto.AnalyzerResourceOptions(parent=r.parent or ""),
                parent=r.parent or "",
                dependencies=r.dependencies,
                propertyDependencies={
                    k: proto.AnalyzerPropertyDependencies(urns=v)
                    for k, v in r.property_dependencies.items()
                },
            )
            for r in run.resources
        ]
    )
    stack_urn = next((r.urn for r in run.resources if r.type == STACK_TYPE), "")
    for diag in servicer.AnalyzeStack(stack_request, None).diagnostics:
        diagnostics.append((diag, diag.urn or stack_urn))
    violations: list[Violation] = []
    for diag, urn in diagnostics:
        rec = by_urn.get(urn)
        violations.append(
            Violation(
                policy=diag.policyName,
                enforcement=_LEVEL_NAMES.get(diag.enforcementLevel, "advisory"),
                urn=urn,
                type=rec.type if rec else "",
                name=rec.name if rec else urn.rsplit("::", 1)[-1],
                message=_strip_description(diag.message, diag.policyName),
                file=rec.source_file if rec else None,
                line=rec.source_line if rec else None,
                component_file=rec.component_file if rec else None,
                component_line=rec.component_line if rec else None,
            )
        )
    return violations
