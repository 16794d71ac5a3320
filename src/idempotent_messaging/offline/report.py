"""The offline check's reports and exit codes: the ONE module every report path goes through.

Exit codes (``EXIT_CODES``; ``idempotent-messaging-check`` returns exactly these):

    0  EXIT_CLEAN     clean: no mandatory finding (advisories may be listed)
    1  EXIT_FINDINGS  at least one mandatory finding (a rule, or the plan check
                      `plan-no-data-loss`), always WITH the report that lists it
    2  EXIT_NO_VERDICT  cannot judge: an engine fault (the offline engine, a mock, the
                      analyzer, a mandatory rule that raised), unreadable input (project, policy
                      config, answers, state file), or a partial `pulumi preview --json`
                      document (no `--show-sames`); never a verdict, whatever the stack holds
    3  EXIT_REFUSED   the program refused its configuration as `pulumi preview` would: a
                      component's ArgumentError, a `pulumi.RunError` of the program, a missing
                      `config.require` value; one line names the key path, value and rule

Formats, for every exit code (text for people, JSON for scripts, SARIF for code scanning):

- 0/1: ``to_text`` / ``to_json`` / ``to_sarif``. JSON: ``{"verdict": "clean"|"findings",
  "exit_code", "mode", "resources", "violations": [{"policy", "enforcement", "urn", "type",
  "name", "message", "file", "line", "component_file", "component_line"}],
  "unexpanded_components", "rule_errors"}`` plus, for a preview document, ``"plan":
  {"destroy", "changes": [{"urn", "type", "name", "op", "ops"}]}`` (every step but `same`).
- 2: the reason on stderr; JSON ``{"verdict": "no-verdict", "exit_code": 2, "error":
  {"stage", "message"[, "missing"]}, "violations": null}`` (``missing``: the URNs a partial
  document lacks); SARIF: no result, ``invocations[0].executionSuccessful`` false and the
  reason as an error notification.
- 3: the one line on stderr (no traceback); JSON ``{"verdict": "refused", "exit_code": 3,
  "refused": {"path", "value", "rule", "file", "line", "stack", "program_file",
  "program_line"}, "violations": null}`` (``file``/``line``: the key's line in
  ``Pulumi.<stack>.yaml``); SARIF: one error result `stack-config-refused` located there.

Every verdict report states what the check could NOT see: remote (multi-language) components
whose children were not expanded offline (so not checked), and advisory rules that raised.
A secret config value never appears (``[secret]``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rules.pack import PACK_NAME, POLICIES
from .analyzer import RuleError, Violation, pack_version
from .errors import ConfigRefusedError
from .fixes import keyword_fix
from .plan import PLAN_DESCRIPTION, PLAN_POLICY, PLAN_REMEDIATION
from .project import STACK_TYPE
from .recorder import RecordedResource
from .remediation import Remediation
from .runner import ProgramRun
from .statefile import PlannedChange

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_NO_VERDICT = 2
EXIT_REFUSED = 3
EXIT_CODES: dict[int, tuple[str, str]] = {
    EXIT_CLEAN: ("clean", "no mandatory finding"),
    EXIT_FINDINGS: (
        "findings",
        "at least one mandatory finding, or a fix of one that only the program can make (a "
        "`--remediate` edit `pulumi up` cannot apply), listed in the report",
    ),
    EXIT_NO_VERDICT: (
        "no-verdict",
        "cannot judge: engine fault, unreadable input or a partial preview document",
    ),
    EXIT_REFUSED: ("refused", "the program refused its configuration, as `pulumi preview` would"),
}
"""Exit code -> (verdict word in JSON, meaning)."""
BLOCKING_LEVELS = ("mandatory", "remediate")
REFUSED_RULE = "stack-config-refused"
REFUSED_DESCRIPTION = (
    "The program refuses the stack's configuration (as `pulumi preview` would): the key path, "
    "the value and the rule it breaks."
)

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"mandatory": "error", "remediate": "error", "advisory": "warning"}
PROGRAM_EDIT_NOTE = (
    "Only this check can compute this fix (it needs another resource's value): `pulumi up` "
    "does not apply it, and the rule reports until the program says it."
)
UNEXPANDED_NOTE = (
    "remote component: its plugin builds its children, which cannot run offline; "
    "its child resources were NOT checked"
)


def exit_code(violations: Sequence[Violation], pending: Sequence[Violation] = ()) -> int:
    """EXIT_FINDINGS when any finding is mandatory (or remediate), or `pending`: a mandatory
    finding only a program edit fixes (`pulumi preview` reports it until the program makes
    the edit), else EXIT_CLEAN."""
    blocking = any(v.enforcement in BLOCKING_LEVELS for v in [*violations, *pending])
    return EXIT_FINDINGS if blocking else EXIT_CLEAN


@dataclass
class Report:
    run: ProgramRun
    violations: list[Violation]
    rule_errors: list[RuleError] = field(default_factory=list)
    # The planned changes of a preview document (`--state`); empty for a program run.
    changes: list[PlannedChange] = field(default_factory=list)
    destroy: bool = False
    # What was checked: a program run, a preview document (`--state`), or a stack export.
    source: str = "program"
    # What the pack's remediations changed before the check (rules at level `remediate`).
    remediations: list[Remediation] = field(default_factory=list)
    # The repository root SARIF paths are relative to (where `fixes` read the program).
    root: Path | None = None
    # Mandatory findings of the program as it is that only its edits (remediations with
    # `at_deploy` False) fix: `pulumi preview` reports them until the program makes them.
    pending: list[Violation] = field(default_factory=list)

    @property
    def unexpanded(self) -> list[RecordedResource]:
        return unexpanded_components(self.run)

    @property
    def exit_code(self) -> int:
        return exit_code(self.violations, self.pending)

    def render(self, fmt: str) -> str:
        """The report in `fmt` (text, json or sarif)."""
        if fmt == "json":
            return json.dumps(
                to_json(
                    self.run,
                    self.violations,
                    self.rule_errors,
                    changes=self.changes,
                    destroy=self.destroy,
                    remediations=self.remediations,
                    pending=self.pending,
                ),
                indent=2,
            )
        if fmt == "sarif":
            # A code-scanning category per kind of check: an upload of the plan check never
            # replaces the program check's of the same stack (runs[].automationDetails.id).
            kind = {"preview": "plan", "export": "state"}.get(self.source)
            return json.dumps(
                to_sarif(
                    self.run,
                    self.violations,
                    self.rule_errors,
                    category=kind,
                    remediations=self.remediations,
                    root=self.root,
                    pending=self.pending,
                ),
                indent=2,
            )
        return to_text(
            self.run,
            self.violations,
            self.rule_errors,
            changes=self.changes,
            destroy=self.destroy,
            remediations=self.remediations,
            pending=self.pending,
        )


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


def _plan_json(changes: Sequence[PlannedChange], destroy: bool) -> dict[str, Any]:
    return {
        "destroy": destroy,
        "changes": [
            {
                "urn": c.urn,
                "type": c.resource.type,
                "name": c.resource.name,
                "op": c.op,
                "ops": c.ops,
            }
            for c in changes
            if c.op != "same"
        ],
    }


def error_json(message: str, stage: str, missing: Sequence[str] | None = None) -> dict[str, Any]:
    """The JSON an error prints in `--format json` (exit 2): no verdict, the reason."""
    error: dict[str, Any] = {"stage": stage, "message": message}
    if missing:
        error["missing"] = list(missing)
    return {
        "verdict": EXIT_CODES[EXIT_NO_VERDICT][0],
        "exit_code": EXIT_NO_VERDICT,
        "error": error,
        "violations": None,
    }


def refused_json(refused: ConfigRefusedError) -> dict[str, Any]:
    """The JSON of a refused configuration (exit 3)."""
    return {
        "verdict": EXIT_CODES[EXIT_REFUSED][0],
        "exit_code": EXIT_REFUSED,
        "refused": {
            "path": refused.path,
            "value": refused.value,
            "rule": refused.rule,
            "file": refused.file,
            "line": refused.line,
            "stack": refused.stack,
            "program_file": refused.program_file,
            "program_line": refused.program_line,
        },
        "message": refused.summary,
        "violations": None,
    }


def to_json(
    run: ProgramRun,
    violations: list[Violation],
    rule_errors: list[RuleError] | None = None,
    *,
    changes: Sequence[PlannedChange] | None = None,
    destroy: bool = False,
    remediations: Sequence[Remediation] = (),
    pending: Sequence[Violation] = (),
) -> dict[str, Any]:
    code = exit_code(violations, pending)
    out: dict[str, Any] = {
        "verdict": EXIT_CODES[code][0],
        "exit_code": code,
        "mode": "preview" if run.preview else "up",
        "resources": sum(1 for r in run.resources if r.type != STACK_TYPE),
        "violations": [v.to_dict() for v in violations],
        "unexpanded_components": _unexpanded_dicts(run),
        "rule_errors": [e.to_dict() for e in rule_errors or []],
        "remediations": [r.to_dict() for r in remediations],
        "pending": [v.to_dict() for v in pending],
    }
    if changes:
        out["plan"] = _plan_json(changes, destroy)
    return out


def _plan_line(changes: Sequence[PlannedChange], destroy: bool) -> str | None:
    counts: dict[str, int] = {}
    for c in changes:
        counts[c.op] = counts.get(c.op, 0) + 1
    if not counts:
        return None
    listed = ", ".join(f"{n} {op}" for op, n in sorted(counts.items()))
    return f"plan{' (destroy)' if destroy else ''}: {listed}"


def _where(file: str | None, line: int | None, missing: str = "<no source position>") -> str:
    """`file:line` of a finding or change, the file alone without a line, else `missing`."""
    return (f"{file}:{line}" if line else file) if file else missing


def to_text(
    run: ProgramRun,
    violations: list[Violation],
    rule_errors: list[RuleError] | None = None,
    *,
    changes: Sequence[PlannedChange] | None = None,
    destroy: bool = False,
    remediations: Sequence[Remediation] = (),
    pending: Sequence[Violation] = (),
) -> str:
    mode = "preview" if run.preview else "up"
    lines = [
        f"policy pack {PACK_NAME}: project {run.project.name}, stack {run.stack}, mode {mode}, "
        f"{sum(1 for r in run.resources if r.type != STACK_TYPE)} resources"
    ]
    plan = _plan_line(changes or [], destroy)
    if plan:
        lines.append(plan)
    order = {"mandatory": 0, "remediate": 0, "advisory": 1}
    for v in sorted(
        violations, key=lambda v: (order.get(v.enforcement, 2), v.file or "", v.line or 0)
    ):
        lines.append(f"{_where(v.file, v.line)}: [{v.enforcement}] {v.policy}: {v.type} '{v.name}'")
        if v.component_file:
            lines.append(f"    (component instantiated at {v.component_file}:{v.component_line})")
        lines.append(f"    {v.message}")
    for r in unexpanded_components(run):
        where = f"{r.source_file}:{r.source_line}" if r.source_file else "<no source position>"
        lines.append(f"{where}: [not checked] {r.type} '{r.name}': {UNEXPANDED_NOTE}")
    for e in rule_errors or []:
        lines.append(f"[rule error] {e.policy} ({e.enforcement}) on {e.urn}: {e.error}")
    for fix in remediations:
        kind = "remediated" if fix.at_deploy else "edit the program"
        lines.append(
            f"{_where(fix.file, fix.line, '<no position>')}: [{kind}] {fix.policy}: "
            f"{fix.type} '{fix.name}': {fix.property} {_shown(fix.before)} -> {_shown(fix.after)}"
        )
        if not fix.at_deploy:
            lines.append(f"    {PROGRAM_EDIT_NOTE}")
    for v in pending:
        lines.append(
            f"{_where(v.file, v.line)}: [{v.enforcement} until the program is edited] "
            f"{v.policy}: {v.type} '{v.name}'"
        )
        lines.append(f"    {v.message}")
    mandatory = sum(1 for v in violations if v.enforcement in BLOCKING_LEVELS)
    unchecked = len(unexpanded_components(run))
    at_deploy = sum(1 for r in remediations if r.at_deploy)
    edits = len(remediations) - at_deploy
    lines.append(
        f"{mandatory} mandatory, {len(violations) - mandatory} advisory violation(s)"
        + ("" if mandatory or pending else ": OK")
        + (f" ({unchecked} remote component(s) not expanded: NOT checked)" if unchecked else "")
        + (
            f"; {at_deploy} property change(s) remediated by the pack before the check"
            if at_deploy
            else ""
        )
        + (f"; {edits} program edit(s) `pulumi up` will not make" if edits else "")
        + (
            f"; {len(pending)} mandatory finding(s) of the program as it is: not OK until it "
            f"makes those edits"
            if pending
            else ""
        )
    )
    return "\n".join(lines)


def _shown(value: Any) -> str:
    """A property value in a report line: absent, or compact JSON."""
    return "(absent)" if value is None else json.dumps(value)


def _location(file: str | None, line: int | None, message: str | None = None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"}}
    if line:
        physical["region"] = {"startLine": line}
    loc: dict[str, Any] = {"physicalLocation": physical}
    if message:
        loc["message"] = {"text": message}
    return loc


def _sarif_rules() -> list[dict[str, Any]]:
    """Every rule of the pack plus the engine's own: the plan check and a refused config."""

    def rule(name: str, description: str, remediation: str, level: str) -> dict[str, Any]:
        return {
            "id": name,
            "name": name,
            "shortDescription": {"text": description},
            "help": {"text": remediation or description},
            "defaultConfiguration": {"level": _SARIF_LEVEL.get(level, "warning")},
        }

    return [
        rule(
            p.name,
            p.description,
            p.remediation_steps or "",
            p.enforcement_level.value if p.enforcement_level else "advisory",
        )
        for p in POLICIES
    ] + [
        rule(PLAN_POLICY, PLAN_DESCRIPTION, PLAN_REMEDIATION, "mandatory"),
        rule(
            REFUSED_RULE,
            REFUSED_DESCRIPTION,
            "Fix the value in Pulumi.<stack>.yaml (`pulumi config set --path KEY VALUE`).",
            "mandatory",
        ),
    ]


