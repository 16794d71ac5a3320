"""The AWS latency and cost models: pure functions over what the implementations did.

Inputs: the per-operation usage the call recorder measured (`bench.usage.aggregate`: calls,
items, write/read units, billed requests), the function's measured CPU time, its invocations,
and the figures in bench/aws_model.toml (latency per operation, prices, billing assumptions,
each with its source). Limits of the model: docs/bench.md, "The AWS model".

Modelled time of a run = CPU time (scaled to the Lambda memory's CPU share) + the sum of the
calls' round trips, each ``base_ms + per_item_ms * (items - 1)``; with N parallel senders the
round trips are divided by N (the CPU is not: one interpreter runs one thread at a time).
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_INPUTS = Path(__file__).resolve().parent / "aws_model.toml"


@dataclass(frozen=True)
class OperationLatency:
    base_ms: float
    per_item_ms: float


@dataclass(frozen=True)
class ModelInputs:
    region: str
    prices_checked: str
    latency: Mapping[str, OperationLatency]  # "dynamodb.TransactWriteItems" -> figures
    full_vcpu_memory_mb: float
    scale_cpu_with_memory: bool
    cancelled_transactions_billed: bool
    poller_requests_per_invocation: int
    price_write_unit: float
    price_read_unit: float
    price_sns_publish: float
    price_sqs_standard: float
    price_sqs_fifo: float
    price_lambda_request: float
    price_gb_second: Mapping[str, float]  # architecture -> $ per GB-second
    price_log_gb: float  # CloudWatch Logs ingestion, $ per GB (2**30 bytes)
    platform_log_bytes_per_invocation: float  # Lambda's own START / END / REPORT lines
    sources: Mapping[str, str]


def _number(table: Mapping[str, Any], key: str, where: str) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{where}.{key}: expected a number >= 0, got {value!r}")
    return float(value)


def _section(data: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ValueError(f"model inputs: section [{path}] is missing")
        node = node[part]
    if not isinstance(node, Mapping):
        raise ValueError(f"model inputs: [{path}] must be a table")
    return node


def parse_inputs(data: Mapping[str, Any]) -> ModelInputs:
    """Validate the TOML's content; every problem names the key that is wrong."""
    latency: dict[str, OperationLatency] = {}
    sources: dict[str, str] = {}
    for service, ops in _section(data, "latency").items():
        if not isinstance(ops, Mapping):
            raise ValueError(f"latency.{service}: must be a table of operations")
        if not str(ops.get("source", "")).strip():
            raise ValueError(f"latency.{service}.source: every figure needs its source")
        sources[f"latency.{service}"] = str(ops["source"])
        for op, figures in ops.items():
            if op == "source":
                continue
            where = f"latency.{service}.{op}"
            if not isinstance(figures, Mapping):
                raise ValueError(f"{where}: expected {{ base_ms = ..., per_item_ms = ... }}")
            latency[f"{service}.{op}"] = OperationLatency(
                _number(figures, "base_ms", where), _number(figures, "per_item_ms", where)
            )
    for path in (
        "prices.dynamodb",
        "prices.sns",
        "prices.sqs",
        "prices.lambda",
        "prices.logs",
        "lambda_cpu",
    ):
        source = str(_section(data, path).get("source", "")).strip()
        if not source:
            raise ValueError(f"{path}.source: every figure needs its source")
        sources[path] = source
    meta = _section(data, "meta")
    cpu = _section(data, "lambda_cpu")
    billing = _section(data, "billing")
    ddb, sns = _section(data, "prices.dynamodb"), _section(data, "prices.sns")
    sqs, lam = _section(data, "prices.sqs"), _section(data, "prices.lambda")
    logs = _section(data, "prices.logs")
    for key in ("region", "prices_checked"):
        if not str(meta.get(key, "")).strip():
            raise ValueError(f"meta.{key}: prices are dated inputs for one region; set it")
    flags = {}
    for table, key, where in (
        (cpu, "scale_with_memory", "lambda_cpu"),
        (billing, "cancelled_transactions_billed", "billing"),
    ):
        if not isinstance(table.get(key), bool):
            raise ValueError(f"{where}.{key}: expected true or false, got {table.get(key)!r}")
        flags[key] = bool(table[key])
    full_vcpu = _number(cpu, "full_vcpu_memory_mb", "lambda_cpu")
    if full_vcpu <= 0:
        raise ValueError("lambda_cpu.full_vcpu_memory_mb: must be > 0")
    return ModelInputs(
        region=str(meta["region"]),
        prices_checked=str(meta["prices_checked"]),
        latency=latency,
        full_vcpu_memory_mb=full_vcpu,
        scale_cpu_with_memory=flags["scale_with_memory"],
        cancelled_transactions_billed=flags["cancelled_transactions_billed"],
        poller_requests_per_invocation=int(
            _number(billing, "poller_requests_per_invocation", "billing")
        ),
        price_write_unit=_number(ddb, "write_request_unit", "prices.dynamodb"),
        price_read_unit=_number(ddb, "read_request_unit", "prices.dynamodb"),
        price_sns_publish=_number(sns, "publish_request", "prices.sns"),
        price_sqs_standard=_number(sqs, "standard_request", "prices.sqs"),
        price_sqs_fifo=_number(sqs, "fifo_request", "prices.sqs"),
        price_lambda_request=_number(lam, "request", "prices.lambda"),
        price_gb_second={
            "arm64": _number(lam, "gb_second_arm64", "prices.lambda"),
            "x86_64": _number(lam, "gb_second_x86_64", "prices.lambda"),
        },
        price_log_gb=_number(logs, "ingestion_gb", "prices.logs"),
        platform_log_bytes_per_invocation=_number(
            logs, "platform_bytes_per_invocation", "prices.logs"
        ),
        sources=sources,
    )


