"""Offline policy check: run a Pulumi Python project under mocks and analyze it with the pack.

    idempotent-messaging-check --project DIR --stack NAME [--preview] [--config FILE]
                           [--answers FILE] [--package-path DIR ...]
                           [--format text|json|sarif] [--output FILE]
    idempotent-messaging-check --state FILE [--config FILE] [--format ...] [--output FILE]

No Pulumi CLI, no cloud account. `--preview` makes computed outputs unknown, as in a real
`pulumi preview` of new resources. `--config` takes the CLI's policy-config JSON
(`pulumi preview --policy-pack-config`). `--answers` pins data-source results (see
`policy.offline.answers`; `offline-answers.yaml` beside the program is read by default).
`--package-path` adds a directory of packages the program imports (after the program's own
virtualenv, which is honoured as the Pulumi CLI does). `--state` checks a stack in any Pulumi
language from the CLI's JSON instead: a `pulumi stack export` file (checked as `up`) or
`pulumi preview --json` output (checked as `preview`); see `policy.offline.statefile`.

Exit status: 0 no mandatory violation; 1 at least one, always WITH the report that lists it;
2 no verdict: the program, the config or the analysis failed, or a mandatory rule raised (fail
closed). The reason goes to stderr, and in `--format json` stdout still carries valid JSON with
an `error` field.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .analyzer import Violation, analyze_with_errors, load_config_file
from .answers import Answers, load_answers
from .errors import OfflineCheckError, ProgramError
from .report import Report, error_json, to_json, to_sarif, to_text
from .runner import ProgramRun, run_program
from .statefile import StateFileError, load_state


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


def check_report(
    project: str | os.PathLike[str] | None,
    stack: str | None,
    *,
    preview: bool = False,
    config: dict[str, Any] | None = None,
    answers: Answers | str | os.PathLike[str] | None = None,
    package_paths: Iterable[str | os.PathLike[str]] = (),
    state: str | os.PathLike[str] | None = None,
) -> Report:
    """Run the project (or read the `state` file) and analyze it; raises OfflineCheckError
    (ProgramError, PolicyConfigError, RuleFailureError, ...) when there is no verdict."""
    # Whatever the program prints goes to stderr: stdout carries the (JSON/SARIF) report.
    with contextlib.redirect_stdout(sys.stderr):
        if state is not None:
            run = load_state(state)
        else:
            assert project is not None and stack is not None
            run = run_program(
                project, stack, preview=preview, answers=answers, package_paths=package_paths
            )
        violations, rule_errors = analyze_with_errors(run, config)
    root = repo_root(run.project.directory)
    for v in violations:
        v.file = _relative(v.file, root)
        v.component_file = _relative(v.component_file, root)
    for r in run.resources:
        if r.remote:
            r.source_file = _relative(r.source_file, root)
    # The SDK registers independent resources concurrently, so the engine's order varies from
    # run to run; reports in source order are stable (diffable in CI) and read top-down.
    violations.sort(key=lambda v: (v.file or "", v.line or 0, v.policy, v.urn, v.message))
    return Report(run, violations, rule_errors)


def check(
    project: str | os.PathLike[str],
    stack: str,
    *,
    preview: bool = False,
    config: dict[str, Any] | None = None,
) -> tuple[ProgramRun, list[Violation]]:
    """Run the project and analyze it; raises OfflineCheckError when there is no verdict."""
    report = check_report(project, stack, preview=preview, config=config)
    return report.run, report.violations


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


def _stage(exc: BaseException) -> str:
    from .analyzer import AnalysisError, PolicyConfigError
    from .answers import AnswersError
    from .errors import MissingPackageError, RuleFailureError

    for cls, stage in (
        (MissingPackageError, "missing-package"),
        (ProgramError, "program"),
        (PolicyConfigError, "policy-config"),
        (AnswersError, "answers"),
        (StateFileError, "state-file"),
        (RuleFailureError, "rule-failure"),
        (AnalysisError, "analysis"),
    ):
        if isinstance(exc, cls):
            return stage
    return "internal"


def _fail(message: str, stage: str, fmt: str, output: str | None) -> int:
    print(f"policy check failed ({stage}): {message}", file=sys.stderr)
    if fmt == "json":
        text = json.dumps(error_json(message, stage), indent=2)
        if output:
            Path(output).write_text(text + "\n")
        else:
            print(text)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m idempotent_messaging.offline",
        description="Run a Pulumi Python project under mocks and check it with the policy pack.",
    )
    parser.add_argument("--project", help="project directory (holds Pulumi.yaml)")
    parser.add_argument("--stack", help="stack name (reads Pulumi.<stack>.yaml)")
    parser.add_argument(
        "--state",
        help="check this `pulumi stack export` file or `pulumi preview --json` output instead",
    )
    parser.add_argument("--preview", action="store_true", help="computed outputs are unknown")
    parser.add_argument("--config", help="policy config JSON, as for --policy-pack-config")
    parser.add_argument("--answers", help="YAML file pinning data-source results")
    parser.add_argument(
        "--package-path",
        action="append",
        default=[],
        help="extra directory of packages the program imports (repeatable)",
    )
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("--output", help="write the report to this file instead of stdout")
    args = parser.parse_args(argv)
    if args.state is None and (args.project is None or args.stack is None):
        parser.error("give --project and --stack (a Python program), or --state FILE")
    if args.state is not None and (args.project or args.stack or args.preview):
        parser.error(
            "--state reads the mode and stack from the file: drop --project/--stack/--preview"
        )
    try:
        config = load_config_file(args.config) if args.config else None
        answers = load_answers(args.answers) if args.answers else None
        report = check_report(
            args.project,
            args.stack,
            preview=args.preview,
            config=config,
            answers=answers,
            package_paths=args.package_path,
            state=args.state,
        )
        if args.format == "json":
            text = json.dumps(to_json(report.run, report.violations, report.rule_errors), indent=2)
        elif args.format == "sarif":
            text = json.dumps(to_sarif(report.run, report.violations, report.rule_errors), indent=2)
        else:
            text = to_text(report.run, report.violations, report.rule_errors)
    except OfflineCheckError as exc:
        return _fail(str(exc), _stage(exc), args.format, args.output)
    except Exception as exc:  # a crash of the checker itself is never a verdict
        detail = "".join(traceback.format_exception(exc)).rstrip()
        return _fail(
            f"internal error of the offline check: {type(exc).__name__}: {exc}\n{detail}",
            "internal",
            args.format,
            args.output,
        )
    try:
        if args.output:
            Path(args.output).write_text(text + "\n")
        else:
            print(text)
    except OSError as exc:  # a verdict nobody can read is no verdict
        print(f"policy check failed (output): cannot write the report: {exc}", file=sys.stderr)
        return 2
    return 1 if any(v.enforcement in ("mandatory", "remediate") for v in report.violations) else 0


def run() -> None:
    """Process entry point (`python -m idempotent_messaging.offline`)."""
    # A stack of thousands of resources builds a large, long-lived object graph (registrations,
    # protobufs, the resource graph); the default generation-0 threshold makes the collector
    # re-scan it thousands of times, which made the check grow faster than the stack. Nothing
    # here forms reference cycles worth collecting early, so collect far less often.
    gc.set_threshold(50_000, 20, 100)
    exit_code = main()
    _close_event_loops()
    sys.exit(exit_code)


if __name__ == "__main__":
    run()