def _sarif(
    automation_id: str,
    results: list[dict[str, Any]],
    notifications: list[dict[str, Any]],
    *,
    successful: bool = True,
) -> dict[str, Any]:
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
                        "rules": _sarif_rules(),
                    }
                },
                "automationDetails": {"id": automation_id},
                "results": results,
                # What the run could not check is a tool notification, not a finding.
                "invocations": [
                    {
                        "executionSuccessful": successful,
                        "toolExecutionNotifications": notifications,
                    }
                ],
            }
        ],
    }


def to_sarif(
    run: ProgramRun,
    violations: list[Violation],
    rule_errors: list[RuleError] | None = None,
    *,
    category: str | None = None,
    remediations: Sequence[Remediation] = (),
    root: Path | None = None,
    pending: Sequence[Violation] = (),
) -> dict[str, Any]:
    """`category` (default: the mode, `up` or `preview`) ends the automation id
    `policy/<stack>/<category>/`: `plan` for a preview document, `state` for an export.
    A `pending` finding is an error like any mandatory one, saying which edit fixes it."""
    results = []
    for v, waits in [*((v, False) for v in violations), *((v, True) for v in pending)]:
        edit = f" Until the program makes the edit noted here: {PROGRAM_EDIT_NOTE}" if waits else ""
        result: dict[str, Any] = {
            "ruleId": v.policy,
            "level": _SARIF_LEVEL.get(v.enforcement, "note"),
            "message": {"text": f"{v.type} '{v.name}' (stack {run.stack}): {v.message}{edit}"},
            "locations": [_location(v.file, v.line)] if v.file else [],
            "partialFingerprints": {"resourceUrn": v.urn},
            "properties": {
                "urn": v.urn,
                "enforcement": v.enforcement,
                "stack": run.stack,
                **({"pendingProgramEdit": True} if waits else {}),
            },
        }
        if v.component_file:
            result["relatedLocations"] = [
                {
                    "id": 1,
                    **_location(v.component_file, v.component_line, "component instantiated here"),
                }
            ]
        results.append(result)
    for r in remediations:
        results.append(_remediation_result(r, run.stack, root))
    notifications = [
        {
            "level": "warning",
            "descriptor": {"id": "unexpanded-remote-component"},
            "message": {"text": f"{r.type} '{r.name}': {UNEXPANDED_NOTE}"},
            "locations": [_location(r.source_file, r.source_line)] if r.source_file else [],
            "properties": {"urn": r.urn},
        }
        for r in unexpanded_components(run)
    ] + [
        {
            "level": "warning",
            "descriptor": {"id": "rule-error"},
            "message": {"text": f"rule {e.policy} raised on {e.urn}: {e.error}"},
            "properties": {"urn": e.urn, "rule": e.policy},
        }
        for e in rule_errors or []
    ]
    category = category or ("preview" if run.preview else "up")
    return _sarif(f"policy/{run.stack}/{category}/", results, notifications)


