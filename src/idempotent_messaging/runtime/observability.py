"""Powertools Logger and Metrics shared by the runtime and the entry points.

Log lines carry messageId, event id, group id, receive count, outcome, failure class, attempts
and a reason that never quotes message content. The body is never logged.

Every line stays under CloudWatch Logs' 256 KB per event (PutLogEvents: "Each log event can be
no larger than 256 KB"; 1 MB is the hard limit, 26 bytes of overhead each) for any batch the
component allows (10,000 records on a standard queue): the processed summary is split into
parts of at most ``SUMMARY_PART_BYTES`` of records, and a logged text is cut at
``MAX_FIELD_CHARS``.
"""

from __future__ import annotations

import enum
import json
import logging
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from idempotent_messaging.runtime import env

DEFAULT_SERVICE = "idempotent-consumer"
# Without a namespace Powertools refuses to flush and the exception would fail the whole batch.
DEFAULT_METRICS_NAMESPACE = "IdempotentMessaging"
MAX_LOG_EVENT_BYTES = 256_000
"""CloudWatch Logs' design limit for one event ("256 KB", read as the smaller 256,000 bytes)."""
SUMMARY_PART_BYTES = 128 * 1024
"""Records listed on one processed line, as JSON with every non-ASCII character escaped (more
than Powertools writes): half the event limit, the rest for the line's own keys (service,
Lambda context, keys a consumer appends)."""
MAX_FIELD_CHARS = 2_048
"""A logged text (a reason quoting a plug-in's error, an AWS message) is cut to this many
characters; ids are far shorter (event id <= 512, message id <= 100, group id <= 128)."""

logger = Logger(service=os.environ.get(env.POWERTOOLS_SERVICE_NAME) or DEFAULT_SERVICE)
metrics = Metrics(
    namespace=os.environ.get(env.POWERTOOLS_METRICS_NAMESPACE) or DEFAULT_METRICS_NAMESPACE
)


class Outcome(enum.StrEnum):
    PROCESSED = "processed"
    DUPLICATE_SKIPPED = "duplicate_skipped"
    REPUBLISHED = "republished"
    QUARANTINED = "quarantined"
    RETRIED = "retried"
    FAILED = "failed"


def refresh_from_env() -> None:
    """Follow env changes between invocations (several functions share one process in the
    embedded emulator demo)."""
    metrics.namespace = (
        os.environ.get(env.POWERTOOLS_METRICS_NAMESPACE) or DEFAULT_METRICS_NAMESPACE
    )
    service = os.environ.get(env.POWERTOOLS_SERVICE_NAME)
    if service:
        metrics.service = service
        logger.append_keys(service=service)
        # Powertools keeps one metric set per process and gives it the service dimension the
        # first time it serialises it; a set it printed early (at 100 values of a metric)
        # keeps that dimension until the end-of-invocation flush. Whatever printed last in
        # this process (another function of the embedded emulator, code outside a handler),
        # this invocation's metrics name this function's service.
        if metrics.dimension_set.get("service", service) != service:
            metrics.dimension_set["service"] = service


def record_outcome(outcome: Outcome, **fields: Any) -> None:
    """One structured log line and one EMF count for a record's outcome (or a retry)."""
    _log(outcome, _fields(outcome, fields))
    metrics.add_metric(name=str(outcome), unit=MetricUnit.Count, value=1)


def record_outcomes(outcomes: Sequence[tuple[Outcome, dict[str, Any]]]) -> None:
    """A batch's outcomes: one EMF count per outcome (the number of records), one line per
    record, except that the records which ended ``processed`` share ONE line listing each of
    them (its ``records`` field, in batch order; one line per record at DEBUG).

    Why: on the happy path a line per record is most of the function's log volume
    (CloudWatch Logs bills ingestion per GB, ~0.4 KB a line) and about a tenth of its CPU per
    message; a processed record is also on its item (claim status, message id, times). Every
    other outcome, the ones someone investigates, keeps its own line."""
    processed: list[dict[str, Any]] = []
    for outcome, fields in outcomes:
        line = _fields(outcome, fields)
        if outcome is Outcome.PROCESSED:
            processed.append(line)
        else:
            _log(outcome, line)
    if processed:
        if logging.getLogger(logger.name).isEnabledFor(logging.DEBUG):
            for line in processed:
                logger.debug(f"record {Outcome.PROCESSED}", extra=line)
        records = [{k: v for k, v in line.items() if k != "outcome"} for line in processed]
        parts = _parts(records)
        for number, part in enumerate(parts, start=1):
            where = f" (part {number} of {len(parts)})" if len(parts) > 1 else ""
            logger.info(
                f"{len(part)} record(s) {Outcome.PROCESSED}{where}",
                extra={
                    "outcome": str(Outcome.PROCESSED),
                    "count": len(part),
                    "records": part,
                    "part": number,
                    "parts": len(parts),
                    "batch_count": len(records),
                },
            )
    for outcome, count in Counter(outcome for outcome, _ in outcomes).items():
        metrics.add_metric(name=str(outcome), unit=MetricUnit.Count, value=count)
    # A conflict ends quarantined (or failed, if the DLQ refused it); it has its own count too,
    # which the component alarms on (> 0).
    conflicts = sum(1 for _, f in outcomes if f.get("failure_kind") == env.CONFLICTING_DUPLICATE)
    if conflicts:
        metrics.add_metric(name=env.CONFLICTING_DUPLICATE, unit=MetricUnit.Count, value=conflicts)


def _parts(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The processed records in batch order, split so that each part's records take at most
    ``SUMMARY_PART_BYTES`` (each line lists its own records' message and event ids)."""
    parts: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for record in records:
        # ensure_ascii: \uXXXX for every non-ASCII character, an upper bound of its UTF-8 bytes.
        n = len(json.dumps(record, default=str)) + 1
        if current and size + n > SUMMARY_PART_BYTES:
            parts.append(current)
            current, size = [], 0
        current.append(record)
        size += n
    if current:
        parts.append(current)
    return parts


def bounded(value: Any) -> Any:
    """A text cut at ``MAX_FIELD_CHARS``, saying how much was cut; anything else unchanged."""
    if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
        return f"{value[:MAX_FIELD_CHARS]}... [{len(value) - MAX_FIELD_CHARS} characters cut]"
    return value


def _fields(outcome: Outcome, fields: dict[str, Any]) -> dict[str, Any]:
    extra = {k: bounded(v) for k, v in fields.items() if v is not None}
    extra["outcome"] = str(outcome)
    return extra


def _log(outcome: Outcome, extra: dict[str, Any]) -> None:
    if outcome is Outcome.FAILED:
        logger.warning("record failed", extra=extra)
    else:
        logger.info(f"record {outcome}", extra=extra)
