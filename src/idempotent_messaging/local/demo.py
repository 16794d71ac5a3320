"""`make demo`: the dev stack on an embedded AWS emulator, driven by a scenario, with a report.

    python -m idempotent_messaging.local.demo --stack dev [--keep] [--verbose]

1. starts moto on 127.0.0.1 (a free port) and deploys the stack by running its own
   `__main__.py` + `Pulumi.<stack>.yaml` under materialising mocks (local.deploy);
2. drives the orders consumer through the event-source-mapping poller: duplicate sends of one
   event id, a crash injected after the commit, producer re-sends with new messageIds, poison
   messages, a message that keeps failing until its last receive (the runtime quarantines it
   with its reason), then the fix and an `ops` redrive;
3. fires the monthly schedule twice for one month (dispatcher -> FIFO -> charge consumer)
   when the stack has one;
4. reports per consumer and checks the invariants; exit 1 if any fails. The verdict derives
   from what happened: a record failed for a configuration error fails it, and so does an
   alarm of the stack in ALARM that the scenario did not provoke (the DLQ alarm of a consumer
   it left poison with, the errors alarm of a function it crashed), or one it provoked that
   would not fire.

The handlers' own log lines go to .emulator/demo-<stack>.log; outcomes are counted from their
structured log records (idempotent_messaging.local.signals.OutcomeLog).
"""

from __future__ import annotations

import argparse
import io
import json
import signal
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from idempotent_messaging.dispatch import env as dispatch_env
from idempotent_messaging.dispatch.keys import idempotency_key as charge_key
from idempotent_messaging.local import Console
from idempotent_messaging.local.deploy import PROJECT_DIR, print_report
from idempotent_messaging.local.faults import FaultInjector, writes_item_with
from idempotent_messaging.local.invoke import handler_output_to, invoke
from idempotent_messaging.local.observe import Observer, evaluate_alarms, queue_counts, scan_all
from idempotent_messaging.local.poller import BatchOutcome, Poller
from idempotent_messaging.local.registry import MappingConfig
from idempotent_messaging.local.run_month import seed_billing_accounts
from idempotent_messaging.local.scheduler import fire, scheduled_time_for_month
from idempotent_messaging.local.session import StackSession, start_session, state_path
from idempotent_messaging.local.signals import OutcomeLog
from idempotent_messaging.ops import dlq as ops_dlq
from idempotent_messaging.ops.outputs import DeployedConsumer, emulator_state_dir, find_consumers
from idempotent_messaging.runtime import env as runtime_env
from idempotent_messaging.runtime.errors import CONFIGURATION_FAILURE_CLASS
from idempotent_messaging.runtime.observability import Outcome

DEMO_MONTH = "2026-06"
DEMO_ACCOUNTS = 12
ORDERS = 10

# The business-row attribute holding the event id, for the handlers whose rows the demo knows
# (the reference stack's). Any other consumer declares none here: the demo does not check rows
# it cannot read (`idempotent-messaging-local --one-row-per-event` takes a declaration).
KNOWN_ROW_KEYS: dict[str, str] = {
    "handlers.orders.handler": "source_event_id",
    "handlers.charges.handler": "idempotency_key",
}

# What each per-record outcome of the runtime means, in the report's words.
OUTCOME_MEANINGS: dict[Outcome, str] = {
    Outcome.PROCESSED: "row written and notification published in one delivery",
    Outcome.DUPLICATE_SKIPPED: "event already done: nothing written or published again",
    Outcome.REPUBLISHED: "row committed before a crash; this redelivery published the notification",
    Outcome.QUARANTINED: "poison: sent to the DLQ at once with its reason",
    Outcome.RETRIED: "transaction conflict retried inside the invocation",
    Outcome.FAILED: "transient failure reported in batchItemFailures; SQS redelivers it",
}


@dataclass
class ConsumerReport:
    consumer: DeployedConsumer
    sent: int = 0
    sent_parts: list[str] = field(default_factory=list)  # what the sent messages were
    redriven: int = 0
    valid_events: set[str] = field(default_factory=set)
    poison: int = 0
    rows: int = 0
    rows_per_event: Counter[str] = field(default_factory=Counter)
    notifications: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    configuration_failures: Counter[str] = field(default_factory=Counter)
    """Reason -> deliveries the runtime failed for a configuration error."""
    dlq_depth: int = 0
    dlq_reasons: Counter[str] = field(default_factory=Counter)
    dlq_reasons_missing: int = 0
    queue_left: int = 0
    observer: Observer | None = None
    row_key: str | None = "source_event_id"  # business-row attribute holding the event id;
    # None: the consumer's rows are not the demo's to read (no row check)
    notify_key: str = "event_id"  # notification attribute holding the event id
    notes: list[str] = field(default_factory=list)


