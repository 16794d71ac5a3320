"""Powertools idempotency strategy (seed 003 section 2.3), for consumers WITHOUT notification.

Selected with ``IDEMPOTENCY_STRATEGY=powertools``. Each record runs through Powertools'
``BatchProcessor`` (``SqsFifoPartialProcessor`` on FIFO sources) and an
``idempotent_function`` whose key is the business key only:

* the hashed payload is ``{"event_id": ...}`` (plus ``tenant`` in the tenant layout), taken by
  the consumer's own event id rule; ``event_key_jmespath`` selects exactly that, never the
  messageId, receive count or other metadata;
* ``raise_on_no_idempotency_key=True``: a missing key must never run the business write
  unprotected (Powertools' default would);
* ``expires_after_seconds`` = the claim TTL (90 days by default), not Powertools' 1 hour;
* ``register_lambda_context`` is always called, so an INPROGRESS record left by a crash expires
  with the invocation instead of blocking redeliveries for the whole expiry;
* the persistence layer is built per invocation around the injected boto3 client (moto in
  tests, the cached Lambda client in production).

Costs (see docs/runtime.md): 3 DynamoDB calls per fresh record, 1 per duplicate, no batching.
Poison is quarantined exactly as in the transactional strategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
)
from botocore.exceptions import ClientError

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.errors import (
    FailureClass,
    PoisonKind,
    PoisonMessage,
    classify_cancellation,
    classify_exception,
    is_transaction_cancelled,
)
from idempotent_messaging.runtime.observability import Outcome, record_outcome
from idempotent_messaging.runtime.quarantine import Quarantine, QuarantineEntry
from idempotent_messaging.runtime.store import StateStore

if TYPE_CHECKING:
    from idempotent_messaging.runtime.consumer import Consumer, Runtime


class _RecordFailed(Exception):
    """Reported as a batch item failure by Powertools' processor."""


def persistence_layer(runtime: Runtime) -> DynamoDBPersistenceLayer:
    """Powertools' persistence on the SAME state table and key schema as the claims."""
    settings = runtime.settings
    if settings.tenant_layout:
        return DynamoDBPersistenceLayer(
            table_name=settings.state_table,
            key_attr=env.TENANT_PARTITION_KEY,
            sort_key_attr=env.TENANT_SORT_KEY,
            expiry_attr=settings.ttl_attribute,
            boto3_client=runtime.dynamodb,
        )
    return DynamoDBPersistenceLayer(
        table_name=settings.state_table,
        key_attr=env.EVENT_ID_KEY,
        expiry_attr=settings.ttl_attribute,
        boto3_client=runtime.dynamodb,
    )


def idempotency_config(runtime: Runtime, context: Any) -> IdempotencyConfig:
    key = "[tenant, event_id]" if runtime.settings.tenant_layout else "event_id"
    config = IdempotencyConfig(
        event_key_jmespath=key,
        raise_on_no_idempotency_key=True,
        expires_after_seconds=runtime.settings.claim_ttl_seconds,
    )
    if context is not None:
        config.register_lambda_context(context)
    return config


