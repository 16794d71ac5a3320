"""``idempotent-messaging-local``: any project's stack on the embedded AWS emulator.

    idempotent-messaging-local --project DIR --stack NAME [run] [--keep]
    idempotent-messaging-local --project DIR --stack NAME send --queue NAME --body JSON \\
        [--count N] [--duplicate] [--group-id ID] [--attribute KEY=VALUE ...]
    idempotent-messaging-local --project DIR --stack NAME fire --schedule NAME [--month YYYY-MM]
    idempotent-messaging-local --project DIR --stack NAME report

``run`` deploys the stack (its own program and stack file) onto a fresh emulator, fires each
enabled schedule once, drains every event source mapping and prints the report per consumer;
``--keep`` then keeps serving (mappings polled, rate schedules fired) until Ctrl-C, and the other
subcommands act on that kept emulator. Without a kept emulator, ``send`` and ``fire`` run on a
fresh one: deploy, act, drain, report.

stdout carries the report alone (text, or with ``--json`` one JSON document); progress, notes
and errors go to stderr, and the handlers' own log lines to a log file (``--verbose``: stderr).

Exit status (``EXIT_*``), what scripts can rely on:
  0  the run's verdict is OK: nothing failed (``RESULT: OK``; JSON ``"ok": true``);
  1  the run's verdict is FAILED: the report lists each failure (a configuration error, a
     message dead-lettered without its reason or left in a queue, an alarm in ALARM that was
     not declared expected or an expected one that is not, a declared invariant, a schedule
     fire, a drain that did not settle; local.report defines each);
  2  no verdict: the stack cannot run here (an unsupported resource, the program's own error,
     a name the stack does not have, the ``local`` extra missing, a usage error), or there is
     no report to show (``report`` without a kept emulator, one that did not report in time).

Same as ``python -m idempotent_messaging.local``. Documented in docs/local.md.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from idempotent_messaging.local import LOCAL_EXTRA, Console, missing_modules

if TYPE_CHECKING:
    from idempotent_messaging.local.stack import LocalStack

PROG = "idempotent-messaging-local"
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_NO_VERDICT = 2
STATE_DIR_VARIABLE = "EMULATOR_STATE_DIR"
REPORT_WAIT_S = 120.0
_RATE = re.compile(r"^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$")
_UNIT_S = {"minute": 60, "hour": 3600, "day": 86400}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run any Pulumi project's stack on the embedded AWS emulator and report per "
        "consumer (docs/local.md).",
    )
    parser.add_argument("--project", type=Path, default=Path("."), help="project dir (default .)")
    parser.add_argument("--stack", default="dev", help="stack name: Pulumi.<stack>.yaml (dev)")
    parser.add_argument(
        "--one-row-per-event",
        action="append",
        default=[],
        metavar="CONSUMER=ATTRIBUTE[@TABLE]",
        help="declare the invariant to check: ATTRIBUTE of the consumer's business table (or "
        "TABLE) holds the event id, one row per event (repeatable)",
    )
    parser.add_argument(
        "--expect-alarm",
        action="append",
        default=[],
        metavar="NAME",
        help="an alarm (name or resource name) the run is expected to trip: it fails the run "
        "if it is NOT in ALARM, instead of if it is (repeatable)",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="show the handlers' log lines (on stderr)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the report as JSON (alone on stdout)"
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds a drain may take (default 120)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser("run", help="deploy, fire the schedules, drain, report (default)")
    run.add_argument("--keep", action="store_true", help="then keep serving until Ctrl-C")
    run.add_argument("--no-schedules", action="store_true", help="fire no schedule")
    send = commands.add_parser("send", help="send messages to a consumer's queue, then report")
    send.add_argument("--queue", required=True, help="consumer name, queue name or URL")
    send.add_argument("--body", required=True, help="message body (JSON); {i} = message number")
    send.add_argument("--count", type=int, default=1, help="messages to send (default 1)")
    send.add_argument("--duplicate", action="store_true", help="send each twice (a producer retry)")
    send.add_argument("--group-id", help="MessageGroupId on a FIFO queue (default local)")
    send.add_argument(
        "--attribute", action="append", default=[], metavar="KEY=VALUE", help="message attribute"
    )
    fire = commands.add_parser("fire", help="fire a schedule as EventBridge Scheduler does")
    fire.add_argument("--schedule", required=True, help="schedule name or resource name")
    fire.add_argument("--month", help="the monthly cron's fire time in this month (YYYY-MM)")
    fire.add_argument("--twice", action="store_true", help="fire it twice (a double fire)")
    commands.add_parser("report", help="the kept emulator's latest report")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.command is None:  # `run` is the default
        args = parser.parse_args([*argv, "run"])
    missing = missing_modules()
    if missing:
        print(
            f"{PROG}: the embedded emulator needs the `local` extra (missing: "
            f"{', '.join(missing)}); install it with: {LOCAL_EXTRA}",
            file=sys.stderr,
        )
        return EXIT_NO_VERDICT
    try:
        checks = dict(_declaration(d) for d in args.one_row_per_event)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_NO_VERDICT
    import warnings

    # Powertools warns on stderr for every invocation that emitted no metric (a crashed one).
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    return _dispatch(args, checks)


def _declaration(text: str) -> tuple[str, str]:
    name, sep, attribute = text.partition("=")
    if not sep or not name or not attribute:
        raise ValueError(f"--one-row-per-event {text!r}: expected CONSUMER=ATTRIBUTE[@TABLE]")
    return name, attribute


def state_dir(project: Path) -> Path:
    """Where a kept emulator saves its deploy: EMULATOR_STATE_DIR, else <project>/.emulator
    (what the ops CLI reads with --emulator, run from the project)."""
    return Path(os.environ.get(STATE_DIR_VARIABLE) or project / ".emulator")


def _dispatch(args: argparse.Namespace, checks: dict[str, str]) -> int:
    from idempotent_messaging.local.stack import LocalError
    from idempotent_messaging.offline.errors import ProgramError

    console = Console(sys.stderr)  # progress: stdout carries the report alone
    try:
        if args.command == "report":
            return _print_kept_report(args)
        kept = _attach(args.project, args.stack)
        if kept is not None and args.command in ("send", "fire"):
            return _on_kept(args, checks, console, kept)
        if args.command == "run" and kept is not None:
            console.line(
                f"{PROG}: an emulator for stack {args.stack} is kept at {kept.endpoint_url}; "
                "stop it (Ctrl-C) first, or send/fire to it"
            )
            return EXIT_NO_VERDICT
        return _one_shot(args, checks, console)
    except (LocalError, ProgramError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"{PROG}: {message}", file=sys.stderr)
        return EXIT_NO_VERDICT


@contextmanager
def _report_stream(log: Path | None) -> Iterator[TextIO]:
    """The real stdout, kept for the report alone, while fd 1 (where the handlers' Powertools
    log lines and EMF documents go, as on Lambda) goes to ``log``, or to stderr when None."""
    sys.stdout.flush()
    saved = os.dup(1)
    if log is None:
        os.dup2(2, 1)
    else:
        log.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(descriptor, 1)
        os.close(descriptor)
    report = io.TextIOWrapper(os.fdopen(os.dup(saved), "wb"), line_buffering=True)
    try:
        yield report
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        report.close()


def _log_path(args: argparse.Namespace) -> Path | None:
    return None if args.verbose else state_dir(args.project) / f"local-{args.stack}.log"


def _one_shot(args: argparse.Namespace, checks: dict[str, str], console: Console) -> int:
    from idempotent_messaging.local.stack import start_local_stack

    log = _log_path(args)
    with _report_stream(log) as report_out:
        if log is not None:
            console.step(f"handler log lines go to {log} (--verbose shows them on stderr)")
        local = start_local_stack(
            args.project,
            args.stack,
            one_row_per_event=checks,
            expect_alarms=args.expect_alarm,
            progress=console.step,
        )
        try:
            _describe(local, console)
            if args.command == "run" and not args.no_schedules:
                for schedule in local.schedules.values():
                    if schedule.state == "ENABLED":
                        _fire(local, console, schedule.name, None)
            elif args.command == "fire":
                for _ in range(2 if args.twice else 1):
                    _fire(local, console, args.schedule, args.month)
            elif args.command == "send":
                _send(local, console, args)
            ok = _drain_and_report(local, console, report_out, args)
            if args.command == "run" and args.keep:
                _keep(local, console, args)
            return EXIT_OK if ok else EXIT_FAILED
        finally:
            local.close()


def _describe(local: LocalStack, out: Console) -> None:
    out.step(f"emulator at {local.endpoint_url}; {len(local.consumers)} consumer(s):")
    for c in local.consumers.values():
        dlq = f", DLQ {c.dlq_name}" if c.dlq_name else ", no DLQ"
        out.line(
            f"           {c.name}: {c.kind}, queue {c.queue_name}{' (FIFO)' if c.fifo else ''}"
            f"{dlq}, function {c.function.name} ({c.function.handler}), {len(c.alarms)} alarm(s)"
        )
    for s in local.schedules.values():
        out.line(
            f"           schedule {s.name}: {s.expression} {s.timezone} -> "
            f"{local.session.registry.function(s.target_arn).name} ({s.state})"
        )


def _fire(local: LocalStack, out: Console, schedule: str, month: str | None) -> None:
    out.step(f"firing schedule {schedule} (its target runs in-process, Lambda's async retries)")
    result = local.fire(schedule, month=month)
    last = local.fires[-1]
    out.step(f"  fired for {last.scheduled_time}: {'ok' if result.ok else 'FAILED'}: {last.result}")


def _send(local: LocalStack, out: Console, args: argparse.Namespace) -> float:
    attributes = dict(a.partition("=")[::2] for a in args.attribute)
    consumer = local.consumer(args.queue)
    sent_at = time.time()
    ids = local.send(
        args.queue,
        args.body,
        count=args.count,
        duplicate=args.duplicate,
        group_id=args.group_id,
        attributes=attributes,
    )
    out.step(
        f"sent {len(ids)} message(s) to {consumer.queue_name}"
        + (" (each twice: a producer retry)" if args.duplicate else "")
    )
    return sent_at


def _drain_and_report(
    local: LocalStack, out: Console, report_out: TextIO, args: argparse.Namespace
) -> bool:
    from idempotent_messaging.local.report import Failure

    out.step("draining every event source mapping until its queue stays empty")
    unsettled: Failure | None = None
    try:
        batches = local.drain(timeout_s=args.timeout)
        out.step(f"  {batches} batch(es) processed")
    except TimeoutError as exc:  # still a report: what happened until then, and that
        unsettled = Failure("run", f"the drain did not settle within {args.timeout:g} s: {exc}")
        out.step(f"  {unsettled.detail}")
    report = local.report()
    if unsettled is not None:
        report.run_failures.append(unsettled)
    _print_report(report_out, report.to_json(), report.text(), args.json)
    return report.ok


def _print_report(out: TextIO, document: dict[str, Any], text: str, as_json: bool) -> None:
    out.write((json.dumps(document, indent=2, default=str) if as_json else text) + "\n")
    out.flush()


# --- A kept emulator -------------------------------------------------------------------------


def _state_path(project: Path, stack: str) -> Path:
    return state_dir(project) / f"{stack}.json"


def _report_path(project: Path, stack: str) -> Path:
    return state_dir(project) / f"{stack}.report.json"


def _attach(project: Path, stack: str) -> Any:
    """The kept emulator's session, if its state file exists and its endpoint answers."""
    from idempotent_messaging.local.registry import Registry
    from idempotent_messaging.local.session import StackSession, reachable

    path = _state_path(project, stack)
    if not path.is_file():
        return None
    registry = Registry.load(path)
    if not registry.endpoint_url or not reachable(registry.endpoint_url):
        return None
    return StackSession(registry, registry.endpoint_url)