def check_invariants(report: ConsumerReport) -> list[tuple[str, bool, str]]:
    """(invariant, holds?, the numbers behind it): one row per event, >= 1 notification per
    event (when a subscriber observed the topic), nothing lost (queue empty, every event has
    its row, every poison message in the DLQ with a reason)."""
    events = report.valid_events
    multi = {e: n for e, n in report.rows_per_event.items() if n > 1}
    missing_rows = sorted(e for e in events if report.rows_per_event.get(e, 0) == 0)
    checks: list[tuple[str, bool, str]] = []
    if report.row_key is None:
        # Whose rows the demo cannot read: it reports no failure it cannot know.
        missing_rows = []
    else:
        checks.append(
            (
                "one business row per event",
                not multi and not missing_rows and report.rows == len(events),
                f"{report.rows} rows for {len(events)} events"
                + (f"; duplicated {sorted(multi)}" if multi else "")
                + (f"; missing {missing_rows}" if missing_rows else ""),
            )
        )
    # Which notification attribute names the event is the reference handlers' too.
    if report.observer is not None and report.row_key is not None:
        silent = sorted(e for e in events if report.notifications.get(e, 0) < 1)
        checks.append(
            (
                ">= 1 notification per event",
                not silent,
                f"{sum(report.notifications[e] for e in events)} notifications"
                + (f"; none for {silent}" if silent else ""),
            )
        )
    configuration = report.configuration_failures
    checks.append(
        (
            "no configuration error",
            not configuration,
            "; ".join(f"{n} deliveries failed: {reason}" for reason, n in configuration.items())
            or "no record failed for the function's settings",
        )
    )
    with_reason = report.dlq_depth - report.dlq_reasons_missing
    checks.append(
        (
            "nothing lost",
            report.queue_left == 0
            and not missing_rows
            and with_reason == report.poison
            and report.dlq_reasons_missing == 0,
            ("every event has its row; " if report.row_key is not None else "")
            + f"{report.queue_left} left in the queue; "
            f"{report.poison} poison sent, {with_reason} in the DLQ with a reason"
            + (f", {report.dlq_reasons_missing} without" if report.dlq_reasons_missing else ""),
        )
    )
    return checks