def _remediation_result(r: Remediation, stack: str, root: Path | None) -> dict[str, Any]:
    """A remediated finding: a note at the resource's line, with the program change that keeps
    it (`fixes`) where the source shows the property plainly."""
    change = f"{r.property} {_shown(r.before)} -> {_shown(r.after)}"
    result: dict[str, Any] = {
        "ruleId": r.policy,
        "level": "note",
        "message": {
            "text": (
                f"{r.type} '{r.name}' (stack {stack}): remediated by the pack: {change}. "
                f"Set it in the program to keep it without the remediation."
                if r.at_deploy
                else f"{r.type} '{r.name}' (stack {stack}): edit the program: {change}. "
                f"{PROGRAM_EDIT_NOTE}"
            )
        },
        "locations": [_location(r.file, r.line)] if r.file else [],
        "partialFingerprints": {"resourceUrn": r.urn, "remediatedProperty": r.property},
        "properties": {
            "urn": r.urn,
            "remediated": True,
            "atDeploy": r.at_deploy,
            "property": r.property,
            "before": r.before,
            "after": r.after,
            "stack": stack,
        },
    }
    fix = keyword_fix(
        r.file, root or Path.cwd(), r.line, r.name, r.property, r.after, f"set {change}"
    )
    if fix is not None:
        result["fixes"] = [fix]
    return result


