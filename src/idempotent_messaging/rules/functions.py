"""Lambda rules: SQS event source mappings must report partial batch failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import (
    MANDATORY,
    Boundary,
    Finding,
    stack_rule,
)
from .graph import Graph
from .values import is_unknown


@stack_rule(
    "lambda-sqs-esm-reports-batch-item-failures",
    "SQS event source mappings report partial batch failures (ReportBatchItemFailures).",
    MANDATORY,
    "Set function_response_types=['ReportBatchItemFailures'] and return batchItemFailures "
    "from the handler.",
    enforces=(
        "Without ReportBatchItemFailures, one failing message makes Lambda return the "
        "whole batch to the queue (Lambda Developer Guide, 'Handling errors for an SQS "
        "event source in Lambda': implementing partial batch responses)."
    ),
    defaults=(
        "No function_response_types: no partial batch response (AWS's default), so a "
        "failure retries the whole batch; this rule demands the setting."
    ),
    boundaries=(
        Boundary(
            ("Mappings of streams, Kafka, MQ and DocumentDB (they report failures differently)."),
            "test_batch_item_failures_rule_ignores_mappings_of_other_sources",
        ),
        Boundary(
            (
                "Whether the handler returns batchItemFailures (the pack sees the mapping, not "
                "the code)."
            ),
            "test_batch_item_failures_rule_cannot_see_the_handlers_response",
        ),
    ),
)
def esm_reports_batch_item_failures(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    """Only SQS mappings: streams report failures differently and need no such setting.

    An SQS mapping needs no OnFailure destination either (that is for streams and async
    invocations; the queue's redrive policy plays that part), so none is demanded.
    """
    findings: list[Finding] = []
    for m in graph.mappings:
        if not m.is_sqs:
            continue
        types = m.node.get("functionResponseTypes", default=[])
        if is_unknown(types) or (isinstance(types, list) and "ReportBatchItemFailures" in types):
            continue
        queue = m.queue.label if m.queue is not None else "an SQS queue"
        fn = m.function.label if m.function is not None else "its function"
        findings.append(
            (
                m.node.urn,
                f"event source mapping {m.node.label} ({queue} -> {fn}) does not set "
                f"function_response_types=['ReportBatchItemFailures']: one failing message "
                f"makes Lambda retry the whole batch, re-running every message that already "
                f"succeeded. Fix: set function_response_types=['ReportBatchItemFailures'] and "
                f"return {{'batchItemFailures': [{{'itemIdentifier': messageId}}]}} from the "
                f"handler.",
            )
        )
    return findings
