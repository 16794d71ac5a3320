"""`make demo KEEP=1` end to end: the dev stack, the real handlers, the report, the kept
emulator serving the ops CLI and new traffic, and a clean stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest

from emulator.server import DEFAULT_REGION
from ops.cli import main as ops_main

pytestmark = pytest.mark.e2e

PROJECT = Path(__file__).resolve().parents[2]


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, _ = proc.communicate()
            pytest.fail(f"the demo did not keep running (rc={proc.returncode}):\n{out}")
        time.sleep(0.3)


def test_demo_keeps_every_invariant_and_keep_serves_the_ops_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**os.environ, "EMULATOR_STATE_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator.demo", "--stack", "dev", "--keep"],
        cwd=PROJECT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    state = tmp_path / "dev.json"
    try:
        _wait_for(state, proc)
        endpoint = json.loads(state.read_text())["endpoint_url"]

        # The kept emulator answers the ops CLI: the DLQ holds the three poison messages.
        monkeypatch.setenv("EMULATOR_STATE_DIR", str(tmp_path))
        assert ops_main(["consumers", "--emulator", "--stack", "dev", "--json"]) == 0
        orders = {c["name"]: c for c in json.loads(capsys.readouterr().out)}["orders"]
        assert (orders["name"], orders["dlq_visible"], orders["queue_visible"]) == ("orders", 3, 0)

        # ... and its poller still processes new traffic.
        kwargs = {
            "endpoint_url": endpoint,
            "region_name": DEFAULT_REGION,
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        boto3.client("sqs", **kwargs).send_message(
            QueueUrl=orders["queue_url"],
            MessageBody=json.dumps({"event_id": "kept-1", "order": {"order_id": "kept-1"}}),
        )
        # `make run-month TARGET=emulator` attaches to it; re-running the demo's month sends
        # every charge again and still leaves one ledger row per employee.
        args = ["run-month", "--month", "2026-06", "--stack", "dev", "--target", "emulator"]
        assert ops_main(args) == 0
        rerun = capsys.readouterr().out
        assert f"attached to the kept emulator at {endpoint}" in rerun
        assert '"enqueued": 12' in rerun
        ddb = boto3.client("dynamodb", **kwargs)
        outputs = json.loads(state.read_text())["outputs"]
        ledger = ddb.scan(TableName=outputs["monthly_charge_consumer_business_table_name"])
        assert ledger["Count"] == 12

        table = json.loads(state.read_text())["outputs"]["orders_business_table_name"]
        key = {"order_id": {"S": "kept-1"}}
        deadline = time.monotonic() + 20
        while "Item" not in ddb.get_item(TableName=table, Key=key):
            assert time.monotonic() < deadline, "the kept poller did not process a new order"
            time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert not state.exists()
    assert "RESULT: all invariants hold" in out
    assert "[FAIL]" not in out
    for expected in (
        "[PASS] one business row per event",
        "[PASS] >= 1 notification per event",
        "[PASS] nothing lost",
        "endpoint does not support StartMessageMoveTask",
        f"aws --endpoint-url {endpoint} sqs list-queues",
        "ALARM orders-dev-dlq-not-empty",  # the DLQ holds the poison: its alarm would fire
        "consumer monthly_charge_consumer",
        "fires for 2026-06 at 2026-05-31T18:00Z, TWICE",
        "[PASS] one business row per event: 12 rows for 12 events",
    ):
        assert expected in out
    # Outcomes come from the runtime's own records: the crash after the commit left pending
    # claims that the redelivery republished; the extra sends were skipped as duplicates.
    orders_section = out.split("consumer orders")[1].split("consumer monthly_charge")[0]
    counts = {
        parts[0]: int(parts[1])
        for parts in (line.split() for line in orders_section.splitlines())
        if len(parts) == 2 and parts[1].isdigit()
    }
    assert counts["republished"] >= 1
    assert counts["duplicate_skipped"] >= 4
    assert counts["quarantined"] >= 3
    assert '"outcome"' not in out  # handler log lines went to the log file
    assert '"outcome":"republished"' in (tmp_path / "demo-dev.log").read_text().replace(" ", "")
