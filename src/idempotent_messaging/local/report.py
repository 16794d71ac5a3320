"""The per-consumer report of a local run, from what the handlers and the emulator say.

Every number has its source: messages sent (this session counted them), records delivered,
deleted and reported failed (the event source mapping poller), outcomes and quarantine reasons
(the runtime's own outcome log lines), DLQ depth and reasons (the DLQ, peeked), alarms (the
stack's own MetricAlarm definitions against the queues now, the run's invocation errors and
the EMF metrics the functions emitted). An invariant is checked only where the consumer
declared it (``one row per event``: which attribute of its business table holds the event id);
nothing reports a failure it cannot know.

The verdict (``StackReport.failures``, ``ok``, the RESULT line and the command's exit status)
derives from what happened, never from what was declared alone. A run FAILS when:

- ``configuration``: a consumer's records failed for a configuration error (the runtime's
  outcome lines; every record fails alike until a redeploy, and SQS dead-letters them all);
- ``dead-lettered without a reason``: messages of a consumer that runs on the runtime sit in its
  DLQ with no reason attached: SQS moved them after every delivery failed (a crash, a timeout),
  where the runtime attaches its reason to each message it quarantines;
- ``left in the queue``: messages neither processed nor dead-lettered when the report was made;
- ``alarm``: an alarm of the stack would be in ALARM, unless the run declared it expected
  (``expect_alarm``: a scenario that sends poison expects the DLQ alarm), and ``expected
  alarm`` when a declared one would not be;
- ``invariant``: a declared invariant does not hold; ``schedule``: a schedule fire failed;
  ``run``: the run itself did not finish (a drain that did not settle).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from idempotent_messaging.runtime.errors import CONFIGURATION_FAILURE_CLASS
from idempotent_messaging.runtime.observability import Outcome

NO_REASON = "no reason attached: moved by SQS after maxReceiveCount receives"
"""A DLQ message's reason in the report when it carries none (SQS's redrive moved it)."""

OUTCOME_WORDS: dict[str, str] = {
    Outcome.PROCESSED: "processed (effect written, notification published)",
    Outcome.DUPLICATE_SKIPPED: "duplicates (event already done: nothing written again)",
    Outcome.REPUBLISHED: "republished (committed before a crash; notification re-sent)",
    Outcome.QUARANTINED: "quarantined (sent to the DLQ with its reason)",
    Outcome.FAILED: "failed (reported in batchItemFailures; SQS redelivers)",
    Outcome.RETRIED: "retried (transaction conflict, retried in the invocation)",
}


@dataclass
class Check:
    """A declared invariant: its label, whether it holds and the numbers behind it."""

    label: str
    passed: bool
    detail: str


@dataclass
class Failure:
    """One reason the run failed: what kind (``FAILURE_KINDS``), whose, and the numbers."""

    kind: str
    detail: str
    consumer: str | None = None
    """The consumer it concerns; None for the stack (a schedule, an alarm of no consumer)."""

    def text(self) -> str:
        return f"{self.consumer + ': ' if self.consumer else ''}{self.kind}: {self.detail}"


FAILURE_KINDS = (
    "configuration",
    "dead-lettered without a reason",
    "left in the queue",
    "alarm",
    "expected alarm",
    "invariant",
    "schedule",
    "run",
)
"""Every kind of Failure, as the module docstring defines each."""


@dataclass
class AlarmState:
    name: str
    metric: str
    state: str
    """``ALARM``, ``OK`` or ``no data`` (the metric cannot be read here, or was not emitted)."""
    value: float | None
    comparison: str
    threshold: float
    basis: str
    expected: bool = False
    """The run declared it expected in ALARM (``expect_alarm``)."""

    def failure(self, consumer: str | None) -> Failure | None:
        """Why this alarm fails the run: in ALARM unexpected, or expected and not in ALARM."""
        firing = self.state == "ALARM"
        if firing and not self.expected:
            return Failure("alarm", f"{self.name} would be in ALARM ({_condition(self)})", consumer)
        if self.expected and not firing:
            return Failure(
                "expected alarm",
                f"{self.name} was declared expected in ALARM but is {self.state} "
                f"({_condition(self)})",
                consumer,
            )
        return None


def _condition(alarm: AlarmState) -> str:
    shown = "-" if alarm.value is None else f"{alarm.value:.4g}"
    return f"{alarm.metric} {shown} {alarm.comparison} {alarm.threshold:g}"


@dataclass
class ConsumerSummary:
    name: str
    kind: str
    queue: str
    function: str
    dlq: str | None
    sent: int = 0
    delivered: int = 0
    deleted: int = 0
    reported_failed: int = 0
    invocations: int = 0
    invocation_errors: int = 0
    runtime: bool = False
    """True when the function logged the runtime's outcome lines (it runs on the runtime)."""
    outcomes: Counter[str] = field(default_factory=Counter)
    reasons: dict[str, Counter[str]] = field(default_factory=dict)
    """Outcome -> ``<kind>: <reason>`` -> records, from the outcome lines."""
    dlq_depth: int | None = None
    dlq_reasons: Counter[str] = field(default_factory=Counter)
    left_in_queue: int = 0
    alarms: list[AlarmState] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    @property
    def processed(self) -> int:
        return self.outcomes.get(Outcome.PROCESSED, 0)

    @property
    def duplicates(self) -> int:
        return self.outcomes.get(Outcome.DUPLICATE_SKIPPED, 0)

    @property
    def republished(self) -> int:
        return self.outcomes.get(Outcome.REPUBLISHED, 0)

    @property
    def quarantined(self) -> int:
        return self.outcomes.get(Outcome.QUARANTINED, 0)

    @property
    def firing(self) -> list[str]:
        """Names of the consumer's alarms the run would trip."""
        return [a.name for a in self.alarms if a.state == "ALARM"]

    @property
    def configuration_failures(self) -> Counter[str]:
        """Reason -> records the runtime reported failed for a configuration error."""
        prefix = f"{CONFIGURATION_FAILURE_CLASS}: "
        return Counter(
            {
                reason.removeprefix(prefix): n
                for reason, n in self.reasons.get(Outcome.FAILED, Counter()).items()
                if reason.startswith(prefix)
            }
        )

    @property
    def dlq_without_reason(self) -> int:
        return sum(n for reason, n in self.dlq_reasons.items() if reason == NO_REASON)

    @property
    def failures(self) -> list[Failure]:
        """What failed for this consumer (the module docstring defines each kind)."""
        found: list[Failure] = []
        configuration = self.configuration_failures
        for reason, n in configuration.most_common():
            found.append(
                Failure(
                    "configuration",
                    f"{n} deliveries failed: {reason}; every record fails until the function is "
                    f"redeployed with its settings, and SQS dead-letters them "
                    f"({self.dlq_without_reason} in {self.dlq} now)",
                    self.name,
                )
            )
        if self.runtime and self.dlq_without_reason and not configuration:
            found.append(
                Failure(
                    "dead-lettered without a reason",
                    f"{self.dlq_without_reason} message(s) in {self.dlq} that SQS moved after "
                    "maxReceiveCount failed deliveries (a crash or a timeout on each); the "
                    "runtime attaches its reason to every message it quarantines",
                    self.name,
                )
            )
        if self.left_in_queue:
            found.append(
                Failure(
                    "left in the queue",
                    f"{self.left_in_queue} message(s) in {self.queue}, neither processed nor "
                    "dead-lettered",
                    self.name,
                )
            )
        found += [f for a in self.alarms if (f := a.failure(self.name)) is not None]
        found += [
            Failure("invariant", f"{c.label}: {c.detail}", self.name)
            for c in self.checks
            if not c.passed
        ]
        return found


