"""SQS event source mapping rules: what Lambda rejects at deploy time, and concurrency.

Deploy-time rejections (Lambda API reference, CreateEventSourceMapping: each parameter says which
event sources it is valid for; "Using Lambda with Amazon SQS"):
- every setting valid for other sources only (`SQS_REFUSED_SETTINGS`): the stream and Kafka
  settings `DestinationConfig`, `ParallelizationFactor`, `BisectBatchOnFunctionError`,
  `MaximumRetryAttempts`, `MaximumRecordAgeInSeconds`, `TumblingWindowInSeconds`, the stream
  position `StartingPosition` / `StartingPositionTimestamp`, and the Kafka, MQ and DocumentDB
  source settings (the queue's redrive policy plays the part of the failure settings);
- `ScalingConfig.MaximumConcurrency` outside 2..1000;
- a batch size above 10 needs a maximum batching window of at least 1 second, which is at most
  300 s;
- a FIFO source takes no batching window and at most 10 records per batch.
A preview knows these values (they are inputs), so it catches what `up` would fail on. A test
reads the "valid for" scope of every CreateEventSourceMapping parameter from botocore's model of
the Lambda API and checks `SQS_REFUSED_SETTINGS` against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import limits
from ._base import ADVISORY, MANDATORY, Boundary, Finding, stack_rule
from .graph import ExternalRef, Graph, Mapping_, Node, as_number, fmt
from .values import is_unknown

# AWS's default batch size for an SQS source when none is set.
AWS_DEFAULT_SQS_BATCH_SIZE = 10
# Lambda's SQS poller starts with five concurrent batches and scales from there; a function
# reserved below that throttles the poller's very first invocations ("Using Lambda with
# Amazon SQS", scaling and concurrency).
MIN_RESERVED_FOR_SQS = 5

# Mapping property (as pulumi-aws names it on the wire) -> the sources AWS accepts it for
# (CreateEventSourceMapping). Lambda refuses each of them on an SQS mapping.
SQS_REFUSED_SETTINGS: dict[str, str] = {
    "startingPosition": "Kinesis, DynamoDB Streams, DocumentDB and Kafka (a stream position)",
    "startingPositionTimestamp": "Kinesis, DocumentDB and Kafka (a stream position)",
    "destinationConfig": "Kinesis, DynamoDB Streams, Amazon MSK and self-managed Kafka",
    "parallelizationFactor": "Kinesis and DynamoDB Streams only",
    "bisectBatchOnFunctionError": "Kinesis, DynamoDB Streams, Amazon MSK and self-managed Kafka",
    "maximumRetryAttempts": "Kinesis, DynamoDB Streams, Amazon MSK and self-managed Kafka",
    "maximumRecordAgeInSeconds": "Kinesis, DynamoDB Streams, Amazon MSK and self-managed Kafka",
    "tumblingWindowInSeconds": "Kinesis and DynamoDB Streams only",
    "topics": "Kafka (the topic to read)",
    "queues": "Amazon MQ (the broker queue to read)",
    "selfManagedEventSource": "self-managed Kafka (the brokers)",
    "selfManagedKafkaEventSourceConfig": "self-managed Kafka",
    "amazonManagedKafkaEventSourceConfig": "Amazon MSK",
    "documentDbEventSourceConfig": "DocumentDB",
}


def _set(value: Any) -> bool:
    """Whether a mapping property is set: the provider reports the unset stream settings of an
    SQS mapping as 0, "", false, [] or {} in its state, which is no setting (unknown: no
    evidence either)."""
    if value is None or is_unknown(value):
        return False
    if isinstance(value, dict):
        return any(_set(v) for v in value.values())
    if isinstance(value, list):
        return any(_set(v) for v in value)
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return value != ""


def _names_a_destination(value: Any) -> bool:
    """Whether a destination config holds a destination, known or not (an unknown ARN)."""
    if is_unknown(value):
        return True
    if isinstance(value, dict):
        return any(_names_a_destination(v) for v in value.values())
    return isinstance(value, str) and value != ""


def _value(node: Node, *path: str, default: float) -> Any:
    value = as_number(node.get(*path))
    return default if value is None else value


def _label(m: Mapping_) -> str:
    queue = m.queue.label if isinstance(m.queue, (Node, ExternalRef)) else "an SQS queue"
    return f"event source mapping {m.node.label} ({queue})"


def _refused_settings(esm: Node) -> list[str]:
    out = []
    for prop, valid_for in SQS_REFUSED_SETTINGS.items():
        declared = _set(esm.get(prop))
        if prop == "destinationConfig":
            # A destination computed from an Output (unknown in a preview) is still declared,
            # whatever spelling of its keys the SDK hands over with the unknown inside.
            declared = declared or _names_a_destination(esm.get(prop))
        if declared:
            out.append(f"sets {prop}, which Lambda accepts for {valid_for}, not for SQS")
    maximum = as_number(esm.get("scalingConfig", "maximumConcurrency"))
    if (
        isinstance(maximum, float)
        and maximum != 0
        and not (
            limits.ESM_MIN_MAXIMUM_CONCURRENCY <= maximum <= limits.ESM_MAX_MAXIMUM_CONCURRENCY
        )
    ):
        out.append(
            f"sets scaling_config.maximum_concurrency {fmt(maximum)}, outside Lambda's range "
            f"{limits.ESM_MIN_MAXIMUM_CONCURRENCY}..{limits.ESM_MAX_MAXIMUM_CONCURRENCY}"
        )
    return out


@stack_rule(
    "sqs-esm-config-valid",
    "An SQS event source mapping uses only settings Lambda accepts for SQS: none of the "
    "stream, Kafka, MQ or DocumentDB settings (starting position, destination config, "
    "parallelization, bisect, retry attempts, record age, tumbling window, ...); maximum "
    "concurrency 2..1000; batch size > 10 needs a batching window >= 1 s (at most 300 s); FIFO "
    "sources take no batching window and batch size <= 10.",
    MANDATORY,
    "Remove the settings Lambda accepts for other sources only (failed SQS messages go to the "
    "queue's redrive DLQ); keep maximum_concurrency within 2..1000; set "
    "maximum_batching_window_in_seconds >= 1 for batches above 10; drop the window and keep "
    "batch_size <= 10 on FIFO queues.",
    enforces="Lambda refuses to create the mapping (Lambda API reference, "
    "CreateEventSourceMapping: each parameter's valid sources; ScalingConfig "
    "MaximumConcurrency 2..1000; BatchSize above 10 needs MaximumBatchingWindowInSeconds >= 1; "
    "'Using Lambda with Amazon SQS': FIFO queues take at most 10 records and no batching "
    "window).",
    defaults="No batch_size: 10 for SQS; no batching window: 0 s; no maximum concurrency: none. "
    "Stream settings the provider reports as 0, false or empty for an SQS mapping count as "
    "unset.",
    boundaries=(
        Boundary(
            "A mapping whose source is unknown (a StackReference output, a preview) and that "
            "sets a stream-only setting is taken for a stream mapping and not judged.",
            "test_esm_config_rule_takes_an_unknown_source_with_stream_settings_for_a_stream",
        ),
        Boundary(
            "Settings the provider reports as 0, false or empty for an SQS mapping (its state of "
            "an unset stream setting).",
            "test_esm_config_rule_ignores_the_zero_values_the_provider_reports",
        ),
        Boundary(
            "Mappings of other sources (Kinesis, DynamoDB Streams, Kafka, MQ): their settings "
            "are not checked.",
            "test_esm_config_rule_ignores_mappings_of_other_sources",
        ),
    ),
)
def esm_config_valid(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for m in graph.mappings:
        if not m.is_sqs:
            continue
        esm = m.node
        problems: list[str] = _refused_settings(esm)
        batch = _value(esm, "batchSize", default=AWS_DEFAULT_SQS_BATCH_SIZE)
        window_set = esm.get("maximumBatchingWindowInSeconds")
        window = _value(esm, "maximumBatchingWindowInSeconds", default=0)
        fifo = graph.is_fifo(m.queue) if m.queue is not None else None
        known = not is_unknown(batch) and not is_unknown(window)
        if not is_unknown(window) and window > limits.SQS_MAX_BATCHING_WINDOW_S:
            problems.append(
                f"sets a batching window of {fmt(window)} s (at most "
                f"{limits.SQS_MAX_BATCHING_WINDOW_S})"
            )
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
        if problems:
            findings.append(
                (
                    esm.urn,
                    f"{_label(m)} " + "; ".join(problems) + ". Lambda rejects the mapping, so "
                    "the deployment fails. Fix: remove the settings Lambda accepts for other "
                    "sources only (failed SQS messages go to the queue's redrive DLQ: give the "
                    "queue a redrive policy instead of an on-failure destination); keep "
                    "maximum_concurrency within 2..1000; set maximum_batching_window_in_seconds "
                    ">= 1 for batches above 10 on standard queues; on FIFO queues drop the "
                    "window and keep batch_size <= 10.",
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
    enforces=(
        "Invocations beyond a function's reserved concurrency are throttled; the SQS "
        "poller returns their messages to the queue, each receive counting toward "
        "maxReceiveCount (Lambda Developer Guide, 'Configuring scaling behavior for SQS "
        "event source mappings')."
    ),
    defaults=(
        "No maximum_concurrency: the poller is not capped by the mapping; no reserved "
        "concurrency (-1): the function shares the account's pool; either way this rule "
        "has nothing to compare."
    ),
    boundaries=(
        Boundary(
            (
                "A mapping without maximum concurrency on a reserved function, and a capped "
                "mapping on an unreserved function."
            ),
            "test_max_concurrency_rule_needs_both_values",
        ),
    ),
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
    enforces=(
        "Lambda's SQS poller starts with five concurrent batches (Lambda Developer Guide, "
        "'Using Lambda with Amazon SQS', scaling)."
    ),
    defaults="No reserved_concurrent_executions (-1): unreserved, not judged.",
    boundaries=(
        Boundary(
            "Functions that reserve no concurrency (they share the account's pool).",
            "test_reserved_concurrency_rule_ignores_unreserved_functions",
        ),
    ),
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
