"""ANY Pulumi project's stack on the embedded emulator, for a test of your own.

    from idempotent_messaging.local import local_stack

    with local_stack("path/to/project", "dev", one_row_per_event={"payments": "payment_id"}) as s:
        s.send("payments", {"event_id": "e-1", "payment_id": "p-1"}, duplicate=True)
        s.fire("invoicing-schedule")          # a schedule, as EventBridge Scheduler fires it
        s.drain()                             # every event source mapping, until idle
        report = s.report()                   # per consumer: outcomes, DLQ, alarms, checks
        assert report["payments"].duplicates == 1 and report.ok
        print(report.text())

It deploys the stack by running the project's own program (``Pulumi.yaml`` and
``Pulumi.<stack>.yaml``) under the emulator's materialising mocks, and refuses, by type and
name, every resource the emulator does not hold (``UnsupportedResources``): what the
components create plus raw pulumi_aws SQS, Lambda, DynamoDB, SNS, EventBridge Scheduler and
CloudWatch resources (and the IAM and KMS resources they need) are held; nothing else is
faked.

Consumers are every SQS event source mapping of the stack (local.consumers); handlers run
in-process on the Powertools and boto3 of this interpreter, each invocation in an execution
environment of its own, up to each mapping's maximum concurrency at once (local.poller).
Failed records are made visible again at once rather than after the queue's visibility
timeout, so retries take seconds; ``visibility_scale=0.01`` instead keeps SQS's visibility
timeout on an accelerated clock (190 s in 1.9 s), as a load test needs.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from idempotent_messaging.local import moto_patches
from idempotent_messaging.local.consumers import LocalConsumer, find_consumers, resolve
from idempotent_messaging.local.deploy import deploy, stack_region
from idempotent_messaging.local.invoke import InvocationResult
from idempotent_messaging.local.observe import AlarmVerdict, evaluate_alarms, queue_counts, scan_all
from idempotent_messaging.local.poller import BatchOutcome, Poller
from idempotent_messaging.local.registry import DeployedResource, MappingConfig, ScheduleConfig
from idempotent_messaging.local.report import (
    NO_REASON,
    AlarmState,
    Check,
    ConsumerSummary,
    FireSummary,
    StackReport,
    one_row_per_event,
)
from idempotent_messaging.local.scheduler import fire as fire_schedule
from idempotent_messaging.local.scheduler import scheduled_time_for_month
from idempotent_messaging.local.server import start_emulator
from idempotent_messaging.local.session import StackSession
from idempotent_messaging.local.signals import MetricTap, OutcomeLog
from idempotent_messaging.offline.project import load_project
from idempotent_messaging.ops import dlq as ops_dlq
from idempotent_messaging.runtime.observability import Outcome

DEFAULT_DRAIN_TIMEOUT_S = 120.0
SUPPORTED = (
    "what the idempotent-messaging components create, and raw pulumi_aws SQS, Lambda, "
    "DynamoDB, SNS, EventBridge Scheduler and CloudWatch resources (with their IAM and KMS)"
)
COUNTER_TOKEN = "{i}"
"""In a body sent ``count`` times, the message's number (1..count): distinct events."""
DLQ_PEEK_LIMIT = 100


class LocalError(Exception):
    """The local run cannot go on; the message says what and how to fix it."""


class UnsupportedResources(LocalError):
    """The stack declares resources the emulator does not hold: each by type and name."""

    def __init__(self, project: str, stack: str, resources: list[DeployedResource]) -> None:
        self.resources = resources
        lines = [
            f"stack {stack} of project {project} declares {len(resources)} resource(s) the "
            f"local emulator does not hold, so it will not run it half-faked:"
        ]
        for r in resources:
            why = "not supported" if r.status == "unsupported" else f"refused: {r.detail}"
            lines.append(f"  {r.type} {r.name!r}: {why}")
        lines.append(f"it holds {SUPPORTED}")
        super().__init__("\n".join(lines))


@dataclass
class RowCheck:
    attribute: str
    table: str | None = None


def _body(body: Any) -> str:
    return body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))


