"""`make demo KEEP=1` end to end: the dev stack, the real handlers, the report, the kept
emulator serving the ops CLI and new traffic, and a clean stop."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
import pytest

from idempotent_messaging.local.demo import OUTCOME_MEANINGS, ConsumerReport, check_invariants
from idempotent_messaging.ops.cli import main as ops_main
from idempotent_messaging.ops.outputs import DeployedConsumer
from idempotent_messaging.runtime.observability import Outcome
from tests.e2e.kept import HANG_GUARD_S, KeptProcess
from tests.e2e.kept import environment as kept_environment

pytestmark = pytest.mark.e2e

PROJECT = Path(__file__).resolve().parents[2]


def _visible(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def test_report_explains_every_outcome_the_runtime_logs() -> None:
    assert set(OUTCOME_MEANINGS) == set(Outcome)


def _report(**fields: Any) -> ConsumerReport:
    report = ConsumerReport(DeployedConsumer(name="orders"), valid_events={"e1", "e2"}, poison=1)
    report.rows, report.rows_per_event = 2, Counter({"e1": 1, "e2": 1})
    report.dlq_depth = 1
    for name, value in fields.items():
        setattr(report, name, value)
    return report


@pytest.mark.parametrize(
    ("broken", "fails", "detail"),
    [
        ({}, set(), "2 rows for 2 events"),
        (
            {"rows": 3, "rows_per_event": Counter({"e1": 2, "e2": 1})},
            {"one business row per event"},
            "duplicated ['e1']",
        ),
        (
            {"rows": 1, "rows_per_event": Counter({"e1": 1})},
            {"one business row per event", "nothing lost"},
            "missing ['e2']",
        ),
        ({"queue_left": 1}, {"nothing lost"}, "1 left in the queue"),
        ({"dlq_depth": 1, "dlq_reasons_missing": 1}, {"nothing lost"}, "1 without"),
    ],
)
def test_each_invariant_fails_on_the_numbers_that_break_it(
    broken: dict[str, Any], fails: set[str], detail: str
) -> None:
    checks = check_invariants(_report(**broken))
    assert {label for label, passed, _ in checks if not passed} == fails
    assert any(detail in text for _, _, text in checks)


def test_demo_keeps_every_invariant_and_keep_serves_the_ops_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    argv = [sys.executable, "-m", "idempotent_messaging.local.demo", "--stack", "dev", "--keep"]
    state = tmp_path / "dev.json"
    with KeptProcess(argv, PROJECT, kept_environment(tmp_path)) as kept:
        kept.wait_for_line("The emulator keeps running at")
        endpoint = json.loads(state.read_text())["endpoint_url"]
        # The kept emulator answers the ops CLI: the DLQ holds the three poison messages.
        monkeypatch.setenv("EMULATOR_STATE_DIR", str(tmp_path))
        assert ops_main(["consumers", "--emulator", "--stack", "dev", "--json"]) == 0
        orders = {c["name"]: c for c in json.loads(capfd.readouterr().out)}["orders"]
        assert (orders["name"], orders["dlq_visible"], orders["queue_visible"]) == ("orders", 3, 0)

        # ... and its poller still processes an outside script's traffic, which knows only
        # the state file: a new order sent twice and one poison message.
        saved = json.loads(state.read_text())
        kwargs = {
            "endpoint_url": saved["endpoint_url"],
            "region_name": saved["region"],
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        outside_sqs = boto3.client("sqs", **kwargs)
        for body in (
            json.dumps({"event_id": "kept-1", "order": {"order_id": "kept-1"}}),
            json.dumps({"event_id": "kept-1", "order": {"order_id": "kept-1"}}),
            "kept poison",
        ):
            outside_sqs.send_message(
                QueueUrl=saved["outputs"]["orders_queue_url"], MessageBody=body
            )
        # `make run-month TARGET=emulator` attaches to it; re-running the demo's month sends
        # every charge again and still leaves one ledger row per employee.
        # --seed 14 writes the demo's 12 accounts again plus 2 new ones.
        args = ["run-month", "--month", "2026-06", "--stack", "dev", "--target", "emulator"]
        assert ops_main([*args, "--seed", "14"]) == 0
        rerun = capfd.readouterr()
        assert f"attached to the kept emulator at {endpoint}" in rerun.err  # progress
        assert "seeded 14 active billing accounts" in rerun.err
        assert json.loads(rerun.out)["response"]["enqueued"] == 14  # stdout: the result alone
        ddb = boto3.client("dynamodb", **kwargs)
        outputs = saved["outputs"]
        ledger = ddb.scan(TableName=outputs["monthly_charge_consumer_business_table_name"])
        assert ledger["Count"] == 14

        table = outputs["orders_business_table_name"]
        dlq = outputs["orders_dlq_url"]
        # The kept poller polls every second; the bound is a hang guard, not a budget.
        deadline = time.monotonic() + HANG_GUARD_S
        while _visible(outside_sqs, dlq) < 4:  # the demo's 3 poison + the outside one
            assert time.monotonic() < deadline, "the kept poller did not quarantine the poison"
            time.sleep(0.3)
        rows = ddb.scan(TableName=table)["Items"]
        assert [r["order_id"]["S"] for r in rows].count("kept-1") == 1
        out = kept.interrupt()  # Ctrl-C
    assert kept.proc.returncode == 0, out
    assert "stopping the emulator" in out
    assert not state.exists()
    assert "RESULT: all invariants hold" in out
    assert "[FAIL]" not in out
    for expected in (
        "messages sent              18  12 orders (10 events + 2 duplicate sends of evt-001); "
        "2 producer re-sends; 3 poison; 1 order throttled until its last receive",
        "redriven from the DLQ       4",
        "invariants (the exit code is 1 if any fails):",
        "alarms: 3 of 14 would be in ALARM",  # + 2 conflicting-duplicate alarms (issue 27)
        f"{sys.executable} -m idempotent_messaging.ops consumers --emulator --stack dev",
        "[PASS] one business row per event",
        "[PASS] >= 1 notification per event",
        "[PASS] nothing lost",
        # The manual move by default (ops redrive): every first-seen time carried or
        # established, never SQS's native move task.
        "ops redrive moved 4 message(s) back to the queue",
        f"aws --endpoint-url {endpoint} sqs list-queues",
        # The DLQ holds the poison: its alarm would fire, as the scenario means it to.
        "ALARM orders-dev-dlq-not-empty",
        "(ApproximateNumberOfMessages now) [expected: the poison stays quarantined]",
        "[PASS] no configuration error",
        "consumer monthly_charge_consumer",
        "fires for 2026-06 at 2026-05-31T18:00Z, TWICE",
        "[PASS] one business row per event: 12 rows for 12 events",
    ):
        assert expected in out
    # Outcomes come from the runtime's own records: the crash after the commit left pending
    # claims that the redelivery republished; the 2 extra sends of evt-001 and the 2 re-sends
    # were duplicates. Batches run concurrently, so a copy of evt-001 in another batch may meet
    # the crashed batch's pending claim and republish it instead of being skipped: the 4 extra
    # copies and the >= 1 republish are counted together.
    orders_section = out.split("consumer orders")[1].split("consumer monthly_charge")[0]
    counts = {
        parts[0]: int(parts[1])
        for parts in (line.split() for line in orders_section.splitlines())
        if len(parts) > 2 and parts[0] in OUTCOME_MEANINGS and parts[1].isdigit()
    }
    assert counts["republished"] >= 1
    assert counts["duplicate_skipped"] + counts["republished"] >= 4 + 1
    assert counts["quarantined"] >= 3
    assert '"outcome"' not in out  # handler log lines went to the log file
    assert '"outcome":"republished"' in (tmp_path / "demo-dev.log").read_text().replace(" ", "")