def _sent_path(project: Path, stack: str) -> Path:
    return state_dir(project) / f"{stack}.sent.jsonl"


def _write_report(local: LocalStack, project: Path, stack: str) -> None:
    sent = _sent_path(project, stack)
    if sent.is_file():  # what `send` from other terminals sent, one line per send
        local.sent_elsewhere.clear()
        for line in sent.read_text().splitlines():
            entry = json.loads(line)
            local.sent_elsewhere[entry["consumer"]] += int(entry["count"])
    report = local.report()
    path = _report_path(project, stack)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"written_at": time.time(), "report": report.to_json(), "text": report.text()}
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(document, default=str))
    temporary.replace(path)


def _keep(local: LocalStack, out: Console, args: argparse.Namespace) -> None:
    state = _state_path(args.project, args.stack)
    _sent_path(args.project, args.stack).unlink(missing_ok=True)
    local.session.save(state)
    _write_report(local, args.project, args.stack)
    me = f"{PROG} --project {args.project} --stack {args.stack}"
    out.line("")
    out.line(f"The emulator keeps running at {local.endpoint_url}; its deploy is in {state}.")
    out.line("Every event source mapping keeps polling; rate() schedules fire at their rate. Try:")
    for c in list(local.consumers.values())[:3]:
        out.line(f'  {me} send --queue {c.name} --body \'{{"event_id": "manual-{{i}}"}}\'')
    for s in local.schedules.values():
        out.line(f"  {me} fire --schedule {s.name}")
    out.line(f"  {me} report")
    out.line(f"  (cd {args.project} && idempotent-messaging-ops consumers --emulator --stack "
             f"{args.stack})")  # fmt: skip
    out.line("Ctrl-C stops it.")

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    due = {
        s.name: time.monotonic() + period
        for s in local.schedules.values()
        if s.state == "ENABLED" and (period := _rate_seconds(s.expression))
    }
    dirty = False
    try:
        while True:
            busy = False
            for mapping in local.poller.sqs_mappings():
                try:
                    busy = local.poller.poll_once(mapping) is not None or busy
                except Exception as exc:  # e.g. a queue someone deleted: report, keep serving
                    out.step(f"  poll of {mapping.function_name} failed: {exc}")
            for name, at in due.items():
                if time.monotonic() >= at:
                    _fire(local, out, name, None)
                    due[name] = at + (_rate_seconds(local.schedules[name].expression) or 0)
                    busy = True
            if busy:
                dirty = True
                continue
            if dirty:
                _write_report(local, args.project, args.stack)
                out.step("queues idle; report updated (`report` prints it)")
                dirty = False
            time.sleep(0.5)
    except KeyboardInterrupt:
        out.line("stopping the emulator")
    finally:
        state.unlink(missing_ok=True)
        _report_path(args.project, args.stack).unlink(missing_ok=True)
        _sent_path(args.project, args.stack).unlink(missing_ok=True)


