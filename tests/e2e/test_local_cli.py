"""Any project runs locally: a team's own project (tests/e2e/fixtures/shop: a standard and a
FIFO consumer from its stack file, and a raw pulumi_aws SQS + Lambda) on the embedded emulator,
through the Python API and the ``idempotent-messaging-local`` command, reported per consumer
from the runtime's own outcome lines and metrics and the stack's own alarms."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.local.demo import ConsumerReport, check_invariants
from idempotent_messaging.local.report import StackReport
from idempotent_messaging.ops.outputs import DeployedConsumer
from tests.e2e.conftest import FIXTURES
from tests.e2e.kept import KeptProcess
from tests.e2e.kept import environment as kept_environment

pytestmark = pytest.mark.e2e

SHOP = FIXTURES / "shop"
SECRETS = FIXTURES / "secrets"
UNSUPPORTED = FIXTURES / "unsupported"
REPOSITORY = Path(__file__).resolve().parents[2]
PAYMENT = {"event_id": "pay-{i}", "payment_id": "p-{i}", "amount": 100}


@pytest.fixture(scope="module")
def shop_run() -> dict[str, Any]:
    """One scenario through the Python API: duplicates, a poison payment, two FIFO events of one
    shipment, and raw audit messages of which one can never be processed."""
    from idempotent_messaging.local import local_stack

    declared = {"payments": "event_id", "shipments": "event_id"}
    with local_stack(SHOP, "e2e", one_row_per_event=declared) as s:
        names = sorted(s.consumers)
        s.send("payments", PAYMENT, count=3, duplicate=True)
        s.send("payments", {"event_id": "pay-bad", "amount": 1})  # no payment_id: poison
        s.send("shipments-e2e.fifo", {"event_id": "ship-{i}", "shipment_id": "s-1"}, count=2)
        s.send("shop-audit", {"audit_id": "a-{i}", "what": "login"}, count=2)
        s.send("audit-fn", "not json")
        s.drain()
        report = s.report()
        rows = s.client("dynamodb").scan(TableName="shop-audit-log")["Count"]
    return {"names": names, "report": report, "audit_rows": rows}


def test_every_consumer_of_the_stack_is_found_whoever_declared_it(shop_run: dict[str, Any]) -> None:
    assert shop_run["names"] == ["audit-fn", "payments", "shipments"]
    report: StackReport = shop_run["report"]
    assert report["payments"].kind == "IdempotentQueueConsumer"
    assert report["shipments"].queue == "shipments-e2e.fifo"
    assert report["audit-fn"].kind == "raw pulumi_aws"


def test_outcomes_come_from_the_runtimes_own_log_lines(shop_run: dict[str, Any]) -> None:
    payments = shop_run["report"]["payments"]
    assert payments.runtime
    assert (payments.sent, payments.processed, payments.duplicates) == (7, 3, 3)
    assert payments.quarantined == 1
    reason = "schema: field 'payment_id' is missing or not a string"
    assert payments.reasons["quarantined"] == Counter({reason: 1})
    assert (payments.dlq_depth, payments.dlq_reasons) == (1, Counter({reason: 1}))
    assert payments.left_in_queue == 0


def test_the_stacks_own_alarms_are_evaluated_against_the_run(shop_run: dict[str, Any]) -> None:
    report: StackReport = shop_run["report"]
    # The component's DLQ alarm, and the team's own alarm on the runtime's EMF metric.
    assert set(report["payments"].firing) == {
        "payments-e2e-dlq-not-empty",
        "shop-payments-quarantined",
    }, [(a.name, a.value, a.basis) for a in report["payments"].alarms]
    quarantined = next(
        a for a in report["payments"].alarms if a.name == "shop-payments-quarantined"
    )
    assert quarantined.value == 1 and "EMF" in quarantined.basis
    assert report["shipments"].firing == []
    assert report["audit-fn"].firing == ["shop-audit-dlq-not-empty"]


def test_a_raw_consumer_is_reported_from_its_mapping_without_guessing_outcomes(
    shop_run: dict[str, Any],
) -> None:
    audit = shop_run["report"]["audit-fn"]
    assert not audit.runtime and audit.outcomes == Counter()
    assert (audit.sent, audit.deleted) == (3, 2)
    # The unparsable message: delivered twice (maxReceiveCount 2), then moved by SQS.
    assert audit.reported_failed == 2
    assert audit.dlq_depth == 1
    assert audit.dlq_reasons == Counter(
        {"no reason attached: moved by SQS after maxReceiveCount receives": 1}
    )
    assert audit.checks == []  # declared nothing: nothing is judged
    assert shop_run["audit_rows"] == 2


def test_only_declared_invariants_are_checked_and_they_say_why(shop_run: dict[str, Any]) -> None:
    report: StackReport = shop_run["report"]
    (payments,) = report["payments"].checks
    assert payments.passed, payments.detail
    assert "3 row(s), 3 distinct event_id; 3 event(s) completed" in payments.detail
    # shipments keeps one row per shipment, not per event: the declaration is wrong, and the
    # numbers say so.
    (shipments,) = report["shipments"].checks
    assert not shipments.passed
    assert "2 event(s) completed per the runtime's log; no row for ['ship-1']" in shipments.detail
    assert not report.ok
    text = report.text()
    assert "  - shipments: invariant: one row per event (shipments-e2e-shipments.event_id)" in (
        text
    )
    assert "[FAIL]" not in text.split("consumer payments")[1].split("consumer shipments")[0]


def test_the_demo_reports_no_row_failure_for_a_consumer_it_cannot_read() -> None:
    """`local.demo --project` on someone else's consumer: no '[FAIL] ... duplicated ['?']'."""
    report = ConsumerReport(DeployedConsumer(name="charges"), valid_events={"k1", "k2"})
    report.row_key = None  # not a reference handler: its rows are not the demo's to read
    report.rows, report.rows_per_event = 2, Counter({"?": 2})
    checks = check_invariants(report)
    assert [label for label, _, _ in checks] == ["no configuration error", "nothing lost"]
    assert all(passed for _, passed, _ in checks)


