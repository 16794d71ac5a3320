"""Offline policy check: run a Pulumi Python project under mocks and analyze it with the pack.

    idempotent-messaging-check --project DIR --stack NAME [--preview] [--config FILE]
                           [--answers FILE] [--package-path DIR ...] [--remediate]
                           [--format text|json|sarif] [--output FILE]
    idempotent-messaging-check --state FILE [--state EXPORT] [--project DIR] [--config FILE]
                           [--format ...] [--output FILE]

No Pulumi CLI, no cloud account. `--preview` makes computed outputs unknown, as in a real
`pulumi preview` of new resources. `--config` takes the CLI's policy-config JSON
(`pulumi preview --policy-pack-config`). `--answers` pins data-source results (see
`policy.offline.answers`; `offline-answers.yaml` beside the program is read by default).
`--package-path` adds a directory of packages the program imports (after the program's own
virtualenv, which is honoured as the Pulumi CLI does). `--state` checks a stack in any Pulumi
language from the CLI's JSON instead: a `pulumi stack export` file (checked as `up`) or
`pulumi preview --json` output (checked as `preview`, and its planned replacements and
deletions by the plan check `plan-no-data-loss`: `offline.plan`), optionally with the stack's
export as a second `--state` (the unchanged resources a preview without `--show-sames` leaves
out); `--project DIR` then only says where the program's sources are (`project:///` source
positions, for annotations); see `offline.statefile`.

Exit status (the table and the JSON shapes: `offline.report`): 0 no mandatory finding; 1 at
least one, always WITH the report that lists it; 2 no verdict: an engine fault, unreadable
input, a partial preview document, or a mandatory rule raised (fail closed); 3 the program
refused its configuration (one line: key path, value, rule). The reason goes to stderr, and in
`--format json` / `--format sarif` stdout still carries a valid document.
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
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import ast_guard
from .analyzer import Violation, analyze_with_errors, load_config_file
from .answers import Answers, load_answers
from .errors import ConfigRefusedError, OfflineCheckError, PartialDocumentError, ProgramError
from .places import place
from .plan import PLAN_POLICY, plan_findings, plan_level
from .refusal import refusal_of
from .remediation import (
    editing,
    remediate_graph,
    remediate_resources,
    remediating,
    with_remediation,
)
from .report import (
    BLOCKING_LEVELS,
    EXIT_NO_VERDICT,
    EXIT_REFUSED,
    Report,
    render_error,
    render_refused,
    to_json,
)
from .runner import ProgramRun, run_program
from .statefile import StateFileError, load_documents


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
    state: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    remediate: bool = False,
) -> Report:
    """Run the project (or read the `state` file(s): a stack export, a preview JSON, or both;
    `project` is then the sources' directory) and analyze it; raises OfflineCheckError
    (ProgramError, PolicyConfigError, RuleFailureError, PartialDocumentError, ...) when there is
    no verdict and ConfigRefusedError when the program refused its configuration."""
    config = dict(config or {})
    level = plan_level(config)
    config.pop(PLAN_POLICY, None)  # the engine's own check, not a policy of the pack
    # `--remediate` applies every remediation the pack has, as a team that sets each
    # remediable rule to `remediate` would get them; the re-check keeps the configured levels
    # (a rule the config itself sets to `remediate` reports what it cannot fix as mandatory,
    # as pulumi-policy does).
    fixing = with_remediation(config) if remediate else config
    changes, destroy, source = [], False, "program"
    plan: list[Violation] = []
    document_files: list[Path] = []
    # Whatever the program prints goes to stderr: stdout carries the (JSON/SARIF) report.
    with _stdout_to_stderr():
        if state is not None:
            paths = [state] if isinstance(state, (str, os.PathLike)) else list(state)
            document = load_documents(paths, source_root=project)
            run, changes, destroy = document.run, document.changes, document.destroy
            document_files = list(document.files)
            source = "preview" if document.is_preview else "export"
            plan = plan_findings(document, level)
        else:
            assert project is not None and stack is not None
            try:
                run = run_program(
                    project, stack, preview=preview, answers=answers, package_paths=package_paths
                )
            except ProgramError as exc:
                refused = refusal_of(exc, project, stack)
                if refused is None:
                    raise
                raise _located(refused, project) from None
            except ConfigRefusedError as refused:  # refused before it ran (a plaintext secret)
                raise _located(refused, project) from None
        # The engine remediates each resource before it analyzes it: so does the check.
        remediations = remediate_resources(run, fixing) if remediating(fixing) else []
        # Then the edits only the whole graph can compute, which `pulumi up` cannot apply: the
        # mandatory findings they fix stay what `pulumi preview` reports until the program
        # makes them (`pending`: the verdict counts them).
        preview_sees: list[Violation] = []
        if editing(fixing):
            preview_sees, _ = analyze_with_errors(run, config)
            remediations += remediate_graph(run, fixing)
        violations, rule_errors = analyze_with_errors(run, config)
    remaining = {(v.policy, v.urn) for v in violations}
    pending = [
        v
        for v in preview_sees
        if v.enforcement in BLOCKING_LEVELS and (v.policy, v.urn) not in remaining
    ]
    root = repo_root(run.project.directory)
    violations += plan
    # Every finding has a place: the program line, else the stack file, else the document.
    place(violations + pending, run.project.directory, run.stack, document_files)
    for v in violations + pending:
        v.file = _relative(v.file, root)
        v.component_file = _relative(v.component_file, root)
    for rem in remediations:
        rem.file = _relative(rem.file, root)
    remediations.sort(key=lambda r: (r.file or "", r.line or 0, r.policy, r.urn, r.property))
    for r in run.resources:
        if r.remote:
            r.source_file = _relative(r.source_file, root)
    # The SDK registers independent resources concurrently, so the engine's order varies from
    # run to run; reports in source order are stable (diffable in CI) and read top-down.
    for found in (violations, pending):
        found.sort(key=lambda v: (v.file or "", v.line or 0, v.policy, v.urn, v.message))
    return Report(
        run, violations, rule_errors, changes, destroy, source, remediations, root, pending
    )


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Python's stdout AND file descriptor 1 to stderr: a child process the program starts
    (``subprocess.run(["git", ...])``) writes to the descriptor, not to ``sys.stdout``."""
    sys.stdout.flush()
    try:
        saved: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no descriptor 1 or 2 to redirect (a closed stream): Python's alone
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def _located(refused: ConfigRefusedError, project: str | os.PathLike[str]) -> ConfigRefusedError:
    """The refusal with its files relative to the repository (as SARIF and the text show)."""
    root = repo_root(Path(project).resolve())
    refused.file = _relative(refused.file, root)
    refused.program_file = _relative(refused.program_file, root)
    return refused


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
        (PartialDocumentError, "partial-document"),
        (StateFileError, "state-file"),
        (RuleFailureError, "rule-failure"),
        (AnalysisError, "analysis"),
    ):
        if isinstance(exc, cls):
            return stage
    return "internal"