class Demo:
    def __init__(self, stack: str, session: StackSession, console: Console) -> None:
        self.stack = stack
        self.session = session
        self.console = console
        self.sqs = session.client("sqs")
        self.sns = session.client("sns")
        self.ddb = session.client("dynamodb")
        # botocore's retry backoff on a clock 100 times faster: the throttled order's retries
        # take milliseconds, not seconds (faults act at the HTTP stage, where botocore retries).
        self.faults = FaultInjector(retry_sleep_scale=0.01)
        self.outcomes = OutcomeLog()
        self.expected_alarms: dict[str, str] = {}
        """Alarm name -> why the scenario trips it (a verdict fails on any other in ALARM)."""
        self.invocation_errors: Counter[str] = Counter()
        self.poller = Poller(
            session.registry,
            session.endpoint_url,
            self.sqs,
            release_failed=True,
            on_batch=self._on_batch,
        )
        self.consumers = {c.name: c for c in find_consumers(session.registry.outputs)}
        self.reports: dict[str, ConsumerReport] = {}
        self.failures: list[str] = []

    # --- plumbing --------------------------------------------------------------------------
    def _on_batch(self, mapping: MappingConfig, outcome: BatchOutcome) -> None:
        if outcome.invocation is not None and not outcome.invocation.ok:
            self.invocation_errors[mapping.function_name] += 1
            self.console.step(
                f"  {mapping.function_name}: invocation failed ({outcome.reason}); "
                f"{outcome.records} record(s) stay in the queue"
            )
        elif outcome.failed_ids:
            self.console.step(
                f"  {mapping.function_name}: {outcome.records} record(s), "
                f"{len(outcome.failed_ids)} reported failed (batchItemFailures)"
            )

    def expect_alarms(
        self, why: str, *, crashed_function: str | None = None, poisoned_dlq: str | None = None
    ) -> None:
        """The stack's alarms this scenario step trips by design: the Errors alarms of a
        function it crashed, the depth alarms of a DLQ it leaves poison in."""
        for alarm in self.session.registry.alarms:
            dims = alarm.dimensions
            crashed = (
                crashed_function is not None
                and (alarm.namespace, alarm.metric_name) == ("AWS/Lambda", "Errors")
                and dims.get("FunctionName") == crashed_function
            )
            poisoned = (
                poisoned_dlq is not None
                and (alarm.namespace, alarm.metric_name)
                == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
                and dims.get("QueueName") == poisoned_dlq
            )
            if crashed or poisoned:
                self.expected_alarms[alarm.name] = why

    def drain(self, label: str) -> None:
        batches = self.poller.drain(timeout_s=60)
        self.console.step(f"  drained {label}: {batches} batch(es)")

    def send(self, report: ConsumerReport, bodies: list[str], label: str) -> None:
        url = report.consumer.queue_url
        assert url
        for start in range(0, len(bodies), 10):
            entries = [
                {"Id": str(i), "MessageBody": body}
                for i, body in enumerate(bodies[start : start + 10])
            ]
            response = self.sqs.send_message_batch(QueueUrl=url, Entries=entries)
            if response.get("Failed"):
                raise RuntimeError(f"send to {url} failed: {response['Failed']}")
        report.sent += len(bodies)
        report.sent_parts.append(f"{len(bodies)} {label}")

    def _complete(self, consumer: DeployedConsumer) -> DeployedConsumer:
        """Fill what the outputs do not export from the deployed function: the mapping on
        the consumer's queue names the function, whose environment names its table/topic."""
        queue = consumer.queue_arn or ""
        if not queue and consumer.queue_url:
            queue = self.sqs.get_queue_attributes(
                QueueUrl=consumer.queue_url, AttributeNames=["QueueArn"]
            )["Attributes"]["QueueArn"]
        mapping = next(
            (m for m in self.session.registry.mappings if m.event_source_arn == queue), None
        )
        if mapping is None:
            return consumer
        fn = self.session.registry.function(mapping.function_name)
        consumer.function_name = consumer.function_name or fn.name
        for key, variable in (
            ("topic_arn", runtime_env.NOTIFICATION_TOPIC_ARN),
            ("business_table_name", runtime_env.BUSINESS_TABLE),
        ):
            if not consumer.extra.get(key) and fn.environment.get(variable):
                consumer.extra[key] = fn.environment[variable]
        return consumer

    def report_for(self, name: str) -> ConsumerReport:
        if name not in self.reports:
            consumer = self._complete(self.consumers[name])
            report = ConsumerReport(consumer)
            topic = consumer.extra.get("topic_arn")
            if topic:
                safe = name.replace("/", "-")
                report.observer = Observer.subscribe(
                    self.sqs, self.sns, topic, f"demo-observer-{safe}"
                )
            self.reports[name] = report
        return self.reports[name]

    # --- scenario: orders ------------------------------------------------------------------
    def orders_scenario(self) -> None:
        name = next((n for n in self.consumers if n.endswith("orders")), None)
        if name is None:
            self.console.step("orders: the stack outputs name no orders consumer")
            return
        report = self.report_for(name)
        report.row_key = self._row_key(report, "source_event_id")

        def order(i: int) -> str:
            return json.dumps(
                {
                    "event_id": f"evt-{i:03d}",
                    "order": {"order_id": f"ord-{i:03d}", "item": "book", "quantity": i},
                }
            )

        self.console.step(
            f"orders: sending {ORDERS} orders + 2 extra sends of evt-001 (duplicate event id); "
            "the first SNS publish will crash the process AFTER the DynamoDB commit"
        )
        crash = self.faults.crash_once("PublishBatch")
        self.send(
            report,
            [order(i) for i in range(1, ORDERS + 1)] + [order(1), order(1)],
            f"orders ({ORDERS} events + 2 duplicate sends of evt-001)",
        )
        report.valid_events.update(f"evt-{i:03d}" for i in range(1, ORDERS + 1))
        self.drain("orders with crash")
        if crash.fired != 1:
            self.failures.append("the injected crash after commit never fired")
        self.faults.remove(crash)
        self.expect_alarms("the injected crash", crashed_function=report.consumer.function_name)

        self.console.step("orders: producer re-sends evt-002 and evt-007 (new messageIds)")
        self.send(report, [order(2), order(7)], "producer re-sends")
        self.drain("re-sends")

        self.console.step(
            "orders: 3 poison messages (not JSON, no event id, order without order_id)"
        )
        poison = [
            "this is not json {",
            json.dumps({"order": {"order_id": "ord-900"}}),
            json.dumps({"event_id": "evt-901", "order": {"item": "pen"}}),
        ]
        self.send(report, poison, "poison")
        report.poison += len(poison)
        self.drain("poison")
        self.expect_alarms(
            "the poison stays quarantined",
            poisoned_dlq=(report.consumer.dlq_url or "").rsplit("/", 1)[-1],
        )

        stuck = ORDERS + 1
        self.console.step(
            f"orders: evt-{stuck:03d} meets a DynamoDB throttle on every delivery (injected); "
            "on its last receive (maxReceiveCount) the runtime quarantines it with its reason"
        )
        throttle = self.faults.throttle(
            "TransactWriteItems",
            "BatchExecuteStatement",
            matcher=writes_item_with("order_id", f"ord-{stuck:03d}"),
        )
        self.send(report, [order(stuck)], "order throttled until its last receive")
        report.valid_events.add(f"evt-{stuck:03d}")
        self.drain("throttled order")
        self.faults.remove(throttle)
        # SQS would dead-letter it after this receive with no reason; the runtime sends it
        # first, with the failure that exhausted it.
        exhausted = [
            m
            for m in ops_dlq.peek(self.sqs, report.consumer.dlq_url or "", 50)
            if m.reasons().get("failure_kind") == "retries_exhausted"
        ]
        if len(exhausted) != 1:
            self.failures.append(
                f"expected evt-{stuck:03d} quarantined as retries_exhausted on its last receive, "
                f"found {len(exhausted)} such message(s)"
            )

        self.console.step("orders: cause fixed (throttle removed); peek + redrive the DLQ via ops")
        dlq_url = report.consumer.dlq_url
        queue_url = report.consumer.queue_url
        assert dlq_url and queue_url
        for m in ops_dlq.peek(self.sqs, dlq_url, 20):
            reasons = m.reasons()
            reason = reasons.get("failure_reason") or "(no reason: moved by SQS maxReceiveCount)"
            self.console.line(f"           peek {m.message_id[:8]}: {reason}")
        redrive = ops_dlq.redrive(self.sqs, dlq_url, queue_url, dedup_window="new-id")
        for note in redrive.notes:
            self.console.step(f"  ops redrive: {note}")
        report.redriven += redrive.moved
        self.console.step(f"  ops redrive moved {redrive.moved} message(s) back to the queue")
        self.drain("after redrive (poison is quarantined again: its cause is not fixed)")

    # --- scenario: monthly fan-out ---------------------------------------------------------
    def monthly_scenario(self) -> None:
        schedules = self.session.registry.schedules
        if not schedules:
            self.console.step("monthly: the stack has no schedule (MonthlyFanout not deployed)")
            return
        for schedule in schedules.values():
            dispatcher = self.session.registry.function(schedule.target_arn)
            table = dispatcher.environment.get(dispatch_env.BILLING_ACCOUNTS_TABLE)
            queue = dispatcher.environment.get(dispatch_env.WORK_QUEUE_URL)
            consumer_name = self._consumer_fed_by(queue)
            if not table or consumer_name is None:
                self.failures.append(
                    f"schedule {schedule.name}: cannot find its accounts table or work consumer"
                )
                continue
            report = self.report_for(consumer_name)
            report.notify_key = "idempotency_key"
            report.row_key = self._row_key(report, "idempotency_key")
            for tenant, employee in seed_billing_accounts(
                self.ddb, dispatcher.environment, DEMO_ACCOUNTS
            ):
                report.valid_events.add(charge_key(tenant, employee, DEMO_MONTH))
            when = scheduled_time_for_month(schedule, DEMO_MONTH)
            self.console.step(
                f"monthly: {DEMO_ACCOUNTS} billing accounts; schedule {schedule.name} "
                f"({schedule.expression} {schedule.timezone}) fires for {DEMO_MONTH} "
                f"at {when:%Y-%m-%dT%H:%MZ}, TWICE"
            )
            for attempt in (1, 2):
                result = fire(
                    self.session.registry,
                    schedule.name,
                    when,
                    endpoint_url=self.session.endpoint_url,
                    attempt=attempt,
                    sqs=self.sqs,
                )
                if not result.ok:
                    self.failures.append(f"dispatcher fire {attempt} failed: {result.error!r}")
                self.console.step(f"  fire {attempt}: {json.dumps(result.response, default=str)}")
            counts = queue_counts(self.sqs, report.consumer.queue_url or "")
            report.sent += counts["visible"]
            report.sent_parts.append(f"{counts['visible']} charges enqueued by the two fires")
            self.console.step(
                f"  {counts['visible']} charge(s) in the FIFO work queue; the charge consumer's "
                "first SNS publish will crash the process after the commit"
            )
            crash = self.faults.crash_once("PublishBatch")
            self.drain("monthly work queue")
            if crash.fired != 1:
                self.failures.append("the injected crash in the charge consumer never fired")
            self.faults.remove(crash)
            self.expect_alarms("the injected crash", crashed_function=report.consumer.function_name)

            self.console.step(
                f"monthly: an operator re-runs {DEMO_MONTH} by hand with restart "
                "(ops run-month's payload + restart): every charge is enqueued again"
            )
            rerun = invoke(
                dispatcher,
                {"month": DEMO_MONTH, "trigger": "manual", "restart": True},
                region=self.session.region,
                endpoint_url=self.session.endpoint_url,
            )
            if not rerun.ok:
                self.failures.append(f"manual re-run failed: {rerun.error!r}")
            self.console.step(f"  re-run: {json.dumps(rerun.response, default=str)}")
            counts = queue_counts(self.sqs, report.consumer.queue_url or "")
            report.sent += counts["visible"]
            report.sent_parts.append(f"{counts['visible']} re-enqueued by the manual re-run")
            self.drain(
                "re-run: the consumer skips every charge already recorded (real SQS would "
                "also drop the re-sends by FIFO deduplication within 5 minutes; moto forgets "
                "the ids of deleted messages)"
            )

    def _row_key(self, report: ConsumerReport, expected: str) -> str | None:
        """The row attribute to count events by: the reference handler's, else none (a
        consumer of someone else's writes rows the demo cannot read)."""
        name = report.consumer.function_name
        handler = self.session.registry.functions[name].handler if name else ""
        known = KNOWN_ROW_KEYS.get(handler)
        if known != expected:
            report.notes.append(
                f"rows and notifications not checked: {handler or 'its handler'} is not a "
                "reference handler (declare what to check: idempotent-messaging-local "
                "--one-row-per-event)"
            )
            return None
        return known

    def _consumer_fed_by(self, work_queue_url: str | None) -> str | None:
        for name, c in self.consumers.items():
            if work_queue_url and c.queue_url == work_queue_url:
                return name
        return None

    # --- report ----------------------------------------------------------------------------
    def collect(self) -> None:
        prefix = f"{CONFIGURATION_FAILURE_CLASS}: "
        for report in self.reports.values():
            c = report.consumer
            table = c.extra.get("business_table_name")
            if table and report.row_key is not None:
                rows = scan_all(self.ddb, table)
                report.rows = len(rows)
                for row in rows:
                    key = row.get(report.row_key) or {}
                    report.rows_per_event[str(next(iter(key.values()), "?"))] += 1
            if report.observer is not None:
                report.notifications = report.observer.by_key(report.notify_key)
            logged = self.outcomes.of(c.function_name) if c.function_name else None
            if logged is not None:
                report.outcomes = Counter(logged.counts)
                for reason, n in logged.reasons.get(Outcome.FAILED, Counter()).items():
                    if reason.startswith(prefix):
                        report.configuration_failures[reason.removeprefix(prefix)] += n
            if c.dlq_url:
                report.dlq_depth = queue_counts(self.sqs, c.dlq_url)["visible"]
                for m in ops_dlq.peek(self.sqs, c.dlq_url, 50):
                    reasons = m.reasons()
                    reason = reasons.get("failure_reason") or "moved by SQS (maxReceiveCount)"
                    if "failure_reason" not in reasons:
                        report.dlq_reasons_missing += 1
                    kind = reasons.get("failure_kind") or reasons.get("failure_class") or "-"
                    report.dlq_reasons[f"{kind}: {reason}"] += 1
            if c.queue_url:
                counts = queue_counts(self.sqs, c.queue_url)
                report.queue_left = counts["visible"] + counts["in_flight"]

    def print_report(self) -> bool:
        out = self.console.line
        ok = not self.failures
        out("")
        out("=" * 78)
        out(f"REPORT  stack={self.stack}  endpoint={self.session.endpoint_url}")
        out("=" * 78)
        out("Each count is read back from the emulator or from the handlers' own log records;")
        out("the text after a count says what it is.")
        for name, r in self.reports.items():
            c = r.consumer
            table = c.extra.get("business_table_name", "?")
            dlq = (c.dlq_url or "?").rsplit("/", 1)[-1]
            out("")
            out(f"consumer {name}  (function {c.function_name})")
            row = self._row(out)
            row("messages sent", r.sent, "; ".join(r.sent_parts))
            if r.redriven:
                row(
                    "redriven from the DLQ",
                    r.redriven,
                    "moved back by ops redrive after the fix; the poison among them is "
                    "quarantined again",
                )
            row("distinct events", len(r.valid_events), "valid event ids among the messages sent")
            row(
                "invocation errors",
                self.invocation_errors.get(c.function_name or "", 0),
                "invocations that crashed or timed out; SQS redelivered all of their records",
            )
            if r.row_key is not None:
                row("business rows", r.rows, f"rows in {table}")
            for note in r.notes:
                out(f"  note: {note}")
            if r.observer is not None:
                row(
                    "notifications",
                    sum(r.notifications.values()),
                    "SNS messages a subscriber received (the demo's observer queue)",
                )
            out("  per-record outcomes from the runtime's log (a redelivered record counts again):")
            for outcome, meaning in OUTCOME_MEANINGS.items():
                row(f"  {outcome}", r.outcomes.get(outcome, 0), meaning)
            row(
                "DLQ depth",
                r.dlq_depth,
                f"messages in {dlq} now" + (", by reason:" if r.dlq_reasons else ""),
            )
            for reason, n in r.dlq_reasons.most_common():
                out(f"    {n} x {reason}")
            out("  invariants (the exit code is 1 if any fails):")
            for label, passed, detail in check_invariants(r):
                ok = ok and passed
                out(f"  [{'PASS' if passed else 'FAIL'}] {label}: {detail}")
        verdicts = evaluate_alarms(
            self.session.registry, self.sqs, self.session.endpoint_url, self.invocation_errors
        )
        firing = sum(v.in_alarm for v in verdicts)
        out("")
        out(
            f"alarms: {firing} of {len(verdicts)} would be in ALARM. Each deployed alarm's "
            "metric is read from the emulator now and compared with its threshold;"
        )
        out("moto keeps no metric history, so this is the state reached if the value persists.")
        out("An alarm the scenario trips by design is [expected]; any other in ALARM fails it:")
        for v in verdicts:
            state = "ALARM" if v.in_alarm else ("OK" if v.value is not None else "n/a")
            shown = "-" if v.value is None else f"{v.value:.3g}"
            why = self.expected_alarms.get(v.alarm.name)
            out(
                f"  {state:<5} {v.alarm.name}: {v.alarm.metric_name} {shown} "
                f"{v.alarm.comparison_operator} {v.alarm.threshold:g} ({v.basis})"
                + (f" [expected: {why}]" if why else "")
            )
            if v.in_alarm and why is None:
                ok = False
                out(f"  [FAIL] {v.alarm.name} would be in ALARM; the scenario does not explain it")
            elif why is not None and not v.in_alarm:
                ok = False
                out(f"  [FAIL] {v.alarm.name} should be in ALARM ({why}) and is not")
        out("")
        for failure in self.failures:
            out(f"[FAIL] {failure}")
        out(
            "note: failed records were made visible again at once (ChangeMessageVisibility 0) "
            "instead of after the queue's visibility timeout, to keep the demo short."
        )
        elapsed = time.monotonic() - self.console.started
        verdict = "all invariants hold" if ok else "INVARIANT VIOLATED"
        out(f"RESULT: {verdict} ({len(self.reports)} consumers, {elapsed:.0f} s)")
        return ok

    @staticmethod
    def _row(out: Callable[[str], None]) -> Callable[[str, int, str], None]:
        def row(label: str, count: int, meaning: str) -> None:
            out(f"  {label:<24}{count:>5}  {meaning}")

        return row


