"""docs/bench.md's benchmark block is generated from bench/results.json and cannot drift."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bench import readme

pytestmark = pytest.mark.unit


def _results() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(readme.RESULTS.read_text())
    return data


def test_the_docs_block_is_what_the_committed_results_render() -> None:
    assert readme.DOC == readme.ROOT / "docs" / "bench.md"
    assert readme.current_block(readme.DOC.read_text()) == readme.render(_results())


def test_the_readme_links_the_tables_instead_of_holding_them() -> None:
    text = (readme.ROOT / "README.md").read_text()
    assert readme.START not in text and "| Scenario |" not in text
    assert "(docs/bench.md)" in text


def test_the_block_shows_calls_write_units_modelled_time_and_cost_side_by_side() -> None:
    results = _results()
    block = readme.render(results)
    ours = results["consumer"]["happy"]["summary"]["ours"]
    row = next(
        line for line in block.splitlines() if line.startswith("| happy") and "(c) ours" in line
    )
    assert f"**{ours['median_calls_per_message']:.3f}**" in row
    assert f"**{ours['model']['write_units_per_message']:.2f}**" in row
    assert f"{ours['model']['modelled_seconds_per_1000_messages']:.2f} s" in row
    assert f"${ours['model']['dollars_per_million_messages']:.2f}" in row
    for target in results["targets"]:
        assert target["description"] in block


def test_the_check_fails_when_the_results_change(tmp_path: Path) -> None:
    results = _results()
    doc_file = tmp_path / "bench.md"
    results_file = tmp_path / "results.json"
    doc_file.write_text("intro\n" + readme.render(results) + "\noutro\n")
    results_file.write_text(json.dumps(results))
    args = ["--doc", str(doc_file), "--results", str(results_file)]
    assert readme.main([*args, "--check"]) == 0
    changed = copy.deepcopy(results)
    changed["consumer"]["happy"]["summary"]["ours"]["model"]["write_units_per_message"] += 1
    results_file.write_text(json.dumps(changed))
    assert readme.main([*args, "--check"]) == 1
    assert readme.main(args) == 0  # regenerate
    assert readme.main([*args, "--check"]) == 0
    text = doc_file.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n")


def test_the_committed_targets_are_today_s_targets() -> None:
    # Raising a target re-evaluates the committed run (`python -m bench --render-from
    # bench/results.json`): the table then shows the same measurements against the new limits.
    from bench import report

    results = _results()
    assert results["targets"] == [t.as_dict() for t in report.retarget(results)]
    assert "consumer.duplicates.write_units_per_message" in {t["key"] for t in results["targets"]}


def test_a_rerender_applies_today_s_targets_to_the_same_measurements(tmp_path: Path) -> None:
    from bench import __main__ as bench_main

    results = _results()
    stale = copy.deepcopy(results)
    # As stored before the targets were raised: write units on the happy path only, <= 3.
    stale["targets"] = [
        t for t in stale["targets"] if t["key"] != "consumer.duplicates.write_units_per_message"
    ]
    for t in stale["targets"]:
        if t["key"] == "consumer.happy.write_units_per_message":
            t["target"], t["status"] = "<= 3", "PASS"
    stale["table"] = "old"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(stale))
    assert bench_main.rerender(path) == 0  # not the committed file: the docs stay as they are
    again = json.loads(path.read_text())
    assert again["targets"] == results["targets"]
    assert {k: v for k, v in again.items() if k not in ("targets", "table")} == {
        k: v for k, v in stale.items() if k not in ("targets", "table")
    }
    for t in again["targets"]:
        assert t["description"] in again["table"]
