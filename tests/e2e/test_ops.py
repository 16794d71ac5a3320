"""The ops CLI against the emulator: consumers, peek, redrive (standard and FIFO), purge."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.local.observe import Observer, queue_counts, scan_all
from idempotent_messaging.local.poller import Poller
from idempotent_messaging.local.session import StackSession
from idempotent_messaging.ops import dlq
from idempotent_messaging.ops.cli import main
from idempotent_messaging.ops.month import run_month_aws
from idempotent_messaging.ops.outputs import find_consumers

pytestmark = pytest.mark.e2e


def _cli(session: StackSession, tmp_path: Path, *args: str) -> list[str]:
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(session.registry.outputs))
    return [
        *args,
        "--outputs",
        str(outputs),
        "--endpoint-url",
        session.endpoint_url,
        "--region",
        session.region,
    ]


def _quarantine(sqs: Any, url: str, n: int, **extra: Any) -> None:
    for i in range(n):
        sqs.send_message(
            QueueUrl=url,
            MessageBody=json.dumps({"event_id": f"q{i}", "order_id": f"qo{i}"}),
            MessageAttributes={
                "failure_class": {"DataType": "String", "StringValue": "permanent"},
                "failure_reason": {"DataType": "String", "StringValue": f"reason {i}"},
            },
            **extra,
        )


def test_outputs_of_both_shapes_name_the_consumers() -> None:
    nested = {"orders": {"queueUrl": "u1", "dlqUrl": "d1", "functionName": "f"}}
    flat = {"orders_queue_url": "u1", "orders_dlq_arn": "arn:d", "orders_topic_arn": "t"}
    (a,) = find_consumers(nested)
    (b,) = find_consumers(flat)
    assert (a.name, a.queue_url, a.dlq_url, a.function_name) == ("orders", "u1", "d1", "f")
    assert (b.name, b.queue_url, b.dlq_arn, b.extra["topic_arn"]) == ("orders", "u1", "arn:d", "t")
    assert find_consumers({"orders_queue_url": "u1"}) == []  # no DLQ: not a consumer


def test_consumers_lists_each_consumer_with_queue_depths(
    mini: StackSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _quarantine(mini.client("sqs"), mini.registry.outputs["orders"]["dlq_url"], 2)
    assert main(_cli(mini, tmp_path, "consumers", "--json")) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"orders", "charges"}
    assert rows["orders"]["dlq_visible"] == 2 and not rows["orders"]["fifo"]
    assert rows["charges"]["fifo"]


def test_peek_shows_reasons_and_consumes_nothing(
    mini: StackSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = mini.client("sqs")
    url = mini.registry.outputs["orders"]["dlq_url"]
    _quarantine(sqs, url, 3)
    assert main(_cli(mini, tmp_path, "peek", "orders", "--json")) == 0
    peeked = json.loads(capsys.readouterr().out)
    assert sorted(m["reasons"]["failure_reason"] for m in peeked) == [
        "reason 0",
        "reason 1",
        "reason 2",
    ]
    assert all("body" not in m for m in peeked)  # bodies only with --show-body
    assert queue_counts(sqs, url) == {"visible": 3, "in_flight": 0, "delayed": 0}


def test_redrive_after_the_poison_cause_is_fixed_processes_the_message_exactly_once(
    mini: StackSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs, ddb = mini.client("sqs"), mini.client("dynamodb")
    orders = mini.registry.outputs["orders"]
    observer = Observer.subscribe(sqs, mini.client("sns"), orders["topic_arn"], "observer")
    body = json.dumps({"event_id": "late-1", "order_id": "late-o1", "kind": "poison"})
    sqs.send_message(QueueUrl=orders["queue_url"], MessageBody=body)
    poller = Poller(mini.registry, mini.endpoint_url, sqs, release_failed=True)
    poller.drain(timeout_s=20)
    assert queue_counts(sqs, orders["dlq_url"])["visible"] == 1  # after maxReceiveCount 3
    assert scan_all(ddb, orders["business_table_name"]) == []

    # The fix: the consumer no longer rejects that kind (a new function configuration).
    mini.registry.functions["mini-orders-fn"].environment["REJECT_KINDS"] = ""
    assert main(_cli(mini, tmp_path, "redrive", "orders")) == 0
    out = capsys.readouterr()
    assert "manual redrive" in out.out and "moved 1" in out.out
    poller.drain(timeout_s=20)
    # A second redrive finds nothing; a redelivered duplicate would not add a row either.
    assert main(_cli(mini, tmp_path, "redrive", "orders")) == 0
    assert "moved 0" in capsys.readouterr().out
    rows = scan_all(ddb, orders["business_table_name"])
    assert [r["order_id"]["S"] for r in rows] == ["late-o1"]
    assert observer.by_key("event_id")["late-1"] == 1
    assert queue_counts(sqs, orders["dlq_url"])["visible"] == 0


def test_fifo_redrive_keeps_group_order_attributes_and_dedup_ids(mini: StackSession) -> None:
    sqs = mini.client("sqs")
    charges = mini.registry.outputs["charges"]
    for i, group in enumerate(["g1", "g1", "g2", "g1"]):
        sqs.send_message(
            QueueUrl=charges["dlq_url"],
            MessageBody=json.dumps({"n": i}),
            MessageGroupId=group,
            MessageDeduplicationId=f"d{i}",
            MessageAttributes={"failure_reason": {"DataType": "String", "StringValue": f"r{i}"}},
        )
    # Past the 5-minute window (clock injected), the original dedup ids are kept.
    report = dlq.manual_redrive(
        sqs, charges["dlq_url"], charges["queue_url"], now=lambda: time.time() + 301
    )
    assert (report.moved, report.held_back, report.failed) == (4, 0, 0)
    received: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=charges["queue_url"],
            MaxNumberOfMessages=10,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not batch:
            break
        received.extend(batch)
        for m in batch:
            sqs.delete_message(QueueUrl=charges["queue_url"], ReceiptHandle=m["ReceiptHandle"])
    by_group: dict[str, list[int]] = {}
    for m in received:
        by_group.setdefault(m["Attributes"]["MessageGroupId"], []).append(
            json.loads(m["Body"])["n"]
        )
        n = json.loads(m["Body"])["n"]
        assert m["Attributes"]["MessageDeduplicationId"] == f"d{n}"
        assert m["MessageAttributes"]["failure_reason"]["StringValue"] == f"r{n}"
    assert by_group == {"g1": [0, 1, 3], "g2": [2]}


def test_fifo_redrive_inside_the_dedup_window_skips_or_uses_new_ids(
    mini: StackSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = mini.client("sqs")
    charges = mini.registry.outputs["charges"]
    _quarantine(sqs, charges["dlq_url"], 2, MessageGroupId="g", MessageDeduplicationId="same")
    _quarantine(sqs, charges["dlq_url"], 1, MessageGroupId="h", MessageDeduplicationId="other")
    args = _cli(mini, tmp_path, "redrive", "charges", "--dedup-window", "skip", "--json")
    assert main(args) == 0
    skipped = json.loads(capsys.readouterr().out)
    assert (skipped["moved"], skipped["held_back"]) == (0, 2)
    assert queue_counts(sqs, charges["dlq_url"])["visible"] == 2  # released, still there

    args = _cli(mini, tmp_path, "redrive", "charges", "--dedup-window", "new-id", "--json")
    assert main(args) == 0
    moved = json.loads(capsys.readouterr().out)
    assert moved["moved"] == 2
    received = sqs.receive_message(
        QueueUrl=charges["queue_url"], MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
    )["Messages"]
    assert sorted(m["Attributes"]["MessageGroupId"] for m in received) == ["g", "h"]
    assert all(m["Attributes"]["MessageDeduplicationId"].startswith("redrive-") for m in received)


def test_dry_run_moves_nothing_and_rate_limits_the_move(
    mini: StackSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = mini.client("sqs")
    orders = mini.registry.outputs["orders"]
    _quarantine(sqs, orders["dlq_url"], 4)
    assert main(_cli(mini, tmp_path, "redrive", "orders", "--dry-run")) == 0
    assert capsys.readouterr().out.count("  would move ") == 4
    assert queue_counts(sqs, orders["dlq_url"])["visible"] == 4
    assert queue_counts(sqs, orders["queue_url"])["visible"] == 0

    slept: list[float] = []
    report = dlq.manual_redrive(
        sqs, orders["dlq_url"], orders["queue_url"], rate=4, sleep=slept.append
    )
    assert report.moved == 4
    assert sum(slept) >= 0.5  # 4 messages at 4/s: about a second, minus the work itself
    assert queue_counts(sqs, orders["queue_url"])["visible"] == 4


def test_native_move_task_is_used_when_asked_where_the_endpoint_supports_it() -> None:
    class NativeSqs:
        def __init__(self) -> None:
            self.calls: list[tuple[str, dict[str, Any]]] = []

        def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> Any:
            return {"Attributes": {"QueueArn": "arn:aws:sqs:r:1:" + QueueUrl.rsplit("/", 1)[1]}}

        def start_message_move_task(self, **kwargs: Any) -> Any:
            self.calls.append(("start", kwargs))
            return {"TaskHandle": "h-1"}

        def list_message_move_tasks(self, **kwargs: Any) -> Any:
            return {"Results": [{"Status": "COMPLETED", "ApproximateNumberOfMessagesMoved": 7}]}

    fake = NativeSqs()
    report = dlq.redrive(fake, "https://q/1/dlq", "https://q/1/src", rate=900, method="native")
    assert (report.method, report.moved, report.task_handle) == ("native", 7, "h-1")
    assert fake.calls == [
        (
            "start",
            {
                "SourceArn": "arn:aws:sqs:r:1:dlq",
                "DestinationArn": "arn:aws:sqs:r:1:src",
                "MaxNumberOfMessagesPerSecond": 500,
            },
        )
    ]


def test_purge_needs_confirmation_or_yes(
    mini: StackSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = mini.client("sqs")
    url = mini.registry.outputs["charges"]["dlq_url"]
    _quarantine(sqs, url, 3, MessageGroupId="g", MessageDeduplicationId="x")
    _quarantine(sqs, url, 1, MessageGroupId="g2", MessageDeduplicationId="y")
    assert main(_cli(mini, tmp_path, "purge", "charges")) == 2  # no tty, no --yes
    assert "--yes" in capsys.readouterr().err
    assert queue_counts(sqs, url)["visible"] == 2
    assert main(_cli(mini, tmp_path, "purge", "charges", "--yes")) == 0
    assert queue_counts(sqs, url)["visible"] == 0


def test_bad_input_gets_a_clear_error(
    mini: StackSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_cli(mini, tmp_path, "peek", "nope")) == 2
    assert "no consumer 'nope'" in capsys.readouterr().err
    assert main(_cli(mini, tmp_path, "run-month", "--month", "2026-13")) == 2
    assert "YYYY-MM" in capsys.readouterr().err
    missing = ["consumers", "--outputs", str(tmp_path / "absent.json")]
    assert main(missing) == 2
    assert "does not exist" in capsys.readouterr().err


def test_run_month_on_aws_invokes_the_stack_dispatcher_with_the_manual_payload() -> None:
    class FakeLambda:
        def __init__(self) -> None:
            self.requests: list[dict[str, Any]] = []

        def invoke(self, **kwargs: Any) -> Any:
            self.requests.append(kwargs)
            return {"StatusCode": 200, "Payload": io.BytesIO(b'{"enqueued": 3}')}

    fake = FakeLambda()
    outputs = {"monthly_charge": {"dispatcher_name": "monthly-dispatcher-dev"}}
    result = run_month_aws(fake, outputs, "2026-06")
    assert result == {"function": "monthly-dispatcher-dev", "response": {"enqueued": 3}}
    (request,) = fake.requests
    assert request["FunctionName"] == "monthly-dispatcher-dev"
    assert request["InvocationType"] == "RequestResponse"
    assert json.loads(request["Payload"]) == {"month": "2026-06", "trigger": "manual"}
    with pytest.raises(dlq.OpsError, match="no dispatcher"):
        run_month_aws(fake, {"orders_queue_url": "u"}, "2026-06")


def test_fifo_redrive_waits_out_the_dedup_window_then_keeps_the_original_ids(
    mini: StackSession,
) -> None:
    sqs = mini.client("sqs")
    charges = mini.registry.outputs["charges"]
    _quarantine(sqs, charges["dlq_url"], 1, MessageGroupId="g", MessageDeduplicationId="keep-me")
    slept: list[float] = []
    lines: list[str] = []
    report = dlq.manual_redrive(
        sqs, charges["dlq_url"], charges["queue_url"], sleep=slept.append, log=lines.append
    )
    assert report.moved == 1
    assert len(slept) == 1 and 290 < slept[0] <= 302  # the rest of the 5-minute window
    assert "deduplication window" in lines[0]
    (moved,) = sqs.receive_message(
        QueueUrl=charges["queue_url"], MessageSystemAttributeNames=["All"]
    )["Messages"]
    assert moved["Attributes"]["MessageDeduplicationId"] == "keep-me"


def test_real_stacks_are_read_through_pulumi_stack_output(
    mini: StackSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without --outputs the CLI asks the Pulumi CLI (a stand-in script here)."""
    calls = tmp_path / "calls"
    script = tmp_path / "bin" / "pulumi"
    script.parent.mkdir()
    (tmp_path / "outputs.json").write_text(json.dumps(mini.registry.outputs))
    script.write_text(f'#!/bin/sh\necho "$@" >> {calls}\ncat {tmp_path / "outputs.json"}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}:{os.environ['PATH']}")
    args = ["consumers", "--stack", "staging", "--json", "--endpoint-url", mini.endpoint_url]
    assert main([*args, "--region", mini.region]) == 0
    assert {c["name"] for c in json.loads(capsys.readouterr().out)} == {"orders", "charges"}
    assert calls.read_text().split() == [
        "stack", "output", "--json", "--show-secrets", "--stack", "staging"
    ]  # fmt: skip


def test_purge_asks_for_the_queue_name_and_purges_only_when_it_is_typed(
    mini: StackSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sqs = mini.client("sqs")
    url = mini.registry.outputs["orders"]["dlq_url"]
    _quarantine(sqs, url, 2)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    prompts: list[str] = []
    answers = iter(["orders", url.rsplit("/", 1)[-1]])  # the consumer name is not enough

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr("builtins.input", answer)
    assert main(_cli(mini, tmp_path, "purge", "orders")) == 1
    assert "not confirmed: nothing purged" in capsys.readouterr().out
    assert queue_counts(sqs, url)["visible"] == 2
    assert main(_cli(mini, tmp_path, "purge", "orders")) == 0
    assert queue_counts(sqs, url)["visible"] == 0
    assert prompts[0].startswith("purge 2 visible message(s) from ")


def test_every_json_output_is_one_json_document_alone_on_stdout(
    mini: StackSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Each subcommand's --json, piped into a JSON parser whole: progress (redrive's notes,
    the run-month child's lines) goes to stderr, never between the document's lines."""
    sqs = mini.client("sqs")
    outputs = mini.registry.outputs
    state = outputs["orders"]["state_table_name"]
    _quarantine(sqs, outputs["orders"]["dlq_url"], 2)
    runs = [
        ("consumers",),
        ("peek", "orders"),
        ("explain", "orders", "--table", state),
        ("owed", "--table", state, "--older-than", "0"),
        ("redrive", "orders", "--dry-run"),
        ("redrive", "orders", "--method", "manual"),
        ("purge", "orders", "--yes"),
    ]
    capfd.readouterr()
    for run in runs:
        assert main(_cli(mini, tmp_path, *run, "--json")) == 0, run
        out, _ = capfd.readouterr()
        document = json.loads(out)  # the whole of stdout
        assert isinstance(document, list | dict), run
    # The last one: purge says what it purged (the DLQ the redrive emptied), as JSON.
    assert document == {
        "queue": "mini-orders-dlq",
        "url": outputs["orders"]["dlq_url"],
        "visible_before": 0,
        "purged": True,
    }
