"""``python -m bench`` end to end on the harness's own plan (``--plan smoke``: every
benchmark and every target on tiny sizes; ``make bench`` and ``make bench QUICK=1`` keep their
sizes): every benchmark runs, every target is printed with its measured value and PASS or
MISS, every miss is explained, and the models read the recorded calls."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.report import Target, call_floor_bound, render_targets

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MODELLED_TARGETS = (
    "consumer.happy.calls_per_message",
    "consumer.happy.event_keyed.calls_per_message",
    "consumer.duplicates.calls_vs_documented_minimum",
    "consumer.duplicates.event_keyed.calls_vs_documented_minimum",
    "consumer.happy.modelled_time_over_floor",
    "consumer.duplicates.modelled_time_over_floor",
    "consumer.duplicates.event_keyed.write_units_per_message",
    "consumer.happy.write_units_per_message",
    "consumer.duplicates.write_units_per_message",
    "consumer.happy.cost_ratio_vs_per_record_transaction",
    "consumer.happy.cost_ratio_vs_powertools",
    "consumer.duplicates.cost_ratio_vs_per_record_transaction",
    "consumer.duplicates.cost_ratio_vs_powertools",
    "dispatch.modelled_speedup",
)


# (The name predates the smoke plan; tests/unit/test_docs.py names this test as what stands in
# for `make bench` and `python -m bench --quick`.)
def test_quick_run_prints_every_target_with_its_measured_value(
    tmp_path: Path, aws_env: dict[str, str]
) -> None:
    output = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--plan", "smoke", "--output", str(output)],
        cwd=ROOT,
        env={**os.environ, **aws_env},
        capture_output=True,
        text=True,
        # A hang guard, not a budget: the run takes about 25 CPU-s (two minutes of wall time
        # on a loaded 2-core machine, most of it botocore's throttle back-off).
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(output.read_text())
    assert results["mode"] == "smoke"
    targets = {t["key"]: t for t in results["targets"]}
    # Every target the committed full run reports, this run reports too ...
    committed = json.loads((ROOT / "bench" / "results.json").read_text())
    assert {t["key"] for t in committed["targets"]} <= set(targets)
    # ... and prints, each with its status, its measured value and its target value: the
    # table in the output is the one the results file's targets render.
    assert all(t["status"] in ("PASS", "MISS") for t in targets.values()), targets
    assert render_targets([Target.from_dict(t) for t in results["targets"]]) in done.stdout
    for key in MODELLED_TARGETS:
        assert key in targets, key
        t = targets[key]
        assert t["status"] in ("PASS", "MISS") and t["measured"] is not None
        # The printed line carries the same status, description and measured value.
        line = next(line for line in done.stdout.splitlines() if t["description"] in line)
        assert re.match(rf"{t['status']}\s", line), line
    # Every missed target is explained from the measurements.
    misses = [t for t in results["targets"] if t["status"] == "MISS"]
    notes = done.stdout.split("why the misses", 1)[-1]
    for t in misses:
        assert t["description"] in notes, t["description"]
    # The models ran on every consumer run, from the recorded usage; the runs were correct.
    for scenario in ("happy", "duplicates"):
        # Issue 36: the three on the source article's tables, ours event-keyed beside them.
        assert set(results["consumer"][scenario]["runs"]) == {
            "per_record_transaction",
            "powertools",
            "ours",
            "ours_event_keyed",
        }
        for impl, runs in results["consumer"][scenario]["runs"].items():
            for run in runs:
                assert run["correct"], (scenario, impl, run["problems"])
                assert run["usage_by_operation"], (scenario, impl)
                calls = sum(op["calls"] for op in run["usage_by_operation"].values())
                assert calls == run["calls"], (scenario, impl)
                assert run["model"]["modelled_seconds"] > 0
        # The call floor was measured beside the runs (5 rounds of the plan's calls), and it
        # is a floor: ours spends more CPU per message than its calls at that floor.
        floor = results["consumer"][scenario]["call_floor"]
        assert floor["calls"] == 5 * results["plan"]["floor_calls"], floor
        assert floor["cpu_ms_per_call"] > 0, floor
        bound = call_floor_bound(results["consumer"][scenario], "powertools", 8.0)
        assert bound is not None and bound["own_ms_per_message"] > 0, bound
        # Issue 27: ours again with the claim fingerprint stripped from the wire: the same
        # calls and write units, and the comparison is not vacuous.
        fingerprint = results["consumer"][scenario]["fingerprint"]
        assert fingerprint["all_correct"], scenario
        assert fingerprint["with_fingerprint"]["fingerprinted_items_per_message"] >= 0.9
        assert fingerprint["without_fingerprint"]["fingerprinted_items_per_message"] == 0
        assert fingerprint["extra_calls_per_message"] == 0, fingerprint
        assert fingerprint["extra_write_units_per_message"] == 0, fingerprint
    assert results["dispatch"]["ours_model"]["modelled_items_per_second"] > 0
    assert results["model_inputs"]["region"] == "us-east-1"
    # The policy and cold-start benchmarks ran too.
    assert set(results["policy"]["sizes"]) == {"1", *map(str, results["plan"]["policy_sizes"])}
    assert results["coldstart"]["imports"]["repetitions"] == results["plan"]["import_reps"]
