"""Powertools Logger and Metrics shared by the runtime and the entry points.

Log lines carry messageId, event id, group id, receive count, outcome, failure class, attempts
and a reason that never quotes message content. The body is never logged.
"""

from __future__ import annotations

import enum
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
        logger.info(
            f"{len(processed)} record(s) {Outcome.PROCESSED}",
            extra={"outcome": str(Outcome.PROCESSED), "count": len(records), "records": records},
        )
    for outcome, count in Counter(outcome for outcome, _ in outcomes).items():
        metrics.add_metric(name=str(outcome), unit=MetricUnit.Count, value=count)


def _fields(outcome: Outcome, fields: dict[str, Any]) -> dict[str, Any]:
    extra = {k: v for k, v in fields.items() if v is not None}
    extra["outcome"] = str(outcome)
    return extra


def _log(outcome: Outcome, extra: dict[str, Any]) -> None:
    if outcome is Outcome.FAILED:
        logger.warning("record failed", extra=extra)
    else:
        logger.info(f"record {outcome}", extra=extra)