def keep_running(demo: Demo, stack: str) -> None:
    session = demo.session
    path = state_path(stack)
    session.save(path)
    ep = session.endpoint_url
    region = session.region
    # The interpreter running the demo has the ops CLI's dependencies (.venv on `make demo`).
    python = sys.executable
    out = demo.console.line
    out("")
    out(f"The emulator keeps running at {ep} (region {region}).")
    out(
        f"Its deploy is saved to {path}: endpoint_url, region and the stack outputs "
        "(queue URLs, table names) under 'outputs', for scripts of your own."
    )
    out("The poller keeps processing the stack's queues. Try, with fake credentials:")
    out(
        "  export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing "
        f"AWS_DEFAULT_REGION={region}"
    )
    out(f"  aws --endpoint-url {ep} sqs list-queues")
    for name, c in demo.consumers.items():
        if name.endswith("orders") and c.queue_url:
            body = '{"event_id":"manual-1","order":{"order_id":"manual-1"}}'
            out(
                f"  aws --endpoint-url {ep} sqs send-message --queue-url {c.queue_url} "
                f"--message-body '{body}'"
            )
    for report in demo.reports.values():
        table = report.consumer.extra.get("business_table_name")
        if table:
            out(f"  aws --endpoint-url {ep} dynamodb scan --table-name {table}")
    out(f"  aws --endpoint-url {ep} cloudwatch describe-alarms --query 'MetricAlarms[].AlarmName'")
    out(f"  cd {PROJECT_DIR.resolve()}")
    out(f"  {python} -m idempotent_messaging.ops consumers --emulator --stack {stack}")
    for name in demo.reports:
        out(f"  {python} -m idempotent_messaging.ops peek {name} --emulator --stack {stack}")
    if session.registry.schedules:
        out(
            f"  {python} -m idempotent_messaging.ops run-month --month 2026-07 --stack {stack} "
            "--target emulator --seed 5"
        )
    out("Ctrl-C stops it.")

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Ctrl-C and `kill` both stop it cleanly. SIGINT is set explicitly because a process
    # started in the background by a shell script inherits SIGINT as ignored.
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            for mapping in demo.poller.sqs_mappings():
                try:
                    demo.poller.poll_once(mapping)
                except Exception as exc:  # e.g. a queue someone deleted: report, keep serving
                    demo.console.step(f"  poll of {mapping.function_name} failed: {exc}")
            time.sleep(1)
    except KeyboardInterrupt:
        out("stopping the emulator")
    finally:
        path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--keep", action="store_true", help="leave the emulator running")
    parser.add_argument("--verbose", action="store_true", help="show the handlers' log lines")
    parser.add_argument("--project", type=Path, default=PROJECT_DIR)
    args = parser.parse_args(argv)
    # Powertools warns on stderr for every invocation that emitted no metric (a crashed one).
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    log_path = None if args.verbose else emulator_state_dir() / f"demo-{args.stack}.log"
    with handler_output_to(log_path) as stream:
        console = Console(stream)
        console.step(f"starting the emulator and deploying stack {args.stack}")
        session = start_session(args.stack, args.project)
        try:
            assert session.deploy_result is not None
            buffer = io.StringIO()
            print_report(session.deploy_result, buffer)
            for line in buffer.getvalue().splitlines():
                console.line("           " + line)
            console.step(f"emulator at {session.endpoint_url}")
            demo = Demo(args.stack, session, console)
            demo.outcomes.install()
            try:
                # The scenarios check that each fault fired and report it as an invariant.
                with demo.faults.installed(check_fired=False):
                    demo.orders_scenario()
                    demo.monthly_scenario()
            finally:
                demo.outcomes.uninstall()
            sys.stdout.flush()
            if not demo.reports:
                demo.failures.append(
                    "the stack has neither an orders consumer nor a schedule (the demo drives "
                    "the reference stack; a project of your own: idempotent-messaging-local, "
                    "docs/local.md)"
                )
            demo.collect()
            ok = demo.print_report()
            if log_path:
                console.line(f"handler logs: {log_path}")
            console.step("done")
            if args.keep:
                keep_running(demo, args.stack)
        finally:
            session.close()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
