"""Feed a recorded program run to the pack through pulumi-policy's own analyzer servicer.

This is the path `pulumi preview --policy-pack policy` drives over gRPC, taken in-process:
`Configure` with the effective policy config (enforcement levels + properties, defaults from
each policy's schema, as the CLI computes them), `Analyze` once per resource with its inputs,
then `AnalyzeStack` with every resource's outputs, parent, dependencies and property
dependencies. Diagnostics come back exactly as the CLI would receive them.

A rule that raises has no verdict. The pack's policies are wrapped at load time (copies; the
pack itself is untouched) so that an exception is caught with the rule's name and the resource
it was examining: for a rule enforced as mandatory (or remediate) the check FAILS CLOSED with
``RuleFailureError`` (exit 2); an advisory rule's failure is reported as a ``RuleError`` beside
the violations. ``UnknownValueError`` is not a failure: the analyzer turns it into the
advisory "can't run during preview", as the CLI shows it.
"""

from __future__ import annotations

import copy
import inspect
import json
import traceback
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _NotApplicableError, _PolicyAnalyzerServicer
from pulumi_policy.proxy import UnknownValueError

from ..rules.pack import (
    PACK_DESCRIPTION,
    PACK_NAME,
    PACK_VERSION,
    POLICIES,
    RAISE_RULE_FAILURES,
)
from .errors import OfflineCheckError, RuleFailureError
from .project import STACK_TYPE
from .runner import ProgramRun

_LEVELS = {
    "advisory": proto.ADVISORY,
    "mandatory": proto.MANDATORY,
    "remediate": proto.REMEDIATE,
    "disabled": proto.DISABLED,
}
_LEVEL_NAMES: dict[int, str] = {int(v): k for k, v in _LEVELS.items()}
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "number": (int, float),
    "integer": (int,),
    "string": (str,),
    "array": (list,),
    "boolean": (bool,),
    "object": (dict,),
}


class PolicyConfigError(OfflineCheckError, ValueError):
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


_REPORT_IT = (
    "This is a fault of the offline engine or the policy pack, not of the program: "
    "report it with this message"
)


def _declared_at(r: Any) -> str:
    return f", declared at {r.source_file}:{r.source_line}" if r.source_file else ""


class AnalysisError(OfflineCheckError):
    """The analyzer itself failed on a resource (not a rule): no verdict."""


@dataclass
class RuleError:
    """A rule raised instead of deciding: its name, the resource it examined, the error."""

    policy: str
    enforcement: str
    urn: str
    error: str
    traceback: str = field(default="", repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "enforcement": self.enforcement,
            "urn": self.urn,
            "error": self.error,
        }


_PASS_THROUGH = (UnknownValueError, _NotApplicableError)


def _urn_in_traceback(exc: BaseException) -> str | None:
    """The resource a stack rule was looking at when it raised: the innermost frame holding a
    policy resource (anything with `urn` and `resource_type`) or a graph node (`urn`, `type`)."""
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            urn = getattr(value, "urn", None)
            typ = getattr(value, "resource_type", None) or getattr(value, "type", None)
            if isinstance(urn, str) and isinstance(typ, str):
                return urn
    return None


def guard_policies(
    policies: list[Any], failures: list[tuple[str, str, BaseException]]
) -> list[Any]:
    """Copies of `policies` whose validate records (policy, urn, exception) instead of raising."""

    def wrap(policy: Any) -> Any:
        guarded = copy.copy(policy)
        original = policy.validate

        def record(args: Any, exc: BaseException) -> None:
            urn = getattr(args, "urn", None) or _urn_in_traceback(exc) or "(stack)"
            failures.append((policy.name, urn, exc))

        def validate(args: Any, report_violation: Any) -> Any:
            try:
                result = original(args, report_violation)
            except _PASS_THROUGH:
                raise
            except Exception as exc:
                record(args, exc)
                return None
            if not inspect.isawaitable(result):
                return result

            async def awaited() -> None:
                try:
                    await result
                except _PASS_THROUGH:
                    raise
                except Exception as exc:
                    record(args, exc.__cause__ if isinstance(exc.__cause__, Exception) else exc)

            return awaited()

        guarded.validate = validate
        return guarded

    return [wrap(p) for p in policies]


def pack_version() -> str:
    """The pack's version: the package's (policy/PulumiPolicy.yaml says the same; a test checks)."""
    return PACK_VERSION


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


