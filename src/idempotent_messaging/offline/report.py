"""The offline check's reports: text for people, JSON for scripts, SARIF for code scanning.

Every report states what the check could NOT see: remote (multi-language) components whose
children were not expanded offline (so not checked), and advisory rules that raised. An error
that prevented any verdict is reported by ``error_json`` (JSON with an ``error`` field) or on
stderr, never as a report of violations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..rules.pack import PACK_NAME, POLICIES
from .analyzer import RuleError, Violation, pack_version
from .project import STACK_TYPE
from .recorder import RecordedResource
from .runner import ProgramRun

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"mandatory": "error", "remediate": "error", "advisory": "warning"}
UNEXPANDED_NOTE = (
    "remote component: its plugin builds its children, which cannot run offline; "
    "its child resources were NOT checked"
)


@dataclass
class Report:
    run: ProgramRun
    violations: list[Violation]
    rule_errors: list[RuleError] = field(default_factory=list)

    @property
    def unexpanded(self) -> list[RecordedResource]:
        return unexpanded_components(self.run)


def unexpanded_components(run: ProgramRun) -> list[RecordedResource]:
    """Remote components, in source order (registration order varies between runs)."""
    remote = [r for r in run.resources if r.remote]
    return sorted(remote, key=lambda r: (r.source_file or "", r.source_line or 0, r.urn))


def _unexpanded_dicts(run: ProgramRun) -> list[dict[str, Any]]:
    return [
        {
            "type": r.type,
            "name": r.name,
            "urn": r.urn,
            "file": r.source_file,
            "line": r.source_line,
            "note": UNEXPANDED_NOTE,
        }
        for r in unexpanded_components(run)
    ]


def error_json(message: str, stage: str) -> dict[str, Any]:
    """The JSON an error prints in `--format json`: no verdict, the reason."""
    return {"error": {"stage": stage, "message": message}, "violations": None}


def to_json(
    run: ProgramRun, violations: list[Violation], rule_errors: list[RuleError] | None = None
) -> dict[str, Any]:
    return {
        "mode": "preview" if run.preview else "up",
        "resources": sum(1 for r in run.resources if r.type != STACK_TYPE),
        "violations": [v.to_dict() for v in violations],
        "unexpanded_components": _unexpanded_dicts(run),
        "rule_errors": [e.to_dict() for e in rule_errors or []],
    }


def to_text(
    run: ProgramRun, violations: list[Violation], rule_errors: list[RuleError] | None = None
) -> str:
    mode = "preview" if run.preview else "up"
    lines = [
        f"policy pack {PACK_NAME}: project {run.project.name}, stack {run.stack}, mode {mode}, "
        f"{sum(1 for r in run.resources if r.type != STACK_TYPE)} resources"
    ]
    order = {"mandatory": 0, "remediate": 0, "advisory": 1}
    for v in sorted(
        violations, key=lambda v: (order.get(v.enforcement, 2), v.file or "", v.line or 0)
    ):
        where = f"{v.file}:{v.line}" if v.file else "<no source position>"
        lines.append(f"{where}: [{v.enforcement}] {v.policy}: {v.type} '{v.name}'")
        if v.component_file:
            lines.append(f"    (component instantiated at {v.component_file}:{v.component_line})")
        lines.append(f"    {v.message}")
    for r in unexpanded_components(run):
        where = f"{r.source_file}:{r.source_line}" if r.source_file else "<no source position>"
        lines.append(f"{where}: [not checked] {r.type} '{r.name}': {UNEXPANDED_NOTE}")
    for e in rule_errors or []:
        lines.append(f"[rule error] {e.policy} ({e.enforcement}) on {e.urn}: {e.error}")
    mandatory = sum(1 for v in violations if v.enforcement in ("mandatory", "remediate"))
    unchecked = len(unexpanded_components(run))
    lines.append(
        f"{mandatory} mandatory, {len(violations) - mandatory} advisory violation(s)"
        + ("" if mandatory else ": OK")
        + (f" ({unchecked} remote component(s) not expanded: NOT checked)" if unchecked else "")
    )
    return "\n".join(lines)


def _location(file: str | None, line: int | None, message: str | None = None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"}}
    if line:
        physical["region"] = {"startLine": line}
    loc: dict[str, Any] = {"physicalLocation": physical}
    if message:
        loc["message"] = {"text": message}
    return loc


def to_sarif(
    run: ProgramRun, violations: list[Violation], rule_errors: list[RuleError] | None = None
) -> dict[str, Any]:
    rules = [
        {
            "id": p.name,
            "name": p.name,
            "shortDescription": {"text": p.description},
            "help": {"text": p.remediation_steps or p.description},
            "defaultConfiguration": {
                "level": _SARIF_LEVEL.get(
                    p.enforcement_level.value if p.enforcement_level else "advisory", "warning"
                )
            },
        }
        for p in POLICIES
    ]
    results = []
    for v in violations:
        result: dict[str, Any] = {
            "ruleId": v.policy,
            "level": _SARIF_LEVEL.get(v.enforcement, "note"),
            "message": {"text": f"{v.type} '{v.name}' (stack {run.stack}): {v.message}"},
            "locations": [_location(v.file, v.line)] if v.file else [],
            "partialFingerprints": {"resourceUrn": v.urn},
            "properties": {"urn": v.urn, "enforcement": v.enforcement, "stack": run.stack},
        }
        if v.component_file:
            result["relatedLocations"] = [
                {
                    "id": 1,
                    **_location(v.component_file, v.component_line, "component instantiated here"),
                }
            ]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": PACK_NAME,
                        "version": pack_version(),
                        "informationUri": "https://www.pulumi.com/docs/using-pulumi/crossguard/",
                        "rules": rules,
                    }
                },
                "automationDetails": {
                    "id": f"policy/{run.stack}/{'preview' if run.preview else 'up'}/"
                },
                "results": results,
                # What the run could not check is a tool notification, not a finding.
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "toolExecutionNotifications": [
                            {
                                "level": "warning",
                                "descriptor": {"id": "unexpanded-remote-component"},
                                "message": {"text": f"{r.type} '{r.name}': {UNEXPANDED_NOTE}"},
                                "locations": [_location(r.source_file, r.source_line)]
                                if r.source_file
                                else [],
                                "properties": {"urn": r.urn},
                            }
                            for r in unexpanded_components(run)
                        ]
                        + [
                            {
                                "level": "warning",
                                "descriptor": {"id": "rule-error"},
                                "message": {
                                    "text": f"rule {e.policy} raised on {e.urn}: {e.error}"
                                },
                                "properties": {"urn": e.urn, "rule": e.policy},
                            }
                            for e in rule_errors or []
                        ],
                    }
                ],
            }
        ],
    }
