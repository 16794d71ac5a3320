"""Offline policy check: run a Pulumi Python project under mocks and analyze it with the pack.

    python -m policy.check --project DIR --stack NAME [--preview] [--config FILE]
                           [--format text|json|sarif] [--output FILE]

No Pulumi CLI, no cloud account. `--preview` makes computed outputs unknown, as in a real
`pulumi preview` of new resources. `--config` takes the CLI's policy-config JSON
(`pulumi preview --policy-pack-config`). Exit status: 0 no mandatory violation, 1 at least one,
2 the program (or the config) failed -- its error is printed on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from policy.analyze import PolicyConfigError, Violation, analyze, load_config_file, pack_version
from policy.pack import PACK_NAME, POLICIES
from policy.program import STACK_TYPE, ProgramError, ProgramRun, run_program

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"mandatory": "error", "remediate": "error", "advisory": "warning"}


def repo_root(start: Path) -> Path:
    """The enclosing git work tree (SARIF paths are relative to it), else `start`."""
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def _relative(path: str | None, root: Path) -> str | None:
    if not path:
        return None
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return path


def check(
    project: str | os.PathLike[str],
    stack: str,
    *,
    preview: bool = False,
    config: dict[str, Any] | None = None,
) -> tuple[ProgramRun, list[Violation]]:
    """Run the project and analyze it; raises ProgramError / PolicyConfigError."""
    # Whatever the program prints goes to stderr: stdout carries the (JSON/SARIF) report.
    with contextlib.redirect_stdout(sys.stderr):
        run = run_program(project, stack, preview=preview)
        violations = analyze(run, config)
    root = repo_root(run.project.directory)
    for v in violations:
        v.file = _relative(v.file, root)
        v.component_file = _relative(v.component_file, root)
    # The SDK registers independent resources concurrently, so the engine's order varies from
    # run to run; reports in source order are stable (diffable in CI) and read top-down.
    violations.sort(key=lambda v: (v.file or "", v.line or 0, v.policy, v.urn, v.message))
    return run, violations


def to_json(run: ProgramRun, violations: list[Violation]) -> dict[str, Any]:
    return {
        "mode": "preview" if run.preview else "up",
        "resources": sum(1 for r in run.resources if r.type != STACK_TYPE),
        "violations": [v.to_dict() for v in violations],
    }


def to_text(run: ProgramRun, violations: list[Violation]) -> str:
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
    mandatory = sum(1 for v in violations if v.enforcement in ("mandatory", "remediate"))
    lines.append(
        f"{mandatory} mandatory, {len(violations) - mandatory} advisory violation(s)"
        + ("" if mandatory else ": OK")
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


def to_sarif(run: ProgramRun, violations: list[Violation]) -> dict[str, Any]:
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
            }
        ],
    }


def _close_event_loops() -> None:
    """Close the event loops the Pulumi SDK ran the program (and its sync invokes) on.

    The SDK leaves one loop per thread it used open; at interpreter exit the garbage collector
    meets them after their selectors are gone and prints "Exception ignored in
    BaseEventLoop.__del__" tracebacks to stderr. Only called at process exit: in-process
    callers (tests) keep using the SDK's loop for further runs.
    """
    for obj in gc.get_objects():
        if isinstance(obj, asyncio.BaseEventLoop) and not obj.is_running():
            with contextlib.suppress(Exception):
                obj.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m policy.check",
        description="Run a Pulumi Python project under mocks and check it with the policy pack.",
    )
    parser.add_argument("--project", required=True, help="project directory (holds Pulumi.yaml)")
    parser.add_argument("--stack", required=True, help="stack name (reads Pulumi.<stack>.yaml)")
    parser.add_argument("--preview", action="store_true", help="computed outputs are unknown")
    parser.add_argument("--config", help="policy config JSON, as for --policy-pack-config")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("--output", help="write the report to this file instead of stdout")
    args = parser.parse_args(argv)
    try:
        config = load_config_file(args.config) if args.config else None
        run, violations = check(args.project, args.stack, preview=args.preview, config=config)
    except (ProgramError, PolicyConfigError) as exc:
        print(f"policy check failed: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        report = json.dumps(to_json(run, violations), indent=2)
    elif args.format == "sarif":
        report = json.dumps(to_sarif(run, violations), indent=2)
    else:
        report = to_text(run, violations)
    if args.output:
        Path(args.output).write_text(report + "\n")
    else:
        print(report)
    return 1 if any(v.enforcement in ("mandatory", "remediate") for v in violations) else 0


if __name__ == "__main__":
    # A stack of thousands of resources builds a large, long-lived object graph (registrations,
    # protobufs, the resource graph); the default generation-0 threshold makes the collector
    # re-scan it thousands of times, which made the check grow faster than the stack. Nothing
    # here forms reference cycles worth collecting early, so collect far less often.
    gc.set_threshold(50_000, 20, 100)
    exit_code = main()
    _close_event_loops()
    sys.exit(exit_code)