@dataclass
class FireSummary:
    schedule: str
    scheduled_time: str
    ok: bool
    result: str


@dataclass
class StackReport:
    project: str
    stack: str
    endpoint: str
    consumers: dict[str, ConsumerSummary] = field(default_factory=dict)
    fires: list[FireSummary] = field(default_factory=list)
    stack_alarms: list[AlarmState] = field(default_factory=list)
    """Alarms of the stack that watch no consumer (e.g. a schedule's DLQ)."""
    notes: list[str] = field(default_factory=list)
    run_failures: list[Failure] = field(default_factory=list)
    """What stopped the run itself (kind ``run``: a drain that did not settle)."""

    def __getitem__(self, name: str) -> ConsumerSummary:
        return self.consumers[name]

    @property
    def failures(self) -> list[Failure]:
        """Every reason the run failed, per consumer then the stack's (module docstring)."""
        found = [f for s in self.consumers.values() for f in s.failures]
        found += [f for a in self.stack_alarms if (f := a.failure(None)) is not None]
        found += [
            Failure("schedule", f"fire of {f.schedule} at {f.scheduled_time} failed: {f.result}")
            for f in self.fires
            if not f.ok
        ]
        return found + list(self.run_failures)

    @property
    def ok(self) -> bool:
        """Nothing failed: no configuration error, no message dead-lettered without its reason
        or left in a queue, no alarm in ALARM but the expected ones (and each of those in
        ALARM), every declared invariant holds, every schedule fire succeeded."""
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = _plain(self)
        data["ok"] = self.ok
        data["failures"] = [_plain(f) for f in self.failures]
        for name, summary in self.consumers.items():
            data["consumers"][name]["firing"] = summary.firing
        return data

    def text(self) -> str:
        lines: list[str] = []
        out = lines.append
        out("=" * 78)
        out(f"REPORT  project={self.project}  stack={self.stack}  endpoint={self.endpoint}")
        out("=" * 78)
        for summary in self.consumers.values():
            out("")
            _consumer_text(summary, out)
        if self.fires:
            out("")
            out("schedules fired:")
            for fire in self.fires:
                out(
                    f"  {'OK  ' if fire.ok else 'FAIL'} {fire.schedule} at {fire.scheduled_time}: "
                    f"{fire.result}"
                )
        if self.stack_alarms:
            out("")
            out("other alarms of the stack:")
            for alarm in self.stack_alarms:
                out(_alarm_line(alarm))
        out("")
        for note in self.notes:
            out(f"note: {note}")
        failures = self.failures
        declared = sum(len(s.checks) for s in self.consumers.values())
        expected = sum(a.expected for s in self.consumers.values() for a in s.alarms) + sum(
            a.expected for a in self.stack_alarms
        )
        if failures:
            out(f"RESULT: FAILED ({len(failures)} failure(s)):")
            for failure in failures:
                out(f"  - {failure.text()}")
        else:
            out(
                f"RESULT: OK ({len(self.consumers)} consumer(s), {declared} declared "
                f"invariant(s), {expected} expected alarm(s), {len(self.fires)} schedule "
                "fire(s); nothing failed)"
            )
        return "\n".join(lines)