def refused_sarif(refused: ConfigRefusedError) -> dict[str, Any]:
    """One error result at the refused key's line of the stack file (exit 3)."""
    result: dict[str, Any] = {
        "ruleId": REFUSED_RULE,
        "level": "error",
        "message": {"text": refused.summary},
        "locations": [_location(refused.file, refused.line)] if refused.file else [],
        "partialFingerprints": {"configPath": refused.path or refused.rule},
        "properties": {"path": refused.path, "value": refused.value, "stack": refused.stack},
    }
    if refused.program_file and (refused.program_file, refused.program_line) != (
        refused.file,
        refused.line,
    ):
        result["relatedLocations"] = [
            {"id": 1, **_location(refused.program_file, refused.program_line, "raised here")}
        ]
    return _sarif(f"policy/{refused.stack or 'stack'}/config/", [result], [])


def error_sarif(message: str, stage: str) -> dict[str, Any]:
    """No verdict (exit 2): no result, the run marked unsuccessful with the reason."""
    notification = {
        "level": "error",
        "descriptor": {"id": stage},
        "message": {"text": message},
    }
    return _sarif("policy/no-verdict/", [], [notification], successful=False)


def render_refused(refused: ConfigRefusedError, fmt: str) -> str:
    """Exit 3 in `fmt`: the one line (text), or the JSON / SARIF documents above."""
    if fmt == "json":
        return json.dumps(refused_json(refused), indent=2)
    if fmt == "sarif":
        return json.dumps(refused_sarif(refused), indent=2)
    return refused.summary


def render_error(
    message: str, stage: str, fmt: str, missing: Sequence[str] | None = None
) -> str | None:
    """Exit 2 in `fmt`: JSON / SARIF documents, None for text (the reason is on stderr)."""
    if fmt == "json":
        return json.dumps(error_json(message, stage, missing), indent=2)
    if fmt == "sarif":
        return json.dumps(error_sarif(message, stage), indent=2)
    return None
