"""The baselines do what their sources say, correctly, at the call counts those sources imply.

Tiny inputs on moto's server on 127.0.0.1 through the benchmark's own run (bench.consumer):
reset, create, deliver through the poller model, count, verify.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator

import boto3
import pytest

from bench import counting, emulator_fixes
from bench.baseline_per_record_transaction import PerRecordTransactionSettings, process_record
from bench.consumer import LogSink, run_once
from idempotent_messaging.local.server import Emulator, start_emulator

pytestmark = pytest.mark.integration


@pytest.fixture
def emulator(aws_env: dict[str, str]) -> Iterator[Emulator]:
    saved = dict(os.environ)
    counting.install()
    emu = start_emulator()
    try:
        with emulator_fixes.fast_transactions():
            yield emu
    finally:
        emu.stop()
        counting.uninstall()
        os.environ.clear()
        os.environ.update(saved)


def test_per_record_transaction_costs_three_calls_per_fresh_event_and_a_getitem_per_duplicate(
    emulator: Emulator,
) -> None:
    result = run_once("per_record_transaction", emulator, messages=30, duplicate_rate=0.1, seed=1)
    assert result.correct, result.problems
    assert result.distinct_events == 27
    assert result.calls == {
        "dynamodb.TransactWriteItems": 30,  # one per message, duplicates included
        "dynamodb.GetItem": 3,  # a cancelled claim reads the status
        "sns.Publish": 27,
        "dynamodb.UpdateItem": 27,
    }


def test_powertools_costs_four_calls_per_fresh_event_and_one_per_duplicate(
    emulator: Emulator,
) -> None:
    result = run_once("powertools", emulator, messages=30, duplicate_rate=0.1, seed=1)
    assert result.correct, result.problems
    assert result.calls == {
        "dynamodb.PutItem": 27 * 2 + 3,  # INPROGRESS + business row; a duplicate's refused put
        "sns.Publish": 27,
        "dynamodb.UpdateItem": 27,  # COMPLETED
    }


def test_ours_is_driven_and_verified_by_the_same_harness(emulator: Emulator) -> None:
    result = run_once("ours", emulator, messages=30, duplicate_rate=0.1, seed=1)
    assert result.correct, result.problems
    assert result.calls_per_message <= 0.6
    # Its log output is counted for the cost model: at least one EMF document per invocation.
    assert result.log_bytes > result.invocations * len('{"_aws":{"Timestamp":0}}')


def test_the_baselines_write_no_log_output_of_their_own(emulator: Emulator) -> None:
    for name in ("per_record_transaction", "powertools"):
        assert run_once(name, emulator, messages=5, seed=1).log_bytes == 0, name


def test_the_log_sink_counts_utf8_bytes_and_passes_every_line_on() -> None:
    target = io.StringIO()
    sink = LogSink(target)
    sink.write('{"message": "caf\u00e9"}\n')
    sink.write("\u2603\n")
    assert sink.bytes == len('{"message": "caf"}\n') + 2 + 3 + 1
    assert target.getvalue() == '{"message": "caf\u00e9"}\n\u2603\n'


def test_a_throttled_run_still_ends_exactly_once(emulator: Emulator) -> None:
    result = run_once("per_record_transaction", emulator, messages=3, throttle_rate=0.3, seed=0)
    assert result.throttles_injected >= 2
    assert result.attempts == result.total_calls + result.throttles_injected
    assert result.correct, result.problems


def _per_record_transaction_world(
    emulator: Emulator,
) -> tuple[PerRecordTransactionSettings, object]:
    admin = counting.exclude(emulator.client("dynamodb"))
    for table, key in (("processed_events", "event_id"), ("order_records", "order_id")):
        admin.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    topic = counting.exclude(emulator.client("sns")).create_topic(Name="t")["TopicArn"]
    return PerRecordTransactionSettings(topic_arn=topic), admin


_BODY = json.dumps(
    {"event_id": "e1", "order": {"order_id": "o1", "customer": "c", "amount": 5, "currency": "JPY"}}
)


@pytest.mark.parametrize(
    "status, outcome, publishes", [("pending", "republished", 1), ("sent", "duplicate_skipped", 0)]
)
def test_per_record_transaction_redelivery_branches_on_the_stored_status(
    emulator: Emulator, status: str, outcome: str, publishes: int
) -> None:
    emulator.reset()
    settings, admin = _per_record_transaction_world(emulator)
    admin.put_item(  # type: ignore[attr-defined]
        TableName="processed_events", Item={"event_id": {"S": "e1"}, "status": {"S": status}}
    )
    ddb, sns = boto3.client("dynamodb"), boto3.client("sns")
    with counting.recording() as recorder:
        assert process_record(ddb, sns, settings, _BODY) == outcome
    assert len(recorder.notifications) == publishes
    assert recorder.calls["dynamodb.TransactWriteItems"] == 1
    assert recorder.calls["dynamodb.GetItem"] == 1
    stored = admin.get_item(  # type: ignore[attr-defined]
        TableName="processed_events", Key={"event_id": {"S": "e1"}}
    )["Item"]
    assert stored["status"]["S"] == "sent"
    # The cancelled transaction wrote no business row.
    rows = admin.scan(TableName="order_records")["Items"]  # type: ignore[attr-defined]
    assert rows == []