def _plain(value: Any) -> Any:
    """JSON-ready: dataclasses as dicts, Counters as plain dicts (``asdict`` would rebuild a
    Counter from its items, counting the pairs)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _row(out: Any, label: str, count: int | str, meaning: str = "") -> None:
    out(f"  {label:<26}{count!s:>6}  {meaning}".rstrip())


def _alarm_line(alarm: AlarmState) -> str:
    expected = " [expected]" if alarm.expected else ""
    return f"  {alarm.state:<7} {alarm.name}: {_condition(alarm)} ({alarm.basis}){expected}"


def _consumer_text(s: ConsumerSummary, out: Any) -> None:
    out(f"consumer {s.name}  ({s.kind}; queue {s.queue}, function {s.function})")
    _row(out, "messages sent", s.sent, "by this session (send)")
    _row(out, "invocations", s.invocations, "by its event source mapping or a schedule fire")
    _row(out, "records delivered", s.delivered, "by the mapping; a redelivery counts again")
    _row(out, "  deleted", s.deleted, "done: the mapping deleted them")
    _row(out, "  reported failed", s.reported_failed, "batchItemFailures or a failed invocation")
    _row(out, "invocation errors", s.invocation_errors, "the handler raised or timed out")
    if s.runtime:
        out("  from the runtime's outcome log lines (a redelivered record counts again):")
        for outcome, words in OUTCOME_WORDS.items():
            count = s.outcomes.get(outcome, 0)
            if count or outcome in (
                Outcome.PROCESSED,
                Outcome.DUPLICATE_SKIPPED,
                Outcome.REPUBLISHED,
                Outcome.QUARANTINED,
            ):
                _row(out, f"  {outcome}", count, words)
            for reason, n in sorted(s.reasons.get(outcome, Counter()).items()):
                out(f"      {n} x {reason}")
    elif s.invocations == 0:
        out("  outcomes: none (the function was not invoked)")
    else:
        out(
            "  outcomes: none logged (the function does not run on idempotent_messaging.runtime,"
            " whose outcome lines these are); the counts above are the mapping's"
        )
    if s.dlq is None:
        out("  DLQ: none (the queue has no redrive policy)")
    else:
        _row(out, "DLQ depth", s.dlq_depth if s.dlq_depth is not None else "?", f"in {s.dlq} now")
        for reason, n in s.dlq_reasons.most_common():
            out(f"      {n} x {reason}")
    _row(out, "left in the queue", s.left_in_queue, "visible + in flight")
    if s.alarms:
        firing = len(s.firing)
        out(f"  alarms: {firing} of {len(s.alarms)} would be in ALARM")
        for alarm in s.alarms:
            out("  " + _alarm_line(alarm))
    if s.checks:
        out("  declared invariants:")
        for check in s.checks:
            out(f"  [{'PASS' if check.passed else 'FAIL'}] {check.label}: {check.detail}")
    else:
        out(
            "  declared invariants: none (declare one: --one-row-per-event "
            f"{s.name}=<attribute of its business table holding the event id>)"
        )
    failures = s.failures
    kinds = ", ".join(dict.fromkeys(f.kind for f in failures))
    out(f"  verdict: {f'FAILED ({kinds})' if failures else 'OK'}")


def one_row_per_event(
    rows: list[dict[str, Any]], attribute: str, table: str, events: set[str] | None
) -> Check:
    """The consumer's declaration ``attribute`` of ``table`` holds the event id: no event has
    two rows, and (when the runtime logged which events it completed) every one has its row."""
    label = f"one row per event ({table}.{attribute})"
    per_event: Counter[str] = Counter()
    without = 0
    for row in rows:
        value = row.get(attribute)
        if not isinstance(value, dict) or not value:
            without += 1
            continue
        per_event[str(next(iter(value.values())))] += 1
    doubled = sorted(e for e, n in per_event.items() if n > 1)
    detail = f"{len(rows)} row(s), {len(per_event)} distinct {attribute}"
    if without:
        detail += f", {without} row(s) without {attribute}"
    if doubled:
        detail += f"; more than one row for {doubled[:10]}"
    missing: list[str] = []
    if events is None:
        detail += "; which events completed is not known (no runtime outcome lines)"
    else:
        missing = sorted(events - set(per_event))
        detail += f"; {len(events)} event(s) completed per the runtime's log"
        if missing:
            detail += f"; no row for {missing[:10]}"
    return Check(label, not doubled and not missing, detail)


def dumps(report: StackReport) -> str:
    return json.dumps(report.to_json(), indent=2, default=str)
