"""Lambda rules: SQS event source mappings must report partial batch failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import limits
from ._base import (
    MANDATORY,
    Boundary,
    Finding,
    stack_rule,
)
from .graph import ESM, Graph, Node, sqs_by_shape
from .values import is_unknown, plain


def remedy_batch_item_failures(
    resource_type: str, props: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any] | None:
    """ReportBatchItemFailures added to the response types of an SQS mapping: one known by its
    source ARN, or (an ARN unknown in a preview or owned by another stack) by its properties,
    as the rule itself decides (`graph.sqs_by_shape`). Lambda then retries only the records a
    handler reports; a handler that returns nothing (or raises) behaves as before (Lambda
    Developer Guide, "Handling errors for an SQS event source": an empty or null response is a
    complete success)."""
    if resource_type != ESM:
        return None
    types = props.get("functionResponseTypes")
    if types is None:
        types = []
    if not isinstance(types, list) or any(not isinstance(t, str) for t in types):
        return None  # unknown, or a secret: never touched
    if limits.REPORT_BATCH_ITEM_FAILURES in types:
        return None
    source = props.get("eventSourceArn")
    if isinstance(source, str) and source and not is_unknown(source):
        is_sqs = source.startswith("arn:") and source.split(":")[2:3] == ["sqs"]
    else:
        is_sqs = sqs_by_shape(Node("", ESM, "", plain(props)))
    if not is_sqs:
        return None
    return {**props, "functionResponseTypes": [*types, limits.REPORT_BATCH_ITEM_FAILURES]}


@stack_rule(
    "lambda-sqs-esm-reports-batch-item-failures",
    "SQS event source mappings report partial batch failures (ReportBatchItemFailures).",
    MANDATORY,
    "Set function_response_types=['ReportBatchItemFailures'] and return batchItemFailures "
    "from the handler.",
    remedy=remedy_batch_item_failures,
    remedies="function_response_types gains ReportBatchItemFailures on an SQS mapping (a "
    "handler that returns nothing or raises behaves as before; one that returns another value "
    "must return batchItemFailures).",
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
