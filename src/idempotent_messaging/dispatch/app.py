"""Lambda entry point of the monthly dispatcher: ``idempotent_messaging.dispatch.app.handler``.

Two kinds of events reach it:
- a trigger: the schedule's ``{"trigger": "schedule", "scheduled_time": "<aws.scheduler.
  scheduled-time>"}`` or a manual ``{"month": "YYYY-MM"[, "restart": true]}``;
- an SQS batch from the control queue: continuations of segments handed off when an earlier
  invocation ran low on time (answered with a partial batch response).
Settings and clients are built per invocation (see settings.py for why).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from idempotent_messaging.runtime.clients import (
    CONNECT_TIMEOUT_S,
    cached_client,
    invocation_deadline,
    reset_clients,
)
from idempotent_messaging.runtime.env import POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_SERVICE_NAME

from . import env
from .dispatcher import Budget, Continuation, ControlQueue, Dispatcher, Outcome
from .months import parse_trigger, timezone
from .runs import RunStore
from .sender import WorkQueueSender
from .settings import Settings
from .sources import DynamoDBAccountsSource, ItemSource, S3ManifestSource

__all__ = ["handler", "reset_clients", "run"]

DEFAULT_NAMESPACE = "IdempotentMessaging"
DEFAULT_SERVICE = "monthly-dispatch"
logger = Logger(service=os.environ.get(POWERTOOLS_SERVICE_NAME) or DEFAULT_SERVICE)
metrics = Metrics()


# A manifest chunk or a scan page may take longer than the consumer runtime's 5 s read timeout
# allows: 20 s per socket read. Connecting takes what it takes the runtime (2 s). A call starts
# only when a connect timeout (and, with a botocore that cannot cut one request's read timeout,
# a whole read timeout) still fits before the invocation's deadline
# (runtime.clients.invocation_deadline): 2 + 20 s + the 1 s margin stay within the default
# 60 s time reserve, so the hand-off to a continuation always gets its call.
READ_TIMEOUT_S = 20
MAX_ATTEMPTS = 6  # botocore retries throttled scans and sends itself: 1 call + 5 retries


def _client(service: str, settings: Settings) -> Any:
    """The bundle's shared client cache; the connection pool fits the parallel segment scans
    and sends."""
    return cached_client(
        service,
        max_attempts=MAX_ATTEMPTS,
        max_pool_connections=settings.send_concurrency + settings.segment_concurrency + 4,
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
    )


def _source(settings: Settings) -> ItemSource:
    if settings.item_source == env.SOURCE_S3:
        assert settings.manifest_bucket and settings.manifest_key_template
        return S3ManifestSource(
            _client("s3", settings), settings.manifest_bucket, settings.manifest_key_template
        )
    assert settings.billing_accounts_table
    return DynamoDBAccountsSource(
        _client("dynamodb", settings), settings.billing_accounts_table, settings.scan_page_size
    )


def _remaining_ms(context: Any) -> Any:
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        return context.get_remaining_time_in_millis
    return None


LAMBDA_MAX_MS = 15 * 60 * 1000  # a local/manual call without a context: Lambda's maximum


def run(event: Any, context: Any, settings: Settings | None = None) -> dict[str, Any]:
    """The handler without Powertools decorators (what tests and the ops CLI call). Every AWS
    call ends before the invocation's timeout (``invocation_deadline``, from the same first
    reading of the remaining time as the budget)."""
    settings = settings or Settings.from_env()
    remaining = _remaining_ms(context)
    start_ms = remaining() if remaining is not None else None  # the one first reading
    with invocation_deadline(None, remaining_ms=start_ms):  # None: no context, no deadline
        budget = Budget.starting_with(
            remaining or (lambda: LAMBDA_MAX_MS),
            settings.time_reserve_ms,
            LAMBDA_MAX_MS if start_ms is None else start_ms,
        )
        return _run(event, settings, budget)


def _run(event: Any, settings: Settings, budget: Budget) -> dict[str, Any]:
    tz = timezone(settings.schedule_timezone)
    sqs = _client("sqs", settings)
    with ThreadPoolExecutor(settings.send_concurrency, thread_name_prefix="send") as pool:
        dispatcher = Dispatcher(
            source=_source(settings),
            sender=WorkQueueSender(sqs, settings.work_queue_url, pool, settings.max_send_attempts),
            runs=RunStore(_client("dynamodb", settings), settings.runs_table),
            control=ControlQueue(sqs, settings.control_queue_url),
            segment_concurrency=settings.segment_concurrency,
            max_hops=settings.max_hops,
            logger=logger,
        )
        if isinstance(event, dict) and "Records" in event:
            return _continuations(dispatcher, event["Records"], budget)
        trigger = parse_trigger(event, tz)
        outcome = dispatcher.start(trigger, settings.scan_segments, budget)
        _count(outcome)
        return outcome.as_dict()


def _continuations(dispatcher: Dispatcher, records: list[Any], budget: Budget) -> dict[str, Any]:
    """Continuations (the component's mapping delivers one per invocation). A failure is
    reported for redelivery; when every record failed the invocation itself fails, so the
    function's Errors alarm fires at once instead of only the DLQ alarm hours later."""
    failures = []
    errors: list[Exception] = []
    for record in records:
        message_id = record.get("messageId")
        try:
            outcome = dispatcher.resume(Continuation.parse(record["body"]), budget)
            _count(outcome)
        except Exception as exc:
            logger.exception("continuation failed", extra={"messageId": message_id})
            failures.append({"itemIdentifier": message_id})
            errors.append(exc)
    if errors and len(errors) == len(records):
        raise errors[0]
    return {"batchItemFailures": failures}


def _count(outcome: Outcome) -> None:
    metrics.add_metric("ChargesEnqueued", MetricUnit.Count, outcome.enqueued)
    if outcome.rejected:
        metrics.add_metric("ItemsRejected", MetricUnit.Count, outcome.rejected)
    if outcome.handed_off:
        metrics.add_metric("SegmentsHandedOff", MetricUnit.Count, len(outcome.handed_off))


@metrics.log_metrics
def handler(event: Any, context: Any) -> dict[str, Any]:
    # Read per invocation (functions share a process in the emulator demo); a default keeps a
    # manual/local call without Powertools settings from failing AFTER its work was done.
    metrics.namespace = os.environ.get(POWERTOOLS_METRICS_NAMESPACE) or DEFAULT_NAMESPACE
    metrics.service = os.environ.get(POWERTOOLS_SERVICE_NAME) or DEFAULT_SERVICE
    return run(event, context)