def process_with_powertools(
    consumer: Consumer, event: Mapping[str, Any], context: Any, runtime: Runtime
) -> dict[str, Any]:
    settings = runtime.settings
    store = StateStore(runtime.dynamodb, settings)
    quarantine = Quarantine(runtime.sqs, settings.dlq_url)
    persistence = persistence_layer(runtime)
    config = idempotency_config(runtime, context)
    now = int(consumer.clock())

    def apply_writes(
        *, message: dict[str, Any], items: list[Any], ran: list[bool]
    ) -> dict[str, Any]:
        ran.append(True)
        if items:
            store.transact(items)
        return {"event_id": message["event_id"]}

    idempotent_apply = idempotent_function(
        apply_writes,
        data_keyword_argument="message",
        persistence_store=persistence,
        config=config,
        key_prefix=consumer.namespace,
    )

    def record_handler(record: SQSRecord) -> None:
        raw = record.raw_event
        fields: dict[str, Any] = {
            "message_id": record.message_id,
            "group_id": record.attributes.message_group_id,
            "receive_count": int(record.attributes.approximate_receive_count or 1),
        }
        try:
            decoded = consumer.decode(raw, settings, now)
            fields["event_id"] = decoded.event_id
            key_payload: dict[str, Any] = {"event_id": decoded.event_id}
            if settings.tenant_layout:
                key_payload["tenant"] = decoded.key.key[env.TENANT_PARTITION_KEY]["S"]
            ran: list[bool] = []
            idempotent_apply(message=key_payload, items=decoded.items, ran=ran)
        except PoisonMessage as exc:
            _quarantine(quarantine, raw, fields, exc.kind, exc.reason)
            return
        except ClientError as exc:
            kind = _semantic(exc)
            if kind is not None:
                _quarantine(quarantine, raw, fields, kind, "business write was cancelled")
                return
            _fail(fields, classify_exception(exc), f"{type(exc).__name__}")
        except IdempotencyAlreadyInProgressError:
            _fail(fields, FailureClass.TRANSIENT, "another delivery of this event is in progress")
        record_outcome(Outcome.PROCESSED if ran else Outcome.DUPLICATE_SKIPPED, **fields)

    fifo = settings.source_fifo or any(
        str(r.get("eventSourceARN", "")).endswith(".fifo") for r in event.get("Records") or []
    )
    processor: BatchProcessor = (
        SqsFifoPartialProcessor(skip_group_on_error=True) if fifo else BatchProcessor(EventType.SQS)
    )
    # Every record failing is still a partial response, never an exception for the whole batch.
    processor.raise_on_entire_batch_failure = False
    return dict(
        process_partial_response(
            event=dict(event), record_handler=record_handler, processor=processor, context=context
        )
    )


def _semantic(exc: ClientError) -> PoisonKind | None:
    if not is_transaction_cancelled(exc):
        return None
    codes = [str(r.get("Code") or "None") for r in exc.response.get("CancellationReasons") or []]
    classes = [classify_cancellation(c, is_claim=False) for c in codes]
    if FailureClass.TRANSIENT in classes or FailureClass.PERMANENT not in classes:
        return None
    return PoisonKind.SEMANTIC if "ConditionalCheckFailed" in codes else PoisonKind.SCHEMA


def _fail(fields: dict[str, Any], failure_class: FailureClass, reason: str) -> None:
    record_outcome(Outcome.FAILED, failure_class=str(failure_class), reason=reason, **fields)
    raise _RecordFailed(reason)


def _quarantine(
    quarantine: Quarantine,
    raw: Mapping[str, Any],
    fields: dict[str, Any],
    kind: PoisonKind | str,
    reason: str,
) -> None:
    entry = QuarantineEntry(
        entry_id="q0",
        body=str(raw.get("body") or ""),
        failure_class=str(FailureClass.PERMANENT),
        kind=str(kind),
        reason=reason,
        message_id=fields["message_id"],
        receive_count=fields["receive_count"],
        event_id=fields.get("event_id"),
        group_id=fields.get("group_id"),
        original_attributes=raw.get("messageAttributes") or {},
    )
    try:
        error = quarantine.send_batch([entry]).get("q0")
    except Exception as exc:  # classified: any failure to quarantine means "keep it in SQS"
        error = type(exc).__name__
    if error:
        _fail(
            {**fields, "failure_kind": str(kind)},
            FailureClass.PERMANENT,
            f"{kind}: {reason}; quarantine send failed: {error}",
        )
    record_outcome(
        Outcome.QUARANTINED,
        failure_class=str(FailureClass.PERMANENT),
        failure_kind=str(kind),
        reason=reason,
        **fields,
    )


__all__ = ["idempotency_config", "persistence_layer", "process_with_powertools"]