def latest_fire_time(schedule: ScheduleConfig, now: datetime) -> datetime:
    """When the schedule last fired (or fires this period): for a monthly ``cron(M H D * ? *)``,
    this month's time, or last month's if that is still ahead; for anything else, now."""
    month = now.strftime("%Y-%m")
    try:
        when = scheduled_time_for_month(schedule, month)
    except ValueError:
        return now
    if when > now:
        year, mon = (now.year, now.month - 1) if now.month > 1 else (now.year - 1, 12)
        when = scheduled_time_for_month(schedule, f"{year:04d}-{mon:02d}")
    return when


class LocalStack:
    """A project's stack deployed in a running emulator, with every consumer and schedule."""

    def __init__(
        self,
        session: StackSession,
        project: str,
        stack: str,
        *,
        one_row_per_event: Mapping[str, str] | None = None,
        expect_alarms: Iterable[str] = (),
        progress: Callable[[str], None] | None = None,
        visibility_scale: float | None = None,
    ) -> None:
        self.session = session
        self.visibility_scale = visibility_scale
        self._scale_before = moto_patches.visibility_scale()
        if visibility_scale is not None:
            moto_patches.set_visibility_scale(visibility_scale)
        self.project = project
        self.stack = stack
        self.progress = progress or (lambda text: None)
        self.sqs = session.client("sqs")
        self.ddb = session.client("dynamodb")
        self.outcomes = OutcomeLog()
        self.metrics = MetricTap()
        self.sent: Counter[str] = Counter()
        self.sent_elsewhere: Counter[str] = Counter()
        """Messages other processes sent to a kept emulator (the command's ``send``)."""
        self.invocations: Counter[str] = Counter()
        self.invocation_errors: Counter[str] = Counter()
        self.fires: list[FireSummary] = []
        self.poller = Poller(
            session.registry,
            session.endpoint_url,
            self.sqs,
            release_failed=visibility_scale is None,
            on_batch=self._on_batch,
        )
        self.consumers: dict[str, LocalConsumer] = {
            c.name: c
            for c in sorted(find_consumers(session.registry, self.sqs), key=lambda c: c.name)
        }
        self.row_checks: dict[str, RowCheck] = {}
        for name, attribute in (one_row_per_event or {}).items():
            self.expect_one_row_per_event(name, attribute)
        self.expected_alarms: set[str] = set()
        for alarm in expect_alarms:
            self.expect_alarm(alarm)

    # --- what the stack is -----------------------------------------------------------------------
    @property
    def outputs(self) -> dict[str, Any]:
        """The stack outputs, holding the emulator's real URLs, ARNs and names."""
        return self.session.outputs

    @property
    def endpoint_url(self) -> str:
        return self.session.endpoint_url

    @property
    def schedules(self) -> dict[str, ScheduleConfig]:
        return self.session.registry.schedules

    def client(self, service: str, **config: Any) -> Any:
        """A boto3 client bound to the emulator (fake credentials, the stack's region)."""
        return self.session.client(service, **config)

    def consumer(self, name: str) -> LocalConsumer:
        """A consumer by its name, its queue's name or URL (KeyError listing the names)."""
        return resolve(list(self.consumers.values()), name)

    def expect_one_row_per_event(
        self, consumer: str, attribute: str, table: str | None = None
    ) -> None:
        """Declare the invariant the report checks for ``consumer``: ``attribute`` of its
        business table (``table``: another table, by name; or ``attribute@table``) holds the
        event id, one row each."""
        if table is None and "@" in attribute:
            attribute, table = attribute.split("@", 1)
        found = self.consumer(consumer)
        if table is None and found.business_table is None:
            raise LocalError(
                f"consumer {found.name} has no business table the emulator knows (no "
                "BUSINESS_TABLE variable): name the table, "
                f"--one-row-per-event {found.name}={attribute}@<table name>"
            )
        self.row_checks[found.name] = RowCheck(attribute, table)

    def expect_alarm(self, name: str) -> None:
        """Declare that the run trips the alarm ``name`` (its name or resource name): the
        report then fails if it is NOT in ALARM, instead of failing because it is (a scenario
        that sends poison expects its DLQ alarm; one that injects a crash, its errors alarm).
        LocalError listing the stack's alarms for a name it has none of."""
        alarms = self.session.registry.alarms
        for alarm in alarms:
            if name in (alarm.name, alarm.logical_name):
                self.expected_alarms.add(alarm.name)
                return
        known = ", ".join(sorted(a.name for a in alarms)) or "none"
        raise LocalError(f"no alarm {name!r} in stack {self.stack}; its alarms: {known}")

    # --- traffic -------------------------------------------------------------------------------
    def send(
        self,
        target: str,
        body: Any,
        *,
        count: int = 1,
        duplicate: bool = False,
        group_id: str | None = None,
        attributes: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Send ``body`` (a string, or JSON of any other value) to a consumer's queue ``count``
        times (``{i}`` in the body becomes the message's number, 1..count); ``duplicate``
        sends each one twice, as a producer retry does (a new message id and, on FIFO, a new
        deduplication id: the consumer, not SQS, must absorb it). FIFO messages go to
        ``group_id`` (default ``local``). Returns the message ids."""
        if count < 1:
            raise LocalError(f"count={count}: must be >= 1")
        consumer = self.consumer(target)
        text = _body(body)
        bodies = [text.replace(COUNTER_TOKEN, str(i)) for i in range(1, count + 1)]
        if duplicate:
            bodies = [b for b in bodies for _ in (0, 1)]
        message_attributes = {
            k: {"DataType": "String", "StringValue": v} for k, v in (attributes or {}).items()
        }
        ids: list[str] = []
        for start in range(0, len(bodies), 10):
            entries: list[dict[str, Any]] = []
            for i, message in enumerate(bodies[start : start + 10]):
                entry: dict[str, Any] = {"Id": str(i), "MessageBody": message}
                if message_attributes:
                    entry["MessageAttributes"] = message_attributes
                if consumer.fifo:
                    entry["MessageGroupId"] = group_id or "local"
                    entry["MessageDeduplicationId"] = uuid.uuid4().hex
                entries.append(entry)
            response = self.sqs.send_message_batch(QueueUrl=consumer.queue_url, Entries=entries)
            if response.get("Failed"):
                raise LocalError(f"send to {consumer.queue_name} failed: {response['Failed']}")
            ids.extend(r["MessageId"] for r in response.get("Successful", []))
        self.sent[consumer.name] += len(bodies)
        return ids

    def drain(self, timeout_s: float = DEFAULT_DRAIN_TIMEOUT_S) -> int:
        """Run every SQS event source mapping until its queue stays empty; the number of
        batches the handlers processed. TimeoutError past ``timeout_s``."""
        return self.poller.drain(timeout_s=timeout_s)

    def fire(
        self, schedule: str, *, month: str | None = None, at: datetime | None = None
    ) -> InvocationResult:
        """Fire a schedule (its name or resource name) as EventBridge Scheduler does: an
        asynchronous invoke of its target with its input, Lambda's retries on failure. The
        scheduled time is ``at``, or the monthly cron's time in ``month`` (YYYY-MM), or the
        latest time the schedule fired (now for a rate or one-off schedule)."""
        found = self._schedule(schedule)
        now = datetime.now(UTC)
        when = at or (
            scheduled_time_for_month(found, month) if month else latest_fire_time(found, now)
        )
        result = fire_schedule(
            self.session.registry,
            found.name,
            when,
            endpoint_url=self.endpoint_url,
            sqs=self.sqs,
        )
        target = self.session.registry.function(found.target_arn).name
        self.invocations[target] += 1
        if not result.ok:
            self.invocation_errors[target] += 1
        outcome = (
            json.dumps(result.response, default=str)[:300]
            if result.ok
            else f"{type(result.error).__name__ if result.error else 'timed out'}: "
            f"{str(result.error)[:200]}"
        )
        self.fires.append(
            FireSummary(found.name, when.strftime("%Y-%m-%dT%H:%M:%SZ"), result.ok, outcome)
        )
        return result

    def _schedule(self, name: str) -> ScheduleConfig:
        for schedule in self.schedules.values():
            if name in (schedule.name, schedule.logical_name):
                return schedule
        known = ", ".join(sorted(self.schedules)) or "none"
        raise KeyError(f"no schedule {name!r} in this stack; its schedules: {known}")

    def _on_batch(self, mapping: MappingConfig, outcome: BatchOutcome) -> None:
        self.invocations[mapping.function_name] += 1
        if outcome.invocation is not None and not outcome.invocation.ok:
            self.invocation_errors[mapping.function_name] += 1
            self.progress(
                f"  {mapping.function_name}: invocation failed ({outcome.reason}); "
                f"{outcome.records} record(s) stay in the queue"
            )

    # --- the report ----------------------------------------------------------------------------
    def report(self) -> StackReport:
        """Per consumer of the stack: what was sent, delivered, processed, skipped as a
        duplicate, republished and quarantined (with reasons), the DLQ, the alarms the run would
        trip and the declared invariants."""
        registry = self.session.registry
        verdicts = evaluate_alarms(
            registry,
            self.sqs,
            self.endpoint_url,
            self.invocation_errors,
            metrics=self.metrics,
            invocations=self.invocations,
        )
        owned: set[str] = set()
        report = StackReport(self.project, self.stack, self.endpoint_url)
        for consumer in self.consumers.values():
            summary = self._summary(consumer, verdicts)
            owned.update(a.name for a in summary.alarms)
            report.consumers[consumer.name] = summary
        report.stack_alarms = [
            _state(v, self.expected_alarms) for v in verdicts if v.alarm.name not in owned
        ]
        report.fires = list(self.fires)
        report.notes.append(
            (
                "failed records were made visible again at once instead of after the queue's "
                "visibility timeout"
                if self.visibility_scale is None
                else "visibility timeouts ran on a clock "
                f"{1 / self.visibility_scale:g} times faster than SQS's"
            )
            + "; SQS metrics are the queues' attributes now (moto keeps no "
            "metric history): an alarm's state is the one reached if the value persisted"
        )
        return report

    def _summary(self, consumer: LocalConsumer, verdicts: list[AlarmVerdict]) -> ConsumerSummary:
        fn = consumer.function.name
        stats = self.poller.stats.get(consumer.mapping.uuid)
        summary = ConsumerSummary(
            name=consumer.name,
            kind=consumer.kind,
            queue=consumer.queue_name,
            function=fn,
            dlq=consumer.dlq_name,
            sent=self.sent[consumer.name] + self.sent_elsewhere[consumer.name],
        )
        if stats is not None:
            summary.delivered = stats.records_delivered
            summary.deleted = stats.records_deleted
            summary.reported_failed = stats.records_failed
        summary.invocations = self.invocations[fn]
        summary.invocation_errors = self.invocation_errors[fn]
        outcomes = self.outcomes.of(fn)
        if outcomes is not None:
            summary.runtime = True
            summary.outcomes = Counter(outcomes.counts)
            summary.reasons = {k: Counter(v) for k, v in outcomes.reasons.items()}
        if consumer.dlq_url:
            summary.dlq_depth = queue_counts(self.sqs, consumer.dlq_url)["visible"]
            for message in ops_dlq.peek(self.sqs, consumer.dlq_url, DLQ_PEEK_LIMIT):
                reasons = message.reasons()
                kind = reasons.get("failure_kind") or reasons.get("failure_class")
                reason = reasons.get("failure_reason")
                summary.dlq_reasons[f"{kind or '-'}: {reason}" if reason else NO_REASON] += 1
        counts = queue_counts(self.sqs, consumer.queue_url)
        summary.left_in_queue = counts["visible"] + counts["in_flight"]
        summary.alarms = [
            _state(v, self.expected_alarms) for v in verdicts if consumer.owns(v.alarm)
        ]
        check = self.row_checks.get(consumer.name)
        if check is not None:
            summary.checks.append(self._row_check(consumer, check))
        return summary

    def _row_check(self, consumer: LocalConsumer, check: RowCheck) -> Check:
        table = check.table or consumer.business_table or ""
        try:
            rows = scan_all(self.ddb, table)
        except Exception as exc:  # a table name that is not in the emulator
            return Check(f"one row per event ({table}.{check.attribute})", False, str(exc))
        outcomes = self.outcomes.of(consumer.function.name)
        events = (
            outcomes.event_ids(Outcome.PROCESSED, Outcome.REPUBLISHED, Outcome.DUPLICATE_SKIPPED)
            if outcomes is not None
            else None
        )
        return one_row_per_event(rows, check.attribute, table, events)

    # --- lifecycle -----------------------------------------------------------------------------
    def install(self) -> None:
        self.outcomes.install()
        self.metrics.install()

    def close(self) -> None:
        self.metrics.uninstall()
        self.outcomes.uninstall()
        self.session.close()
        moto_patches.set_visibility_scale(self._scale_before)


def _state(verdict: AlarmVerdict, expected: set[str]) -> AlarmState:
    return AlarmState(
        name=verdict.alarm.name,
        metric=verdict.alarm.metric_name or "(metric math)",
        state="ALARM" if verdict.in_alarm else ("OK" if verdict.value is not None else "no data"),
        value=verdict.value,
        comparison=verdict.alarm.comparison_operator,
        threshold=verdict.alarm.threshold,
        basis=verdict.basis,
        expected=verdict.alarm.name in expected,
    )


def start_local_stack(
    project_dir: str | Path = ".",
    stack: str = "dev",
    *,
    one_row_per_event: Mapping[str, str] | None = None,
    expect_alarms: Iterable[str] = (),
    progress: Callable[[str], None] | None = None,
    visibility_scale: float | None = None,
) -> LocalStack:
    """Start an emulator in the stack's region, deploy the stack into it and return it running
    (close() stops it). UnsupportedResources when the stack declares anything the emulator
    does not hold; the program's own errors as ProgramError.

    ``visibility_scale``: None (default) makes failed records visible again at once, so a
    retry takes a poll; a factor in (0, 1] keeps SQS's visibility timeout on a clock that
    much faster (0.01: a 190 s timeout in 1.9 s), as a load test needs. Process-wide while the
    stack runs (moto's backend is)."""
    say = progress or (lambda text: None)
    directory = Path(project_dir)
    project = load_project(directory).name
    region = stack_region(directory, stack, "us-east-1")
    say(f"starting the embedded AWS emulator (moto on 127.0.0.1, region {region})")
    emulator = start_emulator(region)
    try:
        say(
            f"deploying stack {stack} of project {project}: its program runs under the "
            "emulator's mocks, each resource created in the emulator (a few seconds; ~20 s for "
            "a stack of 100 resources)"
        )
        started = time.monotonic()
        result = deploy(emulator, stack, directory)
        refused = result.not_materialised
        if refused:
            raise UnsupportedResources(project, stack, refused)
        created = sum(r.status == "created" for r in result.registry.resources)
        say(f"deployed {created} resources in {time.monotonic() - started:.1f} s")
    except BaseException:
        emulator.stop()
        raise
    session = StackSession(result.registry, emulator.endpoint_url, emulator, result)
    try:
        local = LocalStack(
            session,
            project,
            stack,
            one_row_per_event=one_row_per_event,
            expect_alarms=expect_alarms,
            progress=progress,
            visibility_scale=visibility_scale,
        )
    except BaseException:  # a declaration naming what the stack does not have
        session.close()
        raise
    local.install()
    return local


@contextmanager
def local_stack(
    project_dir: str | Path = ".",
    stack: str = "dev",
    *,
    one_row_per_event: Mapping[str, str] | None = None,
    expect_alarms: Iterable[str] = (),
    progress: Callable[[str], None] | None = None,
    visibility_scale: float | None = None,
) -> Iterator[LocalStack]:
    """``start_local_stack`` as a context manager: the emulator stops on exit."""
    local = start_local_stack(
        project_dir,
        stack,
        one_row_per_event=one_row_per_event,
        expect_alarms=expect_alarms,
        progress=progress,
        visibility_scale=visibility_scale,
    )
    try:
        yield local
    finally:
        local.close()