def _rate_seconds(expression: str) -> int | None:
    match = _RATE.match(expression.strip())
    if match is None:
        return None
    return int(match.group(1)) * _UNIT_S[match.group(2).rstrip("s")]


def _on_kept(args: argparse.Namespace, checks: dict[str, str], console: Console, kept: Any) -> int:
    """send / fire against the kept emulator: its own process polls and reports."""
    from idempotent_messaging.local.stack import LocalStack
    from idempotent_messaging.offline.project import load_project

    local = LocalStack(kept, load_project(args.project).name, args.stack, progress=console.step)
    console.step(f"attached to the kept emulator at {kept.endpoint_url}")
    if checks or args.expect_alarm:
        console.step(
            "note: --one-row-per-event and --expect-alarm apply to the process that keeps the "
            "emulator"
        )
    started = time.time()
    if args.command == "send":
        _send(local, console, args)
        with _sent_path(args.project, args.stack).open("a") as sent:
            for name, count in local.sent.items():
                sent.write(json.dumps({"consumer": name, "count": count}) + "\n")
    else:
        with _report_stream(_log_path(args)):
            for _ in range(2 if args.twice else 1):
                _fire(local, console, args.schedule, args.month)
    console.step("waiting for the kept emulator to drain the queues and update its report")
    document = _wait_for_report(args.project, args.stack, started)
    if document is None:
        console.line(f"{PROG}: the kept emulator did not report within {REPORT_WAIT_S:.0f} s")
        return EXIT_NO_VERDICT
    _print_report(sys.stdout, document["report"], str(document["text"]), args.json)
    fires_ok = all(f.ok for f in local.fires)
    return EXIT_OK if document["report"].get("ok") and fires_ok else EXIT_FAILED


def _wait_for_report(project: Path, stack: str, after: float) -> dict[str, Any] | None:
    deadline = time.monotonic() + REPORT_WAIT_S
    path = _report_path(project, stack)
    while time.monotonic() < deadline:
        if path.is_file():
            document: dict[str, Any] = json.loads(path.read_text())
            if float(document.get("written_at", 0)) > after:
                return document
        time.sleep(0.3)
    return None


def _print_kept_report(args: argparse.Namespace) -> int:
    path = _report_path(args.project, args.stack)
    if _attach(args.project, args.stack) is None or not path.is_file():
        print(
            f"{PROG}: no kept emulator for stack {args.stack} (start one: {PROG} --project "
            f"{args.project} --stack {args.stack} run --keep)",
            file=sys.stderr,
        )
        return EXIT_NO_VERDICT
    document = json.loads(path.read_text())
    _print_report(sys.stdout, document["report"], str(document["text"]), args.json)
    return EXIT_OK if document["report"].get("ok") else EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