def make_servicer(
    config: Mapping[str, Any] | None = None,
    failures: list[tuple[str, str, BaseException]] | None = None,
) -> _PolicyAnalyzerServicer:
    policies = POLICIES if failures is None else guard_policies(POLICIES, failures)
    servicer = _PolicyAnalyzerServicer(
        PACK_NAME, pack_version(), policies, EnforcementLevel.ADVISORY, None, PACK_DESCRIPTION
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


def _options(r: Any) -> Any:
    """The resource options the engine passes an analyzer (after the program's transforms)."""
    options = proto.AnalyzerResourceOptions(
        parent=r.parent or "",
        protect=bool(getattr(r, "protect", False)),
        ignoreChanges=list(getattr(r, "ignore_changes", []) or []),
        additionalSecretOutputs=list(getattr(r, "additional_secret_outputs", []) or []),
        aliases=list(getattr(r, "aliases", []) or []),
    )
    delete_before_replace = getattr(r, "delete_before_replace", None)
    if delete_before_replace is not None:
        options.deleteBeforeReplace = bool(delete_before_replace)
        options.deleteBeforeReplaceDefined = True
    timeouts = getattr(r, "custom_timeouts", None) or {}
    if timeouts:
        options.customTimeouts.CopyFrom(
            proto.AnalyzerResourceOptions.CustomTimeouts(
                **{k: _seconds(v) for k, v in timeouts.items()}
            )
        )
    return options


def _seconds(duration: str) -> float:
    """A Pulumi custom timeout ("5m", "1h30m", "90s") in seconds, as the engine sends it."""
    total, number = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0}
    for char in duration:
        if char.isdigit() or char == ".":
            number += char
        elif char in units and number:
            total += float(number) * units[char]
            number = ""
    return total + (float(number) if number else 0.0)


def analyze_stack_request(run: ProgramRun) -> proto.AnalyzeStackRequest:
    """The `AnalyzeStack` request the engine sends for the run: every resource's outputs with
    its options, parent and dependencies."""
    return proto.AnalyzeStackRequest(
        resources=[
            proto.AnalyzerResource(
                type=r.type,
                properties=r.outputs_struct,
                urn=r.urn,
                name=r.name,
                options=_options(r),
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


def analyze(run: ProgramRun, config: Mapping[str, Any] | None = None) -> list[Violation]:
    """The pack's violations; raises RuleFailureError when a mandatory rule raised."""
    violations, _ = analyze_with_errors(run, config)
    return violations


def analyze_with_errors(
    run: ProgramRun, config: Mapping[str, Any] | None = None
) -> tuple[list[Violation], list[RuleError]]:
    """Violations plus the advisory rules that raised; a mandatory rule that raised fails the
    whole check closed (RuleFailureError naming the rule and the resource)."""
    failures: list[tuple[str, str, BaseException]] = []
    servicer = make_servicer(config, failures)
    # The pack's own rules report a failure as a violation (for the engine); here it raises
    # through to `guard_policies`, which records it, so the check fails closed itself.
    raising = RAISE_RULE_FAILURES.set(True)
    try:
        return _analyze(run, config, servicer, failures)
    finally:
        RAISE_RULE_FAILURES.reset(raising)


def _analyze(
    run: ProgramRun,
    config: Mapping[str, Any] | None,
    servicer: _PolicyAnalyzerServicer,
    failures: list[tuple[str, str, BaseException]],
) -> tuple[list[Violation], list[RuleError]]:
    levels = {name: _LEVEL_NAMES[level] for name, (level, _) in effective_config(config).items()}
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
            options=_options(r),
        )
        try:
            response = servicer.Analyze(request, None)
        except Exception as exc:
            raise AnalysisError(
                f"the policy analyzer could not analyze {r.type} '{r.name}' ({r.urn}"
                f"{_declared_at(r)}): {type(exc).__name__}: {exc}. {_REPORT_IT}"
            ) from exc
        for diag in response.diagnostics:
            diagnostics.append((diag, diag.urn or r.urn))
    stack_request = analyze_stack_request(run)
    stack_urn = next((r.urn for r in run.resources if r.type == STACK_TYPE), "")
    try:
        stack_response = servicer.AnalyzeStack(stack_request, None)
    except Exception as exc:
        raise AnalysisError(
            f"the policy analyzer could not analyze the stack: {type(exc).__name__}: {exc}. "
            f"{_REPORT_IT}"
        ) from exc
    for diag in stack_response.diagnostics:
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
    errors = [
        RuleError(
            policy=name,
            enforcement=levels.get(name, "advisory"),
            urn=urn,
            error=f"{type(exc).__name__}: {exc}",
            traceback="".join(traceback.format_exception(exc)),
        )
        for name, urn, exc in failures
    ]
    fatal = [e for e in errors if e.enforcement in ("mandatory", "remediate")]
    if fatal:
        lines = "\n".join(f"  rule {e.policy} on {e.urn}: {e.error}" for e in fatal)
        names = sorted({e.policy for e in fatal})
        raise RuleFailureError(
            f"{len(fatal)} mandatory rule run(s) raised instead of deciding, so the stack "
            f"cannot be passed (failing closed):\n{lines}\nReport it with the traceback below; "
            f"to proceed meanwhile, lower the rule in a --config file, e.g. "
            f"{json.dumps({n: 'advisory' for n in names})} (its failure is then listed, not "
            f"fatal).\n{fatal[0].traceback.rstrip()}"
        )
    return violations, errors