def load_inputs(path: Path = DEFAULT_INPUTS) -> ModelInputs:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"model inputs {path}: {e}") from e
    return parse_inputs(data)


# --- the deployed function's configuration, read from the components' defaults ------------------


@dataclass(frozen=True)
class FunctionConfig:
    memory_mb: int
    architecture: str


def _default(cls: type, name: str) -> Any:
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f.default
    raise LookupError(f"{cls.__name__} has no field {name!r}")


def consumer_function() -> FunctionConfig:
    """Memory and architecture IdempotentQueueConsumer gives a consumer by default."""
    from idempotent_messaging.components.consumer_args import IdempotentQueueConsumerArgs as Args

    return FunctionConfig(_default(Args, "memory_size_mb"), _default(Args, "architecture"))


def dispatcher_function() -> FunctionConfig:
    """Memory and architecture MonthlyFanout gives its dispatcher by default."""
    from idempotent_messaging.components.monthly_fanout import MonthlyFanoutArgs as Args

    return FunctionConfig(
        _default(Args, "dispatcher_memory_size_mb"), _default(Args, "architecture")
    )


# --- latency -------------------------------------------------------------------------------------


def round_trip_seconds(usage: Mapping[str, Mapping[str, Any]], inputs: ModelInputs) -> float:
    """Sum over calls of base + per_item * (items - 1), from per-operation calls and items."""
    total_ms = 0.0
    for key, op in usage.items():
        figures = inputs.latency.get(key)
        if figures is None:
            raise ValueError(
                f"{key}: no latency figure for this operation in the model inputs "
                "(add it under [latency.<service>])"
            )
        calls, items = int(op["calls"]), int(op["items"])
        total_ms += calls * figures.base_ms + max(0, items - calls) * figures.per_item_ms
    return total_ms / 1000


def cpu_scale(inputs: ModelInputs, memory_mb: float) -> float:
    """How much longer CPU work takes at `memory_mb` than on one full vCPU."""
    if memory_mb <= 0:
        raise ValueError(f"memory_mb must be > 0, got {memory_mb}")
    if not inputs.scale_cpu_with_memory:
        return 1.0
    return max(1.0, inputs.full_vcpu_memory_mb / memory_mb)