def test_the_demo_fails_a_consumer_whose_records_failed_for_its_configuration() -> None:
    report = ConsumerReport(DeployedConsumer(name="orders"))
    report.row_key = None
    report.configuration_failures = Counter({"IDEMPOTENCY_STATE_TABLE is missing": 5})
    checks = {label: (passed, detail) for label, passed, detail in check_invariants(report)}
    assert checks["no configuration error"] == (
        False,
        "5 deliveries failed: IDEMPOTENCY_STATE_TABLE is missing",
    )


# --- The command -----------------------------------------------------------------------------


def local_cli(
    *args: str, state: Path, timeout: float = 300, **popen: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "idempotent_messaging.local", *args],
        cwd=REPOSITORY,
        env={**os.environ, "EMULATOR_STATE_DIR": str(state)},
        capture_output=True,
        text=True,
        timeout=timeout,
        **popen,
    )


def test_a_failed_declared_invariant_exits_1_and_json_alone_on_stdout_carries_the_numbers(
    tmp_path: Path,
) -> None:
    """The console script as a script pipes it: stdout parses as ONE JSON document, even with
    the handlers' log lines shown (--verbose: on stderr) and the progress lines."""
    done = local_cli(
        "--project", str(SHOP), "--stack", "e2e", "--json", "--verbose",
        "--one-row-per-event", "shipments=event_id",
        "send", "--queue", "shipments", "--body", '{"event_id": "s-{i}", "shipment_id": "x"}',
        "--count", "2",
        state=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    (check,) = report["consumers"]["shipments"]["checks"]
    assert report["ok"] is False and check["passed"] is False
    assert "no row for ['s-1']" in check["detail"]
    assert [(f["consumer"], f["kind"]) for f in report["failures"]] == [("shipments", "invariant")]
    assert '"outcome":"processed"' in done.stderr.replace(" ", "")  # --verbose: stderr
    assert "draining every event source mapping" in done.stderr


# --- The verdict and the exit status, in-process: stdout is the report alone -----------------


def run_cli(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, state: Path, *args: str
) -> tuple[int, str, str]:
    """The command's main in this process: (exit status, stdout, stderr) as captured."""
    from idempotent_messaging.local.cli import main

    monkeypatch.setenv("EMULATOR_STATE_DIR", str(state))
    capfd.readouterr()
    code = main(list(args))
    out, err = capfd.readouterr()
    return code, out, err


def test_a_configuration_error_exits_1_with_the_failures_in_the_json_alone_on_stdout(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The consumer of issue 34's second kind: deployed without the topic its handler
    publishes to; every message ends in the DLQ. Exit 1, never RESULT: OK."""
    code, out, err = run_cli(
        capfd, monkeypatch, tmp_path,
        "--project", str(SECRETS), "--stack", "e2e", "--json",
        "send", "--queue", "alerts", "--body", '{"event_id": "alert-{i}"}', "--count", "2",
    )  # fmt: skip
    assert code == 1, err[-3000:]
    # In this process the handlers' EMF documents reach pytest's stdout object, not the
    # descriptor the command redirects (a real process: the subprocess test above, where
    # stdout parses whole); the report is the pretty-printed document after them.
    report = json.loads(out[out.index("{\n") :])
    assert report["ok"] is False
    assert [(f["consumer"], f["kind"]) for f in report["failures"]] == [
        ("alerts", "configuration"),
        ("alerts", "alarm"),
    ]
    assert "NOTIFICATION_TOPIC_ARN is missing" in report["failures"][0]["detail"]
    assert "deploying stack e2e of project secretshop" in err  # progress


def test_expected_alarms_make_a_poison_run_ok_and_are_required_to_fire(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    poison = ("send", "--queue", "payments", "--body", '{"event_id": "pay-bad", "amount": 1}')
    expected = (
        "--expect-alarm", "payments-e2e-dlq-not-empty",  # by name
        "--expect-alarm", "payments-quarantined-alarm",  # by resource name
    )  # fmt: skip
    project = ("--project", str(SHOP), "--stack", "e2e")
    code, out, err = run_cli(capfd, monkeypatch, tmp_path, *project, *expected, *poison)
    assert code == 0, out[-3000:] + err[-3000:]
    assert "RESULT: OK (3 consumer(s), 0 declared invariant(s), 2 expected alarm(s)" in out
    assert "payments-e2e-dlq-not-empty: ApproximateNumberOfMessagesVisible 1" in out
    assert "(ApproximateNumberOfMessages now) [expected]" in out
    # An expected alarm that the run does not trip fails it: nothing was sent.
    code, out, _ = run_cli(
        capfd, monkeypatch, tmp_path, *project, *expected[:2], "run", "--no-schedules"
    )
    assert code == 1
    assert (
        "  - payments: expected alarm: payments-e2e-dlq-not-empty was declared expected in "
        "ALARM but is OK" in out
    )


def test_an_expected_alarm_the_stack_does_not_have_is_refused_before_any_traffic(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, out, err = run_cli(
        capfd, monkeypatch, tmp_path,
        "--project", str(SHOP), "--stack", "e2e", "--json", "--expect-alarm", "payments-dlq",
    )  # fmt: skip
    assert code == 2
    assert out == ""
    assert "no alarm 'payments-dlq' in stack e2e; its alarms: " in err
    assert "payments-e2e-dlq-not-empty" in err


def test_a_stack_with_resources_the_emulator_does_not_hold_is_refused_by_name(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, out, err = run_cli(
        capfd, monkeypatch, tmp_path, "--project", str(UNSUPPORTED), "--stack", "e2e"
    )
    assert code == 2
    assert "aws:ec2/vpc:Vpc 'network': not supported" in err
    assert "SQS, Lambda, DynamoDB, SNS, EventBridge Scheduler and CloudWatch" in err
    assert "REPORT" not in out


def test_without_the_local_extra_the_command_names_it(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['moto'] = None\n"
        "from idempotent_messaging.local.cli import main\n"
        f"raise SystemExit(main(['--project', {str(SHOP)!r}, '--stack', 'e2e']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 2
    assert "needs the `local` extra (missing: moto)" in done.stderr
    assert "pip install 'idempotent-messaging[local]'" in done.stderr
    api = subprocess.run(
        [sys.executable, "-c", code.split("\n")[0] + "\nfrom idempotent_messaging.local import "
         "local_stack\n"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert api.returncode == 1
    assert "pip install 'idempotent-messaging[local]'" in api.stderr


def test_a_kept_emulator_reports_alone_on_stdout_and_takes_sends_from_another_terminal(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The command in its own process (`python -m idempotent_messaging.local`, the entry point
    a user runs): its stdout is the report alone, progress on stderr, the handlers' lines in
    the log file. Then the other terminal's commands (`send`, `report`, the ops CLI) run in
    this process, which shares nothing with it but the state directory."""
    from idempotent_messaging.ops.cli import main as ops_main

    state = tmp_path / "e2e.json"
    argv = [sys.executable, "-m", "idempotent_messaging.local", "--project", str(SHOP),
            "--stack", "e2e", "--one-row-per-event", "payments=event_id",
            "run", "--keep"]  # fmt: skip
    environment = kept_environment(tmp_path)
    with KeptProcess(argv, REPOSITORY, environment, separate_stderr=True) as kept:
        kept.wait_for_line("The emulator keeps running at")
        assert (tmp_path / "e2e.report.json").is_file()
        code, out, err = run_cli(
            capfd, monkeypatch, tmp_path,
            "--project", str(SHOP), "--stack", "e2e",
            "send", "--queue", "payments", "--body", json.dumps(PAYMENT), "--duplicate",
        )  # fmt: skip
        assert code == 0, out[-3000:] + err[-3000:]
        assert "attached to the kept emulator at" in err
        assert "sent 2 message(s) to payments-e2e (each twice: a producer retry)" in err
        assert out.startswith("=" * 78 + "\nREPORT  project=shop")  # the report alone
        payments = out.split("consumer payments")[1].split("consumer shipments")[0]
        assert "messages sent                  2" in payments  # sent by the other process
        assert "processed                    1" in payments
        assert "duplicate_skipped            1" in payments
        assert "[PASS] one row per event (payments-e2e-payments.event_id)" in payments
        code, out, _ = run_cli(
            capfd, monkeypatch, tmp_path, "--project", str(SHOP), "--stack", "e2e", "report"
        )
        assert code == 0 and "consumer payments" in out
        capfd.readouterr()
        assert ops_main(["consumers", "--emulator", "--stack", "e2e", "--json"]) == 0
        ops = capfd.readouterr()
        assert "payments" in {c["name"] for c in json.loads(ops.out)}, ops.err
        out = kept.interrupt()
    err = kept.errors
    assert kept.proc.returncode == 0, out + err
    assert "stopping the emulator" in err
    assert not state.exists()
    # The run's own report, on stdout alone; its progress on stderr.
    assert out.startswith("=" * 78 + "\nREPORT  project=shop  stack=e2e"), out[:500]
    for progress in (
        "starting the embedded AWS emulator",
        "deploying stack e2e of project shop",
        "draining every event source mapping",
    ):
        assert progress in err and progress not in out, progress
    for expected in (
        "consumer audit-fn  (raw pulumi_aws",
        "consumer payments  (IdempotentQueueConsumer",
        "consumer shipments  (IdempotentQueueConsumer",
        "[PASS] one row per event (payments-e2e-payments.event_id)",
        "RESULT: OK (3 consumer(s), 1 declared invariant(s)",
    ):
        assert expected in out, expected
    assert '"outcome"' not in out + err  # the handlers' lines went to the log file
    assert '"outcome":"processed"' in (tmp_path / "local-e2e.log").read_text().replace(" ", "")
