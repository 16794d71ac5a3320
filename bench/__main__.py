"""``python -m bench [--quick]``: every benchmark, side by side, on the embedded emulator.

Writes bench/results.json and prints the table (progress goes to stderr). See docs/bench.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any

from bench import model, report
from bench.model import FunctionConfig, ModelInputs
from bench.report import Target

if TYPE_CHECKING:  # the consumer benchmark imports boto3 and moto: only when it runs
    from bench.consumer import Scenario

RESULTS = Path(__file__).resolve().parent / "results.json"


@dataclass(frozen=True)
class Plan:
    """How much work each benchmark does (full run and --quick)."""

    consumer_messages: int
    consumer_reps: int
    throttle_messages: int
    throttle_reps: int
    dispatch_items: int
    dispatch_baseline_items: int
    dispatch_reps: int
    policy_sizes: tuple[int, int]
    policy_reps: int
    import_reps: int
    floor_calls: int  # per round of the call floor's measurement (5 rounds)


FULL = Plan(
    consumer_messages=2000,
    consumer_reps=3,
    # botocore backs off ~0.6 s per injected throttle (standard mode, 1 s base for throttling
    # errors): at 30 % baseline (a) sleeps ~0.8 s per message, 2,000 messages would
    # take half an hour per repetition. The throttling scenario therefore uses fewer messages.
    throttle_messages=20,
    throttle_reps=3,
    dispatch_items=100_000,
    # Per-item SendMessage runs at ~200 items/s here: 100,000 would take 8 minutes, so it is
    # measured on a sample and its items/s compared (a rate does not depend on the count).
    dispatch_baseline_items=1_000,
    dispatch_reps=3,
    policy_sizes=(100, 1000),
    policy_reps=1,
    import_reps=5,
    floor_calls=200,
)
# Small enough for the harness test to run it end to end (about two minutes on a busy
# machine). The consumer still runs three interleaved repetitions: its ratios compare CPU
# times of a fraction of a second, and one repetition's medians moved by +-10 % between runs.
QUICK = Plan(
    # 150, not 200: the event-keyed ours runs beside the three on the article's tables (issue
    # 36), and the harness test must not cost more than before.
    consumer_messages=150,
    consumer_reps=3,
    throttle_messages=10,
    throttle_reps=1,
    dispatch_items=2_000,
    dispatch_baseline_items=200,
    dispatch_reps=1,
    policy_sizes=(10, 50),
    policy_reps=1,
    import_reps=2,
    floor_calls=40,
)
# The harness test's plan (tests/integration/test_bench_quick.py, inside `make test`): every
# benchmark and every target once, on the fewest messages that still take every path (two
# batches of 10, a duplicate, a throttle retried), so that the test proves the harness runs end
# to end and prints every target with its value. Its numbers are not measurements: MISS lines
# are expected and explained, and it refuses to overwrite the committed bench/results.json.
SMOKE = Plan(
    consumer_messages=20,
    consumer_reps=1,
    throttle_messages=4,
    throttle_reps=1,
    dispatch_items=200,
    dispatch_baseline_items=20,
    dispatch_reps=1,
    policy_sizes=(2, 4),
    policy_reps=1,
    import_reps=1,
    floor_calls=10,
)
PLANS = {"full": FULL, "quick": QUICK, "smoke": SMOKE}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for package in ("boto3", "botocore", "moto", "aws-lambda-powertools", "pulumi", "pulumi-aws"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "versions": versions,
    }


# --- 1. consumer ---------------------------------------------------------------------------------


def bench_consumer(
    emulator: Any, plan: Plan, inputs: ModelInputs
) -> tuple[dict[str, Any], list[Target]]:
    from bench.consumer import Scenario, call_floor, run_scenario

    function = model.consumer_function()

    scenarios = (
        Scenario("happy", plan.consumer_messages),
        Scenario("duplicates", plan.consumer_messages, duplicate_rate=0.10),
        Scenario("throttled", plan.throttle_messages, throttle_rate=0.30),
    )
    reps = {"throttled": plan.throttle_reps}
    out: dict[str, Any] = {}
    targets: list[Target] = []
    for scenario in scenarios:
        log(f"[consumer] {scenario.name}: {scenario.messages} messages")
        # The smallest call's client CPU, measured beside each scenario's runs, with the
        # function's CPU scale: it bounds the modelled speedup at ours' call count
        # (report.call_floor_bound).
        floor = {
            **call_floor(emulator, calls=plan.floor_calls),
            "cpu_scale": round(model.cpu_scale(inputs, function.memory_mb), 4),
        }
        log(f"  call floor: {floor['cpu_ms_per_call']} ms client CPU per GetItem")
        results = run_scenario(
            scenario, emulator, reps.get(scenario.name, plan.consumer_reps), progress=log
        )
        runs = {name: [r.as_dict() for r in rs] for name, rs in results.items()}
        for name_runs in runs.values():
            for run in name_runs:
                run["model"] = report.model_consumer_run(run, inputs, function)
        summary = report.summarize_consumer(runs)
        out[scenario.name] = {
            "messages": scenario.messages,
            "duplicate_rate": scenario.duplicate_rate,
            "throttle_rate": scenario.throttle_rate,
            "repetitions": len(next(iter(runs.values()))),
            "summary": summary,
            "runs": runs,
            "call_floor": floor,
        }
        if scenario.name in report.FINGERPRINT_SCENARIOS:
            out[scenario.name]["fingerprint"] = _fingerprint_side_by_side(
                scenario, emulator, runs["ours"], inputs, function
            )
        targets.extend(report.consumer_targets(scenario.name, summary, floor, scenario.messages))
        targets.extend(report.fingerprint_targets(scenario.name, out[scenario.name]))
    return out, targets


def _fingerprint_side_by_side(
    scenario: Scenario,
    emulator: Any,
    ours: list[dict[str, Any]],
    inputs: ModelInputs,
    function: FunctionConfig,
) -> dict[str, Any]:
    """Ours again on the same messages (same seeds) with the claim fingerprint removed from
    every write on the wire: what the conflict guard costs in calls and write units."""
    from bench.consumer import run_once
    from bench.usage import FINGERPRINT_ATTRIBUTES

    without = []
    for rep in range(len(ours)):
        run = run_once(
            "ours",
            emulator,
            messages=scenario.messages,
            duplicate_rate=scenario.duplicate_rate,
            throttle_rate=scenario.throttle_rate,
            seed=rep,
            strip=FINGERPRINT_ATTRIBUTES,
        ).as_dict()
        run["model"] = report.model_consumer_run(run, inputs, function)
        without.append(run)
    log(f"  {scenario.name}: ours without the fingerprint attribute, {len(without)} runs")
    return report.fingerprint_summary(ours, without)


# --- 2. dispatcher -------------------------------------------------------------------------------


def bench_dispatch(
    emulator: Any, plan: Plan, inputs: ModelInputs
) -> tuple[dict[str, Any], list[Target]]:
    from bench import dispatch

    function = model.dispatcher_function()

    messages = dispatch.charge_messages(plan.dispatch_items)
    sample = messages[: plan.dispatch_baseline_items]
    baseline_runs, ours_runs = [], []
    for rep in range(plan.dispatch_reps):
        log(f"[dispatch] rep {rep + 1}/{plan.dispatch_reps}: per-item on {len(sample)} items")
        baseline_runs.append(dispatch.per_item(emulator, sample).as_dict())
        if rep == 0:
            log(f"[dispatch] ours on {len(messages)} items")
            ours_runs.append(dispatch.ours(emulator, messages).as_dict())
        else:
            # Further repetitions of ours on the same sample size as the baseline.
            ours_runs.append(dispatch.ours(emulator, sample).as_dict())
    for run in baseline_runs + ours_runs:
        run["model"] = report.model_dispatch_run(run, inputs, function)
    baseline_model = _median_model(baseline_runs)
    ours_model = _median_model(ours_runs)
    modelled_speedup = report.ratio(
        ours_model["modelled_items_per_second"], baseline_model["modelled_items_per_second"]
    )
    baseline_rate = median(r["items_per_second"] for r in baseline_runs)
    ours_rate = median(r["items_per_second"] for r in ours_runs)
    speedup = report.ratio(ours_rate, baseline_rate)
    out = {
        "items": plan.dispatch_items,
        "baseline_sample_items": len(sample),
        "baseline_extrapolated_seconds_for_all_items": round(
            plan.dispatch_items / baseline_rate, 1
        ),
        "baseline_runs": baseline_runs,
        "ours_runs": ours_runs,
        "baseline_items_per_second": round(baseline_rate, 1),
        "ours_items_per_second": round(ours_rate, 1),
        "speedup": speedup,
        "baseline_model": baseline_model,
        "ours_model": ours_model,
        "modelled_speedup": modelled_speedup,
        "calls_ratio": report.ratio(
            median(r["calls_per_item"] for r in baseline_runs),
            median(r["calls_per_item"] for r in ours_runs),
        ),
        "projection": dispatch.projection(ours_rate),
    }
    targets = [
        Target(
            "dispatch.modelled_speedup",
            "dispatcher: modelled AWS items/s, ours / per-item SendMessage",
            modelled_speedup,
            report.DISPATCH_MODELLED_SPEEDUP_LIMIT,
            ">=",
            "x",
        ),
        Target(
            "dispatch.projection_inside_lambda_limits",
            "dispatcher: 1M and 10M items inside Lambda limits (all rows)",
            1.0 if all(row["inside_lambda_limits"] for row in out["projection"]) else 0.0,
            1.0,
            ">=",
        ),
    ]
    return out, targets


def _median_model(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        field: round(median(float(r["model"][field]) for r in runs), 4)
        for field in (
            "modelled_items_per_second",
            "lambda_cpu_seconds",
            "round_trip_seconds",
        )
    }


# --- 3. policy -----------------------------------------------------------------------------------


def bench_policy(plan: Plan) -> tuple[dict[str, Any], list[Target]]:
    from bench import policy_scale

    small, large = plan.policy_sizes
    log(f"[policy] offline check on stacks of 1, {small} and {large} consumers")
    out = policy_scale.measure((1, small, large), plan.policy_reps)
    sizes = out["sizes"]
    t_small = sizes[str(small)]["median_seconds"]
    t_large = sizes[str(large)]["median_seconds"]
    fixed = sizes["1"]["median_seconds"]
    out["ratio"] = report.ratio(t_large, t_small)
    out["ratio_without_startup"] = report.ratio(t_large - fixed, t_small - fixed)
    targets = [
        Target(
            "policy.ratio",
            f"policy check: time({large}) / time({small}) consumers",
            out["ratio"],
            large / small * 1.1,
            "<=",
        ),
        Target(
            "policy.all_resources_no_mandatory",
            "policy check: every resource seen, no mandatory violation",
            1.0
            if all(
                s["resources"] == s["expected_resources"] and s["mandatory_violations"] == 0
                for s in sizes.values()
            )
            else 0.0,
            1.0,
            ">=",
        ),
    ]
    return out, targets


# --- 4. cold start -------------------------------------------------------------------------------


def bench_coldstart(plan: Plan) -> tuple[dict[str, Any], list[Target]]:
    from bench import coldstart

    log(f"[coldstart] import times, {plan.import_reps} fresh interpreters each; bundle size")
    imports = coldstart.measure_imports(plan.import_reps)
    bundle = coldstart.bundle_size()
    targets = [
        Target(
            "bundle.zipped_kb",
            "Lambda bundle (handlers/ .py) zipped, KB",
            round(bundle["zipped_bytes"] / 1024, 1),
            coldstart.BUNDLE_TARGET_BYTES / 1024,
            "<=",
            " KB",
        )
    ]
    return {"imports": imports, "bundle": bundle}, targets


# --- printing ------------------------------------------------------------------------------------


def render(results: dict[str, Any], targets: Sequence[Target]) -> str:
    from bench.consumer import LABELS

    parts: list[str] = []
    m = results["machine"]
    parts.append(
        f"idempotent-messaging benchmarks ({results['mode']}) {results['finished_at']}\n"
        f"machine: {m['nproc']} CPU, {m['cpu_model']}, Python {m['python']}, "
        f"load at start {m['load_average_at_start']}; emulator: moto {m['versions']['moto']} "
        "on 127.0.0.1 (in-process server, real botocore HTTP stack)"
    )
    consumer = results.get("consumer", {})
    for name, scenario in consumer.items():
        rows: list[tuple[Any, ...]] = []
        for impl, s in scenario["summary"].items():
            rows.append(
                (
                    LABELS[impl],
                    s["median_calls_per_message"],
                    s["median_seconds"],
                    s["median_client_cpu_ms_per_message"],
                    s["median_emulator_ms_per_call"],
                    s.get("wall_ratio_to_ours"),
                    s.get("calls_ratio_to_ours"),
                    int(s["median_throttles_injected"]),
                    s["all_correct"],
                )
            )
        title = (
            f"1. consumer / {name}: {scenario['messages']:,} messages in batches of 10, "
            f"{int(scenario['duplicate_rate'] * 100)} % duplicates, "
            f"{int(scenario['throttle_rate'] * 100)} % throttled attempts, "
            f"median of {scenario['repetitions']}"
        )
        parts.append(
            title
            + "\n"
            + report.table(
                (
                    "implementation",
                    "calls/msg",
                    "wall s",
                    "client CPU ms/msg",
                    "emulator ms/call",
                    "wall x ours",
                    "calls x ours",
                    "throttles",
                    "correct",
                ),
                rows,
            )
        )
    if consumer:
        parts.append(_render_model(results))
    d = results.get("dispatch")
    if d:
        sides = [
            (
                "per-item SendMessage",
                d["baseline_items_per_second"],
                d["baseline_runs"][0]["calls_per_item"],
                None,
                d["baseline_model"]["modelled_items_per_second"],
                None,
            ),
            (
                "ours (SendMessageBatch, parallel)",
                d["ours_items_per_second"],
                d["ours_runs"][0]["calls_per_item"],
                d["speedup"],
                d["ours_model"]["modelled_items_per_second"],
                d["modelled_speedup"],
            ),
        ]
        projection_headers = (
            "items",
            "queue",
            "rate basis",
            "bound by",
            "msg/s",
            "minutes",
            "invocations",
            "longest s",
            "hops/segment",
            "SendMessageBatch calls",
            "inside limits",
        )
        projection_rows = [
            (
                r["items"],
                r["queue"],
                r["rate_basis"],
                r["bound_by"],
                r["rate_msg_s"],
                r["total_minutes"],
                r["invocations_in_chain"],
                r["longest_invocation_s"],
                f"{r['hops_per_segment']} / {r['max_hops']}",
                r["send_calls"],
                r["inside_lambda_limits"],
            )
            for r in d["projection"]
        ]
        parts.append(
            f"2. dispatcher: ours on {d['items']:,} items, per-item SendMessage on a "
            f"{d['baseline_sample_items']:,}-item sample (rate extrapolated: "
            f"{d['baseline_extrapolated_seconds_for_all_items']:,} s for all items)\n"
            + report.table(
                (
                    "side",
                    "items/s (moto)",
                    "calls/item",
                    "speedup (moto)",
                    "modelled AWS items/s",
                    "modelled speedup",
                ),
                sides,
            )
            + "\n\n   projection: an invocation sends for up to 840 s (900 s Lambda limit - 60 s "
            "reserve), then hands its segments to continuation messages (68 bytes each)\n"
            + report.table(projection_headers, projection_rows)
        )
    p = results.get("policy")
    if p:
        rows = [
            (s["consumers"], s["resources"], s["median_seconds"], s["mandatory_violations"])
            for s in p["sizes"].values()
        ]
        parts.append(
            "3. offline policy check (python -m idempotent_messaging.offline, fresh process)\n"
            + report.table(("consumers", "resources", "seconds", "mandatory violations"), rows)
            + f"\n   ratio {p['ratio']} (without the 1-consumer start-up cost: "
            f"{p['ratio_without_startup']})"
        )
    c = results.get("coldstart")
    if c:
        mods = c["imports"]["modules"]
        rows = [(name, v["median_s"] * 1000, v.get("ratio_to_boto3")) for name, v in mods.items()]
        b = c["bundle"]
        parts.append(
            "4. cold start: import in a fresh interpreter, median of "
            f"{c['imports']['repetitions']}\n"
            + report.table(("module", "import ms", "x import boto3"), rows)
            + f"\n   bundle: {b['files']} files, {b['raw_bytes'] / 1024:.1f} KB raw, "
            f"{b['zipped_bytes'] / 1024:.1f} KB zipped"
        )
    parts.append("targets (measured value against the target)\n" + report.render_targets(targets))
    notes = report.miss_notes(results, targets)
    if notes:
        parts.append("why the misses (from the measurements above)\n" + "\n".join(notes))
    return "\n\n".join(parts)


def _render_model(results: dict[str, Any]) -> str:
    from bench.consumer import LABELS

    meta = results["model_inputs"]
    fn = meta["consumer_function"]
    lines = [
        "1b. consumer on AWS, modelled (bench/model.py with "
        f"{meta['path']}: p50 round trips per operation, Lambda {fn['memory_mb']} MB "
        f"{fn['architecture']} = x{meta['consumer_cpu_scale']} the measured CPU time; "
        f"{meta['region']} prices checked {meta['prices_checked']}), per 1,000 messages"
    ]
    for name, scenario in results["consumer"].items():
        rows = []
        for impl, s in scenario["summary"].items():
            m = s.get("model")
            if not m:
                continue
            per_k = 1000 / scenario["messages"]
            rows.append(
                (
                    LABELS[impl],
                    s["median_calls_per_message"],
                    m["write_units_per_message"],
                    m["read_units_per_message"],
                    m.get("log_bytes_per_message"),
                    round(m["lambda_cpu_seconds"] * per_k, 3),
                    round(m["round_trip_seconds"] * per_k, 3),
                    m["modelled_seconds_per_1000_messages"],
                    m.get("time_ratio_to_ours"),
                    m["dollars_per_million_messages"],
                    m.get("ours_dollars_ratio"),
                )
            )
        lines.append(
            f"{name}:\n"
            + report.table(
                (
                    "implementation",
                    "calls/msg",
                    "WU/msg",
                    "RU/msg",
                    "log B/msg",
                    "Lambda CPU s",
                    "round trips s",
                    "modelled s",
                    "time x ours",
                    "$ / 1M msgs",
                    "ours $ x",
                ),
                rows,
            )
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--plan",
        choices=tuple(PLANS),
        default=None,
        help="how much work: full (the default), quick (small sizes, about two minutes), smoke "
        "(the harness test's tiny sizes: proves every benchmark and target runs, measures "
        "nothing; needs --output)",
    )
    parser.add_argument("--quick", action="store_true", help="the same as --plan quick")
    parser.add_argument(
        "--only",
        choices=("consumer", "dispatch", "policy", "coldstart"),
        action="append",
        help="run only these benchmarks (repeatable)",
    )
    parser.add_argument(
        "--stock-moto",
        action="store_true",
        help="do not replace moto's per-item table deep copy in TransactWriteItems",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="results JSON path")
    parser.add_argument(
        "--render-from",
        type=Path,
        help="measure nothing: re-print the table of a stored results JSON against the current "
        "targets and store it back",
    )
    parser.add_argument(
        "--model-inputs",
        type=Path,
        default=model.DEFAULT_INPUTS,
        help="latency figures, prices and billing assumptions of the AWS model (TOML)",
    )
    args = parser.parse_args(argv)
    if args.quick and args.plan not in (None, "quick"):
        parser.error(f"--quick and --plan {args.plan} contradict each other: give one")
    args.plan = args.plan or ("quick" if args.quick else "full")
    if args.plan == "smoke" and args.output.resolve() == RESULTS and not args.render_from:
        parser.error(
            "--plan smoke measures nothing worth keeping: give --output (it must not replace "
            f"the committed {RESULTS.name} and the docs generated from it)"
        )
    return args


def _model_meta(path: Path, inputs: ModelInputs) -> dict[str, Any]:
    consumer_fn, dispatcher_fn = model.consumer_function(), model.dispatcher_function()
    try:
        shown = str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    return {
        "path": shown,
        "region": inputs.region,
        "prices_checked": inputs.prices_checked,
        "sources": dict(inputs.sources),
        "consumer_function": consumer_fn.__dict__,
        "consumer_cpu_scale": round(model.cpu_scale(inputs, consumer_fn.memory_mb), 2),
        "dispatcher_function": dispatcher_fn.__dict__,
        "dispatcher_cpu_scale": round(model.cpu_scale(inputs, dispatcher_fn.memory_mb), 2),
    }


def rerender(path: Path) -> int:
    """Print a stored run's table again with the current rendering and the current targets
    (same measurements: `report.retarget`); the committed results regenerate docs/bench.md."""
    results = json.loads(path.read_text())
    targets = report.retarget(results)
    results["targets"] = [t.as_dict() for t in targets]
    results["table"] = render(results, targets)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(results["table"])
    if path.resolve() == RESULTS:
        _regenerate_docs(path)
    return 0


def _regenerate_docs(path: Path) -> None:
    """docs/bench.md's tables and docs/bench-cost.svg are generated from the committed results."""
    from bench import chart, readme

    readme.main([])
    chart.main([])
    print(f"(docs/bench.md tables and docs/bench-cost.svg regenerated from {path})")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render_from:
        return rerender(args.render_from)
    plan = PLANS[args.plan]
    inputs = model.load_inputs(args.model_inputs)  # before any work: a bad file fails at once
    selected = set(args.only or ("consumer", "dispatch", "policy", "coldstart"))
    started = time.perf_counter()
    results: dict[str, Any] = {
        "mode": args.plan,
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "plan": plan.__dict__,
        "emulator_fixes": {"fast_transaction_backup": not args.stock_moto, "sqs_sink": True},
        "model_inputs": _model_meta(args.model_inputs, inputs),
    }
    targets: list[Target] = []
    if selected & {"consumer", "dispatch"}:
        from bench import counting, emulator_fixes
        from idempotent_messaging.local.server import start_emulator

        if not args.stock_moto:
            emulator_fixes.fast_transaction_backup()
        counting.install()
        emulator = start_emulator()
        try:
            if "consumer" in selected:
                results["consumer"], found = bench_consumer(emulator, plan, inputs)
                targets += found
            if "dispatch" in selected:
                results["dispatch"], found = bench_dispatch(emulator, plan, inputs)
                targets += found
        finally:
            emulator.stop()
            counting.uninstall()
    if "policy" in selected:
        results["policy"], found = bench_policy(plan)
        targets += found
    if "coldstart" in selected:
        results["coldstart"], found = bench_coldstart(plan)
        targets += found
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["targets"] = [t.as_dict() for t in targets]
    text = render(results, targets)
    results["table"] = text
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(args.output)
    print(text)
    print(f"\n(total {results['total_seconds']} s; results in {args.output})")
    if args.output.resolve() == RESULTS and {"consumer", "dispatch"} <= selected:
        _regenerate_docs(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