def modelled_seconds(
    cpu_seconds: float,
    usage: Mapping[str, Mapping[str, Any]],
    inputs: ModelInputs,
    memory_mb: float,
    concurrency: int = 1,
) -> float:
    """CPU (scaled) + round trips / concurrency: parallel callers overlap their waits, not
    their CPU (an upper bound for concurrency > 1: the CPU may also overlap some waits)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    return cpu_seconds * cpu_scale(inputs, memory_mb) + round_trip_seconds(usage, inputs) / (
        concurrency
    )


# --- cost ----------------------------------------------------------------------------------------


def write_units(usage: Mapping[str, Mapping[str, Any]], inputs: ModelInputs) -> float:
    """Billed DynamoDB write request units (cancelled transactions per the billing flag)."""
    total = 0.0
    for op in usage.values():
        total += float(op.get("write_units", 0.0))
        if not inputs.cancelled_transactions_billed:
            total -= float(op.get("cancelled_transaction_write_units", 0.0))
    return total


def read_units(usage: Mapping[str, Mapping[str, Any]]) -> float:
    return sum(float(op.get("read_units", 0.0)) for op in usage.values())


def _billed(usage: Mapping[str, Mapping[str, Any]], service: str) -> int:
    return sum(
        int(op.get("billed_requests", 0))
        for key, op in usage.items()
        if key.startswith(f"{service}.")
    )


# The parts of `consumer_cost`, grouped by the AWS service that bills them (the cost chart's
# segments, docs/bench.md "Where the money goes"). Every part belongs to exactly one service.
SERVICES: Mapping[str, tuple[str, ...]] = {
    "dynamodb": ("dynamodb_write", "dynamodb_read"),
    "sns": ("sns",),
    "sqs": ("sqs",),
    "lambda": ("lambda_duration", "lambda_requests"),
    "logs": ("logs",),
}


def dollars_by_service(parts: Mapping[str, float]) -> dict[str, float]:
    """`consumer_cost`'s `dollars` parts summed per service (SERVICES); refuses an unknown part,
    so a part added to the cost cannot go missing from the breakdown."""
    grouped = {part for names in SERVICES.values() for part in names}
    unknown = sorted(set(parts) - grouped)
    if unknown:
        raise ValueError(f"cost parts {unknown}: not assigned to a service in model.SERVICES")
    return {
        service: sum(float(parts.get(part, 0.0)) for part in names)
        for service, names in SERVICES.items()
    }


def consumer_cost(
    usage: Mapping[str, Mapping[str, Any]],
    *,
    messages: int,
    invocations: int,
    duration_seconds: float,
    function: FunctionConfig,
    inputs: ModelInputs,
    source_fifo: bool = False,
    log_bytes: int = 0,
) -> dict[str, Any]:
    """$ of one run, per part, per service (`dollars_by_service`) and per million messages.

    Lambda: one request per invocation, GB-seconds = modelled duration x memory (the 1 ms
    rounding per invocation is left out). SQS: the function's own calls plus the poller's
    receive and delete per invocation. Logs: CloudWatch Logs ingestion of what the function
    wrote (`log_bytes`: its log lines and EMF metrics) plus Lambda's own lines per invocation.
    """
    if messages < 1:
        raise ValueError(f"messages must be >= 1, got {messages}")
    price_gb_s = inputs.price_gb_second.get(function.architecture)
    if price_gb_s is None:
        raise ValueError(f"architecture {function.architecture!r}: no Lambda duration price")
    sqs_price = inputs.price_sqs_fifo if source_fifo else inputs.price_sqs_standard
    wru, rru = write_units(usage, inputs), read_units(usage)
    sqs_requests = _billed(usage, "sqs") + invocations * inputs.poller_requests_per_invocation
    if log_bytes < 0:
        raise ValueError(f"log_bytes must be >= 0, got {log_bytes}")
    ingested_log_bytes = log_bytes + invocations * inputs.platform_log_bytes_per_invocation
    parts = {
        "dynamodb_write": wru * inputs.price_write_unit,
        "dynamodb_read": rru * inputs.price_read_unit,
        "sns": _billed(usage, "sns") * inputs.price_sns_publish,
        "sqs": sqs_requests * sqs_price,
        "lambda_requests": invocations * inputs.price_lambda_request,
        "lambda_duration": duration_seconds * function.memory_mb / 1024 * price_gb_s,
        "logs": ingested_log_bytes / 2**30 * inputs.price_log_gb,
    }
    total = sum(parts.values())
    return {
        "write_units": round(wru, 3),
        "read_units": round(rru, 3),
        "sns_requests": _billed(usage, "sns"),
        "sqs_requests": sqs_requests,
        "log_bytes": round(ingested_log_bytes),
        "dollars": {k: round(v, 9) for k, v in parts.items()},
        "dollars_by_service": {k: round(v, 9) for k, v in dollars_by_service(parts).items()},
        "dollars_total": round(total, 9),
        "dollars_per_million_messages": round(total / messages * 1_000_000, 4),
    }
