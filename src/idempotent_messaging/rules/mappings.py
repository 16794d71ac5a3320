"""SQS event source mapping rules: what Lambda rejects at deploy time, and concurrency.

Deploy-time rejections (Lambda CreateEventSourceMapping, "Using Lambda with Amazon SQS"):
- a batch size above 10 needs a maximum batching window of at least 1 second;
- a FIFO source takes no batching window and at most 10 records per batch;
- `DestinationConfig.OnFailure` exists for stream and Kafka sources only, not SQS (the queue's
  redrive policy plays that part).
A preview knows these values (they are inputs), so it catches what `up` would fail on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import limits
from ._base import ADVISORY, MANDATORY, Finding, stack_rule
from .graph import ExternalRef, Graph, Mapping_, Node, as_number, fmt
from .values import is_unknown

# AWS's default batch size for an SQS source when none is set.
AWS_DEFAULT_SQS_BATCH_SIZE = 10
# Lambda's SQS poller starts with five concurrent batches and scales from there; a function
# reserved below that throttles the poller's very first invocations ("Using Lambda with
# Amazon SQS", scaling and concurrency).
MIN_RESERVED_FOR_SQS = 5


def _value(node: Node, *path: str, default: float) -> Any:
    value = as_number(node.get(*path))
    return default if value is None else value


def _label(m: Mapping_) -> str:
    queue = m.queue.label if isinstance(m.queue, (Node, ExternalRef)) else "an SQS queue"
    return f"event source mapping {m.node.label} ({queue})"


@stack_rule(
    "sqs-esm-config-valid",
    "An SQS event source mapping uses only settings Lambda accepts: batch size > 10 needs a "
    "batching window >= 1 s; FIFO sources take no batching window and batch size <= 10; no "
    "on-failure destination.",
    MANDATORY,
    "Set maximum_batching_window_in_seconds >= 1 for batches above 10; drop the window and keep "
    "batch_size <= 10 on FIFO queues; remove destination_config.on_failure (use the queue's "
    "redrive policy).",
)
def esm_config_valid(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for m in graph.mappings:
        if not m.is_sqs:
            continue
        esm = m.node
        problems: list[str] = []
        batch = _value(esm, "batchSize", default=AWS_DEFAULT_SQS_BATCH_SIZE)
        window_set = esm.get("maximumBatchingWindowInSeconds")
        window = _value(esm, "maximumBatchingWindowInSeconds", default=0)
        fifo = graph.is_fifo(m.queue) if m.queue is not None else None
        known = not is_unknown(batch) and not is_unknown(window)
        if fifo is True:
            if not is_unknown(window) and window_set is not None and window > 0:
                problems.append(
                    f"sets a batching window ({fmt(window)} s) on a FIFO queue, which Lambda "
                    f"does not support for FIFO sources"
                )
            if not is_unknown(batch) and batch > limits.SQS_MAX_BATCH_SIZE_FIFO:
                problems.append(
                    f"sets batch size {fmt(batch)} on a FIFO queue (at most "
                    f"{limits.SQS_MAX_BATCH_SIZE_FIFO})"
                )
        elif known and batch > limits.SQS_BATCH_SIZE_WITHOUT_WINDOW and window < 1:
            problems.append(
                f"sets batch size {fmt(batch)} with a batching window of {fmt(window)} s; Lambda "
                f"requires a window of at least 1 s for batches above "
                f"{limits.SQS_BATCH_SIZE_WITHOUT_WINDOW}"
            )
        if esm.get("destinationConfig", "onFailure") is not None:
            problems.append(
                "sets destination_config.on_failure, which Lambda accepts for stream and Kafka "
                "sources only (failed SQS messages go to the queue's redrive DLQ)"
            )
        if problems:
            findings.append(
                (
                    esm.urn,
                    f"{_label(m)} " + "; ".join(problems) + ". Lambda rejects the mapping, so "
                    "the deployment fails. Fix: set maximum_batching_window_in_seconds >= 1 for "
                    "batches above 10 on standard queues; on FIFO queues drop the window and keep "
                    "batch_size <= 10; remove destination_config.on_failure and give the queue a "
                    "redrive policy instead.",
                )
            )
    return findings


def _reserved(fn: Node) -> Any:
    """The function's reserved concurrency; None when unreserved (-1, the provider default)."""
    value = as_number(fn.get("reservedConcurrentExecutions"))
    if value is None or (not is_unknown(value) and value < 0):
        return None
    return value


def _sqs_consumers(graph: Graph) -> list[tuple[Mapping_, Node]]:
    return [(m, m.function) for m in graph.mappings if m.is_sqs and isinstance(m.function, Node)]


@stack_rule(
    "lambda-sqs-max-concurrency-within-reserved",
    "An SQS mapping's maximum concurrency does not exceed its function's reserved concurrency.",
    MANDATORY,
    "Lower scaling_config.maximum_concurrency to the reserved concurrency, or reserve more.",
)
def max_concurrency_within_reserved(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    """The poller keeps receiving up to the mapping's maximum concurrency; invocations beyond
    the function's reserved concurrency are throttled, their messages return to the queue and
    count a receive each, so healthy messages reach maxReceiveCount and are dead-lettered."""
    findings: list[Finding] = []
    for m, fn in _sqs_consumers(graph):
        maximum = as_number(m.node.get("scalingConfig", "maximumConcurrency"))
        reserved = _reserved(fn)
        if maximum is None or reserved is None or is_unknown(maximum) or is_unknown(reserved):
            continue
        if maximum > reserved:
            findings.append(
                (
                    m.node.urn,
                    f"{_label(m)} sets scaling_config.maximum_concurrency {fmt(maximum)} above the "
                    f"reserved concurrency {fmt(reserved)} of function {fn.label}: the poller "
                    f"invokes beyond what the function may run, the throttled batches return to "
                    f"the queue with one more receive each, and healthy messages end up in the "
                    f"DLQ. Fix: set maximum_concurrency <= {fmt(reserved)} or raise "
                    f"reserved_concurrent_executions on {fn.label}.",
                )
            )
    return findings


@stack_rule(
    "lambda-sqs-reserved-concurrency-at-least-5",
    f"A function consuming an SQS queue reserves at least {MIN_RESERVED_FOR_SQS} concurrent "
    f"executions when it reserves any.",
    ADVISORY,
    f"Set reserved_concurrent_executions >= {MIN_RESERVED_FOR_SQS}, or use the mapping's "
    f"maximum_concurrency to limit the consumer.",
)
def reserved_concurrency_at_least_5(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[str] = set()
    for m, fn in _sqs_consumers(graph):
        reserved = _reserved(fn)
        if fn.urn in seen or reserved is None or is_unknown(reserved):
            continue
        seen.add(fn.urn)
        if reserved < MIN_RESERVED_FOR_SQS:
            findings.append(
                (
                    fn.urn,
                    f"function {fn.label} consumes an SQS queue through {_label(m)} with reserved "
                    f"concurrency {fmt(reserved)}: Lambda's SQS poller starts with "
                    f"{MIN_RESERVED_FOR_SQS} concurrent batches, so the surplus is throttled and "
                    f"its messages come back with a higher receive count. Fix: reserve at least "
                    f"{MIN_RESERVED_FOR_SQS}, or limit the consumer with the mapping's "
                    f"scaling_config.maximum_concurrency instead (minimum 2).",
                )
            )
    return findings
