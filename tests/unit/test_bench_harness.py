"""The benchmark's pure parts: workload generation, the poller model, throttle rate, targets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.counting import Throttler
from bench.dispatch import projection
from bench.report import Target, miss_notes, summarize_consumer, table
from bench.workload import BATCH_SIZE, Message, deliver, order_messages

pytestmark = pytest.mark.unit


def test_duplicates_are_resends_of_earlier_events_with_new_message_ids() -> None:
    stream = order_messages(200, duplicate_rate=0.10, seed=3)
    assert len(stream) == 200
    assert len({m.event_id for m in stream}) == 180
    assert len({m.message_id for m in stream}) == 200
    first_seen: dict[str, int] = {}
    for position, m in enumerate(stream):
        if m.event_id in first_seen:
            original = stream[first_seen[m.event_id]]
            assert m.body == original.body
            # At least one full batch later, as SQS redelivers.
            assert position - first_seen[m.event_id] > BATCH_SIZE - 1
        else:
            first_seen[m.event_id] = position
    assert json.loads(stream[0].body)["order"]["order_id"].startswith("ord-")


def test_the_workload_is_reproducible_from_its_seed() -> None:
    assert order_messages(50, 0.1, seed=7) == order_messages(50, 0.1, seed=7)
    assert order_messages(50, 0.1, seed=7) != order_messages(50, 0.1, seed=8)


@pytest.mark.parametrize("count, rate", [(0, 0.0), (10, 1.0), (10, -0.1)])
def test_bad_workload_parameters_are_refused(count: int, rate: float) -> None:
    with pytest.raises(ValueError):
        order_messages(count, rate)


def test_the_poller_redelivers_reported_failures_and_dead_letters_at_max_receive() -> None:
    messages = [Message(f"m{i}", "{}", f"e{i}") for i in range(12)]
    seen: list[tuple[str, int]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        assert context.get_remaining_time_in_millis() > 0
        failures = []
        for record in event["Records"]:
            count = int(record["attributes"]["ApproximateReceiveCount"])
            seen.append((record["messageId"], count))
            if record["messageId"] == "m0" or (record["messageId"] == "m1" and count < 2):
                failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}

    stats = deliver(handler, messages, function_name="f", queue_arn="arn", max_receive_count=3)
    assert [m.message_id for m in stats.dead_lettered] == ["m0"]
    assert ("m0", 3) in seen and ("m1", 2) in seen
    assert stats.redeliveries == 3  # m0 twice, m1 once
    assert stats.deliveries == 15


def test_an_escaped_exception_fails_the_whole_batch() -> None:
    calls = {"n": 0}

    def handler(event: dict[str, Any], context: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom")

    stats = deliver(
        handler, [Message(f"m{i}", "{}", "e") for i in range(3)], function_name="f", queue_arn="arn"
    )
    assert stats.handler_exceptions == 1
    assert stats.redeliveries == 3
    assert stats.invocations == 2


def test_the_throttler_holds_its_rate_from_the_first_attempts_on() -> None:
    for seed in range(20):
        throttler = Throttler(0.3, seed=seed)
        decisions = [throttler.decide() for _ in range(1000)]
        for n in (10, 20, 100, 1000):
            assert abs(sum(decisions[:n]) - 0.3 * n) <= 2.5, (seed, n)
        again = Throttler(0.3, seed=seed)
        assert [again.decide() for _ in range(1000)] == decisions
    # Positions stay random: throttles sometimes come in a row (retries can run out).
    assert any(decisions[i] and decisions[i + 1] for i in range(999))
    assert Throttler(0.3, seed=1).injected == 0


def test_a_throttle_rate_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="throttle rate"):
        Throttler(1.0)


def test_targets_report_pass_or_miss_from_the_measured_value() -> None:
    assert Target("k", "d", 0.3, 0.3, "<=").status == "PASS"
    assert Target("k", "d", 0.31, 0.3, "<=").status == "MISS"
    assert Target("k", "d", 3.9, 4.0, ">=").status == "MISS"
    assert Target("k", "d", None, 4.0, ">=").status == "MISS"


def _run(seconds: float, calls: float, correct: bool = True) -> dict[str, Any]:
    return {
        "seconds": seconds,
        "calls_per_message": calls,
        "calls": int(calls * 100),
        "client_cpu_seconds": seconds / 2,
        "messages": 100,
        "http_attempts": 10,
        "throttles_injected": 0,
        "correct": correct,
        "problems": [] if correct else ["lost one"],
    }


def test_the_summary_takes_medians_and_ratios_against_ours() -> None:
    summary = summarize_consumer(
        {
            "per_record_transaction": [_run(10, 3), _run(30, 3), _run(12, 3)],
            "ours": [_run(2, 0.3), _run(3, 0.3), _run(100, 0.3, correct=False)],
        }
    )
    assert summary["per_record_transaction"]["median_seconds"] == 12
    assert summary["ours"]["median_seconds"] == 3
    assert summary["per_record_transaction"]["wall_ratio_to_ours"] == 4.0
    assert summary["per_record_transaction"]["calls_ratio_to_ours"] == 10.0
    assert summary["ours"]["all_correct"] is False
    assert summary["ours"]["problems"] == ["lost one"]


def test_tables_align_columns_under_their_headers() -> None:
    text = table(("name", "value"), [("a", 1.5), ("longer", 1234)])
    lines = text.splitlines()
    assert lines[0].startswith("name") and lines[1].startswith("------")
    assert len({len(line) for line in lines}) == 1
    assert "1,234" in text


def test_the_projection_chains_invocations_and_stays_inside_lambda_limits() -> None:
    rows = projection(1000.0)
    slow = next(
        r
        for r in rows
        if r["items"] == 10_000_000
        and r["rate_basis"] == "measured"
        and r["queue"].startswith("FIFO 3,000")
    )
    # 10M at 1,000/s = 10,000 s of sending, 840 s per invocation -> 12 invocations, 11 hops.
    assert slow["invocations_in_chain"] == 12
    assert slow["hops_per_segment"] == 11
    assert slow["bound_by"] == "dispatcher"
    quota = next(r for r in rows if r["items"] == 1_000_000 and r["rate_basis"] == "quota")
    assert quota["rate_msg_s"] == 3000 and quota["invocations_in_chain"] == 1
    assert all(r["inside_lambda_limits"] for r in rows)


def test_a_missed_speedup_is_explained_with_the_measured_numbers() -> None:
    summary = summarize_consumer(
        {
            "per_record_transaction": [_run(30, 3)],
            "ours": [_run(10, 0.3)],
        }  # 3x: below the 4x target
    )
    results = {"consumer": {"happy": {"summary": summary}}}
    miss = Target(
        "consumer.happy.speedup_vs_per_record_transaction", "wall (a) / ours", 3.0, 4.0, ">="
    )
    hit = Target("consumer.happy.calls_per_message", "calls", 0.3, 0.3, "<=")
    notes = miss_notes(results, [miss, hit])
    assert len(notes) == 1
    expected_ms = summary["ours"]["median_emulator_ms_per_call"]
    assert f"{expected_ms} ms on each of our calls" in notes[0]
    assert "10.0x our calls" in notes[0]


def test_the_plans_keep_make_bench_sizes_and_the_smoke_plan_refuses_the_committed_results(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``make bench`` (no option) and ``make bench QUICK=1`` (``--quick``) run their own
    sizes; ``--plan smoke`` (the harness test's) is smaller than quick in every size and never
    overwrites bench/results.json, whose numbers regenerate docs/bench.md."""
    from bench import __main__ as bench_main

    def plan_of(*argv: str) -> str:
        return str(bench_main.parse_args(list(argv)).plan)

    assert plan_of() == "full"
    assert plan_of("--quick") == "quick" == plan_of("--plan", "quick")
    assert plan_of("--plan", "smoke", "--output", str(tmp_path / "r.json")) == "smoke"
    assert bench_main.PLANS["full"].consumer_messages == 2000
    assert bench_main.PLANS["quick"].consumer_messages == 150
    smoke, quick = bench_main.SMOKE.__dict__, bench_main.QUICK.__dict__
    assert all(smoke[k] <= quick[k] for k in quick), (smoke, quick)
    with pytest.raises(SystemExit):
        bench_main.parse_args(["--plan", "smoke"])
    assert "give --output" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench_main.parse_args(["--quick", "--plan", "full"])
    assert "contradict" in capsys.readouterr().err
