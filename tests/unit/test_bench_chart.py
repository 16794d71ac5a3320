"""docs/bench-cost.svg and its table are generated from bench/results.json and cannot drift;
their segments are the model's own $ per service and add up to the $ of the tables."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from bench import chart, model, readme, report

pytestmark = pytest.mark.unit

SVG_NS = "{http://www.w3.org/2000/svg}"


def _results() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(readme.RESULTS.read_text())
    return data


def test_the_committed_chart_and_table_are_what_the_results_render() -> None:
    results = _results()
    assert chart.SVG == readme.ROOT / "docs" / "bench-cost.svg"
    assert chart.SVG.read_text() == chart.svg(results), "run `make bench-chart`"
    block = readme.current_block(readme.DOC.read_text(), chart.START, chart.END)
    assert block == chart.render_block(results), "run `make bench-chart`"
    assert "](bench-cost.svg)" in block
    assert chart.main(["--check"]) == 0


def test_the_readme_links_the_chart() -> None:
    text = (readme.ROOT / "README.md").read_text()
    assert "(docs/bench-cost.svg)" in text


def test_the_segments_add_up_to_the_modelled_cost_of_the_tables() -> None:
    results = _results()
    drawn = chart.bars(results)
    assert {(b.scenario, b.implementation) for b in drawn} == {
        (s, i) for s in ("happy", "duplicates") for i in chart.IMPLEMENTATIONS
    }
    for bar in drawn:
        summary = results["consumer"][bar.scenario]["summary"][bar.implementation]
        assert bar.total == summary["model"]["dollars_per_million_messages"]
        assert set(bar.services) == set(model.SERVICES)
        # The parts are kept to 1e-9 $ per run, the total to 1e-4 $ per million messages.
        assert sum(bar.services.values()) == pytest.approx(bar.total, abs=2e-4), bar
    # Every run's parts, grouped per service, add up to the run's total.
    for scenario in ("happy", "duplicates"):
        for runs in results["consumer"][scenario]["runs"].values():
            for run in runs:
                cost = run["model"]["cost"]
                by_service = model.dollars_by_service(cost["dollars"])
                assert sum(by_service.values()) == pytest.approx(cost["dollars_total"], abs=1e-8)


def test_the_table_shows_each_service_and_the_total_per_implementation() -> None:
    results = _results()
    rows = [line for line in chart.table(results)[2:] if line.startswith("| ")]
    assert len(rows) == 2 * len(chart.IMPLEMENTATIONS)  # happy and duplicates
    ours = next(
        b for b in chart.bars(results) if b.scenario == "happy" and b.implementation == "ours"
    )
    row = next(line for line in rows if line.startswith("| happy | (c) ours |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[2] == f"${ours.services['dynamodb']:.3f}"
    assert cells[-1] == f"**${ours.total:.3f}**"


def test_the_chart_is_well_formed_svg_inside_its_box() -> None:
    results = _results()
    drawn = chart.svg(results)
    root = ET.fromstring(drawn)  # well-formed XML
    assert root.tag == f"{SVG_NS}svg"
    width = float(root.attrib["width"])
    texts = [t for t in root.iter(f"{SVG_NS}text")]
    shown = " ".join(t.text or "" for t in texts)
    for _, label, colour in chart.SEGMENTS:
        assert label in shown
        assert f'fill="{colour}"' in drawn
    for name in chart.IMPLEMENTATIONS:
        assert readme.LABELS[name] in shown
    for t in texts:
        x = float(t.attrib["x"])
        size = float(t.attrib["font-size"])
        anchor = t.attrib.get("text-anchor", "start")
        half = chart._text_width(t.text or "", size) / 2
        left, right = {
            "start": (x, x + 2 * half),
            "middle": (x - half, x + half),
            "end": (x - 2 * half, x),
        }[anchor]
        assert left >= 0 and right <= width, (t.text, left, right)
    # One rect per non-zero segment of every bar, each titled for a hover.
    segments = [r for r in root.iter(f"{SVG_NS}rect") if r.find(f"{SVG_NS}title") is not None]
    expected = sum(1 for b in chart.bars(results) for v in b.services.values() if v > 0)
    assert len(segments) == expected
    # Ours carries its cost target, from the stored targets: the lower of the allowed $.
    happy = results["consumer"]["happy"]["summary"]
    limits = {
        t["key"].removeprefix("consumer.happy.cost_ratio_vs_"): report.Target.from_dict(t).limit
        for t in results["targets"]
        if t["key"].startswith("consumer.happy.cost_ratio_vs_")
    }
    allowed = min(
        limit * happy[name]["model"]["dollars_per_million_messages"]
        for name, limit in limits.items()
    )
    assert f"target \u2264 ${chart._money(allowed)}" in shown


def test_a_segment_value_moves_off_the_target_line_or_is_left_to_the_table() -> None:
    # A 100 px segment with the line in its middle: the value goes to the wider side.
    assert chart._segment_label_x(0, 100, 24, None) == 50
    assert chart._segment_label_x(0, 100, 24, 45) == pytest.approx(72.5)
    assert chart._segment_label_x(0, 100, 24, 55) == pytest.approx(27.5)
    assert chart._segment_label_x(0, 40, 24, 20) is None  # no room either side
    assert chart._segment_label_x(0, 20, 24, None) is None  # too narrow for its value
    assert chart._money(1.8749999999) == "1.88" and chart._money(0.0134, 3) == "0.013"


def _run(total: float, dynamodb: float, messages: int = 1_000_000) -> dict[str, Any]:
    parts = {"dynamodb_write": dynamodb, "sns": total - dynamodb}
    return {
        "messages": messages,
        "model": {
            "dollars_per_million_messages": total,
            "cost": {"dollars": parts, "dollars_total": total},
        },
    }


def test_the_breakdown_is_the_median_run_s_so_it_adds_up_to_the_median() -> None:
    # Three runs: the one whose total is the median, whatever order they ran in.
    odd = report.cost_by_service([_run(3.0, 2.0), _run(1.0, 0.5), _run(2.0, 1.5)])
    assert odd == pytest.approx({"dynamodb": 1.5, "sns": 0.5, "sqs": 0, "lambda": 0, "logs": 0})
    # Four runs: the mean of the two middle ones (the median total is their mean).
    even = report.cost_by_service([_run(1.0, 0.5), _run(2.0, 1.0), _run(4.0, 3.0), _run(9.0, 1.0)])
    assert even["dynamodb"] == pytest.approx(2.0) and even["sns"] == pytest.approx(1.0)
    # Per million messages: 2 messages costing $0.000004 in all is $2 per million.
    assert report.cost_by_service([_run(4e-6, 3e-6, messages=2)])["dynamodb"] == pytest.approx(1.5)
    with pytest.raises(ValueError, match="no runs"):
        report.cost_by_service([])


def test_a_cost_part_without_a_service_is_refused() -> None:
    with pytest.raises(ValueError, match="not assigned to a service"):
        model.dollars_by_service({"dynamodb_write": 1.0, "kinesis": 2.0})


def test_the_check_fails_when_the_results_change(tmp_path: Path) -> None:
    results = _results()
    doc_file = tmp_path / "docs" / "bench.md"
    svg_file = tmp_path / "docs" / "bench-cost.svg"
    results_file = tmp_path / "results.json"
    doc_file.parent.mkdir()
    doc_file.write_text(f"intro\n{chart.START}\n{chart.END}\noutro\n")
    results_file.write_text(json.dumps(results))
    args = ["--doc", str(doc_file), "--svg", str(svg_file), "--results", str(results_file)]
    assert chart.main([*args, "--check"]) == 1  # no chart yet
    assert chart.main(args) == 0
    assert chart.main([*args, "--check"]) == 0
    assert svg_file.read_text() == chart.svg(results)
    text = doc_file.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n")
    assert "](bench-cost.svg)" in text
    # Ours' DynamoDB $ of every happy run changes: the chart and the table are stale.
    changed = copy.deepcopy(results)
    for run in changed["consumer"]["happy"]["runs"]["ours"]:
        cost = run["model"]["cost"]
        cost["dollars"]["dynamodb_write"] *= 0.5
        if "dollars_by_service" in cost:  # what the chart reads first (runs since it is kept)
            cost["dollars_by_service"]["dynamodb"] -= cost["dollars"]["dynamodb_write"]
    results_file.write_text(json.dumps(changed))
    assert chart.main([*args, "--check"]) == 1
    assert chart.main(args) == 0
    assert chart.main([*args, "--check"]) == 0
    halved = report.cost_by_service(changed["consumer"]["happy"]["runs"]["ours"])["dynamodb"]
    assert halved == pytest.approx(
        report.cost_by_service(results["consumer"]["happy"]["runs"]["ours"])["dynamodb"] / 2
    )
    cell = re.escape(f"${chart._money(halved, 3)}")
    assert re.search(rf"\| happy \| \(c\) ours \| {cell} \|", doc_file.read_text())
