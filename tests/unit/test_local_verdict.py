"""The local report's verdict derives from what happened, one failure kind at a time.

Each test builds the numbers a run would have produced (local.stack reads them from the
handlers' outcome lines, the queues, the DLQ and the stack's alarms) and checks the verdict:
``failures``, ``ok``, the RESULT line and the JSON document scripts read. The end-to-end runs
that produce these numbers are tests/e2e/test_local_wrappers.py and test_local_cli.py.
"""

from __future__ import annotations

from collections import Counter

import pytest

from idempotent_messaging.local.report import (
    FAILURE_KINDS,
    NO_REASON,
    AlarmState,
    Check,
    ConsumerSummary,
    Failure,
    FireSummary,
    StackReport,
)

pytestmark = pytest.mark.unit

CONFIG_REASON = "environment variable IDEMPOTENCY_STATE_TABLE is missing or empty"


def consumer(**numbers: object) -> ConsumerSummary:
    summary = ConsumerSummary(
        name="payments",
        kind="IdempotentQueueConsumer",
        queue="payments-dev",
        function="payments-dev-consumer",
        dlq="payments-dev-dlq",
        runtime=True,
    )
    for key, value in numbers.items():
        setattr(summary, key, value)
    return summary


def alarm(name: str, state: str, *, expected: bool = False) -> AlarmState:
    return AlarmState(
        name=name,
        metric="ApproximateNumberOfMessagesVisible",
        state=state,
        value=3.0 if state == "ALARM" else 0.0,
        comparison="GreaterThanOrEqualToThreshold",
        threshold=1.0,
        basis="ApproximateNumberOfMessages now",
        expected=expected,
    )


def report_of(*consumers: ConsumerSummary, **extra: object) -> StackReport:
    report = StackReport("shop", "dev", "http://127.0.0.1:1")
    report.consumers = {c.name: c for c in consumers}
    for key, value in extra.items():
        setattr(report, key, value)
    return report


def kinds(report: StackReport) -> list[str]:
    return [f.kind for f in report.failures]


def test_a_run_where_nothing_failed_is_ok_and_says_so() -> None:
    report = report_of(consumer(sent=3, alarms=[alarm("dlq", "OK")]))
    assert report.failures == [] and report.ok
    assert report.to_json()["ok"] is True and report.to_json()["failures"] == []
    assert "RESULT: OK (1 consumer(s), 0 declared invariant(s), 0 expected alarm(s)" in (
        report.text()
    )


def test_the_issue_34_run_is_not_ok_every_record_failed_for_its_configuration() -> None:
    """What the emulator reported as RESULT: OK: every delivery failed for a missing
    variable, and SQS dead-lettered every message without a reason."""
    payments = consumer(
        sent=3,
        reasons={"failed": Counter({f"configuration: {CONFIG_REASON}": 15})},
        dlq_depth=3,
        dlq_reasons=Counter({NO_REASON: 3}),
    )
    report = report_of(payments)
    assert kinds(report) == ["configuration"]  # the reasonless DLQ is explained by it
    (failure,) = report.failures
    assert failure.consumer == "payments"
    assert failure.detail.startswith(f"15 deliveries failed: {CONFIG_REASON}")
    assert "(3 in payments-dev-dlq now)" in failure.detail
    text = report.text()
    assert "RESULT: OK" not in text
    assert f"  - payments: configuration: 15 deliveries failed: {CONFIG_REASON}" in text


def test_messages_dead_lettered_without_a_reason_fail_a_consumer_on_the_runtime() -> None:
    report = report_of(consumer(dlq_depth=2, dlq_reasons=Counter({NO_REASON: 2})))
    assert kinds(report) == ["dead-lettered without a reason"]