def _emit(text: str | None, output: str | None) -> None:
    if text is None:
        return
    try:
        if output:
            Path(output).write_text(text + "\n")
        else:
            print(text)
    except OSError as exc:
        print(f"policy check: cannot write the report: {exc}", file=sys.stderr)


def _fail(
    message: str, stage: str, fmt: str, output: str | None, missing: Sequence[str] = ()
) -> int:
    """No verdict (exit 2): the reason on stderr, a JSON / SARIF document on stdout."""
    print(f"policy check failed ({stage}): {message}", file=sys.stderr)
    _emit(render_error(message, stage, fmt, missing), output)
    return EXIT_NO_VERDICT


def _refused(refused: ConfigRefusedError, fmt: str, output: str | None) -> int:
    """The program refused its configuration (exit 3): one line, no traceback."""
    print(refused.summary, file=sys.stderr)
    if fmt != "text" or output:
        _emit(render_refused(refused, fmt), output)
    return EXIT_REFUSED


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m idempotent_messaging.offline",
        description="Run a Pulumi Python project under mocks and check it with the policy pack.",
    )
    parser.add_argument(
        "--project",
        help="project directory (holds Pulumi.yaml); with --state: where the program's sources "
        "are (for source positions)",
    )
    parser.add_argument("--stack", help="stack name (reads Pulumi.<stack>.yaml)")
    parser.add_argument(
        "--state",
        action="append",
        help="check this `pulumi stack export` file or `pulumi preview --json` output instead "
        "(give both, as two --state, for a preview without --show-sames)",
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
    parser.add_argument(
        "--remediate",
        action="store_true",
        help="apply the pack's remediations (every remediable rule the config leaves at its "
        "default level set to `remediate`), report each change, check the remediated stack",
    )
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("--output", help="write the report to this file instead of stdout")
    args = parser.parse_args(argv)
    if args.state is None and (args.project is None or args.stack is None):
        parser.error("give --project and --stack (a Python program), or --state FILE")
    if args.state is not None and (args.stack or args.preview):
        parser.error("--state reads the mode and stack from the file: drop --stack/--preview")
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
            remediate=args.remediate,
        )
        if args.format == "json":  # via this module's name: a test breaks it here
            text = json.dumps(
                to_json(
                    report.run,
                    report.violations,
                    report.rule_errors,
                    changes=report.changes,
                    destroy=report.destroy,
                    remediations=report.remediations,
                    pending=report.pending,
                ),
                indent=2,
            )
        else:
            text = report.render(args.format)
    except ConfigRefusedError as exc:
        return _refused(exc, args.format, args.output)
    except PartialDocumentError as exc:
        return _fail(str(exc), _stage(exc), args.format, args.output, exc.missing)
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
        return EXIT_NO_VERDICT
    return report.exit_code


def run() -> None:
    """Process entry point (`python -m idempotent_messaging.offline`)."""
    # A stack of thousands of resources builds a large, long-lived object graph (registrations,
    # protobufs, the resource graph); the default generation-0 threshold makes the collector
    # re-scan it thousands of times, which made the check grow faster than the stack. Nothing
    # here forms reference cycles worth collecting early, so collect far less often.
    gc.set_threshold(50_000, 20, 100)
    ast_guard.install()  # CPython 3.11.0-3.11.7's AST builder races between threads
    exit_code = main()
    _close_event_loops()
    sys.exit(exit_code)


if __name__ == "__main__":
    run()
