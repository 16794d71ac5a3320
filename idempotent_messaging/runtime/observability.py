"""Powertools Logger and Metrics shared by the runtime and the entry points.

Log lines carry messageId, event id, group id, receive count, outcome, failure class, attempts
and a reason that never quotes message content. The body is never logged.
"""

from __future__ import annotations

import enum
import os
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
    extra = {k: v for k, v in fields.items() if v is not None}
    extra["outcome"] = str(outcome)
    if outcome is Outcome.FAILED:
        logger.warning("record failed", extra=extra)
    else:
        logger.info(f"record {outcome}", extra=extra)
    metrics.add_metric(name=str(outcome), unit=MetricUnit.Count, value=1)