def test_a_raw_consumers_reasonless_dlq_is_judged_by_its_alarms_alone() -> None:
    """A function that does not run on the runtime attaches no reasons: SQS's redrive is its
    only way to the DLQ, so its own alarms decide."""
    raw = consumer(runtime=False, dlq_depth=1, dlq_reasons=Counter({NO_REASON: 1}))
    assert report_of(raw).ok
    raw.alarms = [alarm("audit-dlq-not-empty", "ALARM")]
    assert kinds(report_of(raw)) == ["alarm"]


def test_quarantined_poison_with_its_reason_is_not_a_failure_by_itself() -> None:
    poisoned = consumer(dlq_depth=1, dlq_reasons=Counter({"schema: field 'x' is missing": 1}))
    assert report_of(poisoned).ok


def test_messages_left_in_the_queue_fail_the_run() -> None:
    report = report_of(consumer(left_in_queue=4))
    (failure,) = report.failures
    assert failure.kind == "left in the queue"
    assert failure.detail == "4 message(s) in payments-dev, neither processed nor dead-lettered"


def test_an_alarm_in_alarm_fails_the_run_unless_declared_expected() -> None:
    firing = consumer(alarms=[alarm("payments-dev-dlq-not-empty", "ALARM")])
    (failure,) = report_of(firing).failures
    assert (failure.kind, failure.consumer) == ("alarm", "payments")
    assert failure.detail == (
        "payments-dev-dlq-not-empty would be in ALARM (ApproximateNumberOfMessagesVisible 3 "
        "GreaterThanOrEqualToThreshold 1)"
    )
    firing.alarms = [alarm("payments-dev-dlq-not-empty", "ALARM", expected=True)]
    report = report_of(firing)
    assert report.ok
    assert "[expected]" in report.text()
    assert "1 expected alarm(s)" in report.text()


def test_an_expected_alarm_that_would_not_fire_fails_the_run() -> None:
    quiet = consumer(alarms=[alarm("payments-dev-consumer-errors", "OK", expected=True)])
    (failure,) = report_of(quiet).failures
    assert failure.kind == "expected alarm"
    assert "payments-dev-consumer-errors was declared expected in ALARM but is OK" in (
        failure.detail
    )


def test_a_stack_alarm_of_no_consumer_is_judged_too() -> None:
    report = report_of(stack_alarms=[alarm("schedule-dlq-not-empty", "ALARM")])
    (failure,) = report.failures
    assert (failure.kind, failure.consumer) == ("alarm", None)


def test_a_failed_invariant_a_failed_fire_and_an_unsettled_drain_fail_the_run() -> None:
    checked = consumer(checks=[Check("one row per event (t.event_id)", False, "no row for [e1]")])
    report = report_of(
        checked,
        fires=[FireSummary("invoicing", "2026-06-01T03:00:00Z", False, "RuntimeError: boom")],
        run_failures=[Failure("run", "the drain did not settle within 5 s")],
    )
    assert kinds(report) == ["invariant", "schedule", "run"]
    document = report.to_json()
    assert document["ok"] is False
    assert [f["kind"] for f in document["failures"]] == ["invariant", "schedule", "run"]
    text = report.text()
    assert "RESULT: FAILED (3 failure(s)):" in text
    assert "  - payments: invariant: one row per event (t.event_id): no row for [e1]" in text
    assert "  - run: the drain did not settle within 5 s" in text


def test_every_failure_kind_the_verdict_gives_is_a_documented_one() -> None:
    report = report_of(
        consumer(
            reasons={"failed": Counter({f"configuration: {CONFIG_REASON}": 1})},
            left_in_queue=1,
            alarms=[alarm("a", "ALARM"), alarm("b", "OK", expected=True)],
            checks=[Check("c", False, "")],
        ),
        consumer(name="refunds", dlq_depth=1, dlq_reasons=Counter({NO_REASON: 1})),
        fires=[FireSummary("s", "t", False, "x")],
        run_failures=[Failure("run", "x")],
    )
    assert set(kinds(report)) == set(FAILURE_KINDS)
