"""The project's MonthlyFanout in the emulator: the schedule fired twice, a late retry and
`ops run-month --target emulator` re-runs give one ledger row per (tenant, employee, month)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from idempotent_messaging.local import demo
from idempotent_messaging.local.invoke import invoke
from idempotent_messaging.local.observe import Observer, queue_counts, scan_all
from idempotent_messaging.local.poller import Poller
from idempotent_messaging.local.scheduler import fire, scheduled_time_for_month
from idempotent_messaging.local.session import (
    StackSession,
    attach_session,
    start_session,
    state_path,
)
from idempotent_messaging.ops.cli import main as ops_main
from tests.e2e.conftest import FIXTURES

pytestmark = pytest.mark.e2e

ACCOUNTS = 7
# A drain settles in about a second here; the bound only fails a scenario that never settles
# (a hang guard, not a budget: a loaded machine must not fail it).
DRAIN_HANG_GUARD_S = 600.0


@pytest.fixture
def fanout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StackSession]:
    """MonthlyFanout deployed and kept (state file in tmp) so ops can attach to it."""
    monkeypatch.setenv("EMULATOR_STATE_DIR", str(tmp_path))
    session = start_session("e2e", FIXTURES / "monthly")
    session.save(state_path("e2e"))
    try:
        yield session
    finally:
        session.close()


def test_double_fire_late_retry_and_manual_reruns_charge_each_employee_once(
    fanout: StackSession, capfd: pytest.CaptureFixture[str]
) -> None:
    sqs, ddb = fanout.client("sqs"), fanout.client("dynamodb")
    outputs = fanout.registry.outputs
    for i in range(ACCOUNTS):
        ddb.put_item(
            TableName=outputs["billing_accounts_table_name"],
            Item={
                "tenant_id": {"S": f"t{i % 2}"},
                "employee_id": {"S": f"e{i}"},
                "amount": {"N": "1200"},
                "currency": {"S": "JPY"},
                "active": {"BOOL": True},
            },
        )
    (schedule,) = fanout.registry.schedules.values()
    when = scheduled_time_for_month(schedule, "2026-06")  # 2026-05-31T18:00Z: June in Tokyo
    for _attempt in (1, 2):  # the schedule fires twice for the same scheduled time
        result = fire(fanout.registry, schedule.name, when, endpoint_url=fanout.endpoint_url)
        assert result.ok, result.error
    poller = Poller(fanout.registry, fanout.endpoint_url, sqs, release_failed=True)
    poller.drain(timeout_s=DRAIN_HANG_GUARD_S)
    # A late retry of the same fire, then an operator's manual run of the month.
    assert fire(fanout.registry, schedule.name, when, endpoint_url=fanout.endpoint_url).ok
    capfd.readouterr()  # what the in-process handlers printed so far
    assert (
        ops_main(["run-month", "--month", "2026-06", "--stack", "e2e", "--target", "emulator"]) == 0
    )
    out, err = capfd.readouterr()
    assert f"attached to the kept emulator at {fanout.endpoint_url}" in err  # progress
    assert json.loads(out)["response"]["month"] == "2026-06"  # stdout: the result alone
    poller.drain(timeout_s=DRAIN_HANG_GUARD_S)

    ledger = scan_all(ddb, outputs["charges"]["business_table_name"])
    keys = sorted(row["idempotency_key"]["S"] for row in ledger)
    assert keys == sorted(f"t{i % 2}:e{i}:2026-06" for i in range(ACCOUNTS))
    assert queue_counts(sqs, outputs["charges"]["queue_url"])["visible"] == 0
    assert queue_counts(sqs, outputs["charges"]["dlq_url"])["visible"] == 0


def test_notifications_reach_a_subscriber_at_least_once_per_charge(fanout: StackSession) -> None:
    sqs, ddb = fanout.client("sqs"), fanout.client("dynamodb")
    outputs = fanout.registry.outputs
    consumer = fanout.registry.functions[outputs["charges"]["function_name"]]
    topic = consumer.environment["NOTIFICATION_TOPIC_ARN"]
    observer = Observer.subscribe(sqs, fanout.client("sns"), topic, "charge-observer")
    ddb.put_item(
        TableName=outputs["billing_accounts_table_name"],
        Item={
            "tenant_id": {"S": "t9"},
            "employee_id": {"S": "e9"},
            "amount": {"N": "1"},
            "currency": {"S": "JPY"},
            "active": {"BOOL": True},
        },
    )
    payload = {"month": "2026-07"}
    dispatcher = fanout.registry.functions[outputs["dispatcher_name"]]
    assert invoke(dispatcher, payload, region=fanout.region, endpoint_url=fanout.endpoint_url).ok
    Poller(fanout.registry, fanout.endpoint_url, sqs).drain(timeout_s=DRAIN_HANG_GUARD_S)
    assert observer.by_key("idempotency_key")["t9:e9:2026-07"] >= 1


def test_a_stale_state_file_is_not_attached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a crash the state file may outlive its emulator: ops must not use it."""
    monkeypatch.setenv("EMULATOR_STATE_DIR", str(tmp_path))
    state_path("gone").write_text(
        json.dumps({"region": "ap-northeast-1", "endpoint_url": "http://127.0.0.1:9"})
    )
    assert attach_session("gone") is None


def test_demo_monthly_phase_reports_one_ledger_row_per_charge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The demo's monthly phase on any stack with a MonthlyFanout (here the fixture)."""
    monkeypatch.setenv("EMULATOR_STATE_DIR", str(tmp_path))
    assert demo.main(["--stack", "e2e", "--project", str(FIXTURES / "monthly")]) == 0
    out = capfd.readouterr().out
    assert "fires for 2026-06 at 2026-05-31T18:00Z, TWICE" in out
    assert "month already finished; duplicate or late schedule fire" in out
    assert f"[PASS] one business row per event: {demo.DEMO_ACCOUNTS} rows" in out
    assert "[PASS] >= 1 notification per event" in out
    assert "RESULT: all invariants hold" in out
