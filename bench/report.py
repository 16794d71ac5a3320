"""Medians, ratios, targets and the printed table (pure functions over the results dict).

A target line always shows the MEASURED value next to the target and PASS or MISS; a target
is never printed as if it were a result.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any


@dataclass(frozen=True)
class Target:
    key: str
    description: str
    measured: float | None
    limit: float
    comparison: str  # "<=" or ">="
    unit: str = ""

    @property
    def passed(self) -> bool:
        if self.measured is None:
            return False
        compare: Callable[[float, float], bool] = (
            operator.le if self.comparison == "<=" else operator.ge
        )
        return compare(self.measured, self.limit)

    @property
    def status(self) -> str:
        return "PASS" if self.passed else "MISS"

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "description": self.description,
            "measured": self.measured,
            "target": f"{self.comparison} {self.limit:g}{self.unit}",
            "status": self.status,
        }


def median_of(runs: Sequence[dict[str, Any]], field: str) -> float:
    if not runs:
        raise ValueError(f"no runs to take the median of {field!r} from")
    return float(median(float(r[field]) for r in runs))


def ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 2) if denominator else None


def summarize_consumer(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per implementation medians, and wall-time ratios against ours."""
    summary: dict[str, Any] = {}
    for name, name_runs in runs.items():
        summary[name] = {
            "median_seconds": round(median_of(name_runs, "seconds"), 3),
            "median_calls_per_message": round(median_of(name_runs, "calls_per_message"), 3),
            "median_client_cpu_ms_per_message": round(
                1000 * median(r["client_cpu_seconds"] / r["messages"] for r in name_runs),
                3,
            ),
            # Wall time not spent in the function's own thread, per call: the emulator's work
            # (and loopback HTTP), which AWS would spend in parallel on its side.
            "median_emulator_ms_per_call": round(
                1000
                * median(
                    (r["seconds"] - r["client_cpu_seconds"]) / max(1, r["calls"]) for r in name_runs
                ),
                2,
            ),
            "median_http_attempts": median_of(name_runs, "http_attempts"),
            "median_throttles_injected": median_of(name_runs, "throttles_injected"),
            "all_correct": all(r["correct"] for r in name_runs),
            "problems": sorted({p for r in name_runs for p in r["problems"]}),
        }
    if "ours" in summary:
        ours_s = summary["ours"]["median_seconds"]
        ours_calls = summary["ours"]["median_calls_per_message"]
        for name in summary:
            summary[name]["wall_ratio_to_ours"] = ratio(summary[name]["median_seconds"], ours_s)
            summary[name]["calls_ratio_to_ours"] = ratio(
                summary[name]["median_calls_per_message"], ours_calls
            )
    return summary


def consumer_targets(scenario: str, summary: dict[str, Any]) -> list[Target]:
    targets: list[Target] = []
    ours = summary.get("ours")
    if ours is None:
        return targets
    calls_limit = {"happy": 0.3, "duplicates": 0.6}.get(scenario)
    if calls_limit is not None:
        targets.append(
            Target(
                f"consumer.{scenario}.calls_per_message",
                f"consumer {scenario}: ours AWS calls per message",
                ours["median_calls_per_message"],
                calls_limit,
                "<=",
            )
        )
    for name, limit in (("seed000", 4.0), ("powertools", 2.0)):
        if name in summary:
            targets.append(
                Target(
                    f"consumer.{scenario}.speedup_vs_{name}",
                    f"consumer {scenario}: wall time of {name} / ours",
                    summary[name]["wall_ratio_to_ours"],
                    limit,
                    ">=",
                    "x",
                )
            )
    targets.append(
        Target(
            f"consumer.{scenario}.correct",
            f"consumer {scenario}: every implementation exactly-once rows, >= 1 notice",
            1.0 if all(s["all_correct"] for s in summary.values()) else 0.0,
            1.0,
            ">=",
        )
    )
    return targets


# --- rendering ---------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for index, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        return f"{value:.2f}" if value >= 1 else f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def miss_notes(results: dict[str, Any], targets: Sequence[Target]) -> list[str]:
    """One data-driven line per missed target: the measurements that explain it."""
    notes: list[str] = []
    for t in targets:
        if t.passed:
            continue
        parts = t.key.split(".")
        if parts[0] == "consumer" and parts[2].startswith("speedup_vs_"):
            scenario = results["consumer"][parts[1]]["summary"]
            other, ours = scenario[parts[2].removeprefix("speedup_vs_")], scenario["ours"]
            cpu_ratio = ratio(
                other["median_client_cpu_ms_per_message"], ours["median_client_cpu_ms_per_message"]
            )
            notes.append(
                f"- {t.description} = {t.measured}: it makes "
                f"{other['calls_ratio_to_ours']}x our calls and spends {cpu_ratio}x our CPU per "
                f"message in the function, but the emulator spends "
                f"{ours['median_emulator_ms_per_call']} ms on each of our calls against "
                f"{other['median_emulator_ms_per_call']} ms on each of its: moto pays CPU per "
                "transaction item and per batch entry, in this process and on these cores, "
                "where AWS answers a 20-item transaction in about one call's latency."
            )
        elif t.key == "dispatch.speedup":
            d = results["dispatch"]
            notes.append(
                f"- {t.description} = {t.measured}: ours makes {d['calls_ratio']}x fewer calls; "
                f"per message it takes {1000 / d['ours_items_per_second']:.2f} ms against "
                f"{1000 / d['baseline_items_per_second']:.2f} ms for a single-message request. "
                "What remains per message in a batch is moto's own work per entry, and the 16 "
                "parallel senders share one process (GIL) and two cores with the emulator, so "
                "their parallelism cannot show here."
            )
        elif t.key == "policy.ratio":
            p = results["policy"]
            notes.append(
                f"- {t.description} = {t.measured} "
                f"(without the start-up cost {p['ratio_without_startup']}): the check grows "
                "faster than the stack."
            )
        else:
            notes.append(f"- {t.description}: measured {t.measured}, see results.json")
    return notes


def render_targets(targets: Sequence[Target]) -> str:
    rows = [
        (t.status, t.description, t.measured, f"{t.comparison} {t.limit:g}{t.unit}")
        for t in targets
    ]
    return table(("status", "target", "measured", "target value"), rows)
