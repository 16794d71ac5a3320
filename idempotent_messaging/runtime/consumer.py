"""The plug-in contract and the batch algorithm (transactional strategy).

A consumer author supplies the event id source, ``writes`` and (optionally) ``notification``;
``Consumer.handle`` does the rest for one SQS batch:

1. decode and validate every record (poison is set aside for quarantine, no AWS call);
2. ONE TransactWriteItems per <= 100 items: every record's claim (``attribute_not_exists``)
   plus its business writes. On cancellation the per-item reasons split the batch: claim
   conditions failed -> duplicates (status comes back with ``ALL_OLD``, else one BatchGetItem);
   business conditions failed -> semantic poison; TransactionConflict -> retried (50 ms x 2^n,
   +-50 % jitter, 3 attempts); the rest is re-submitted as a smaller transaction at once;
3. ONE SNS PublishBatch per <= 10 notifications (fresh claims and ``pending`` duplicates);
4. ONE TransactWriteItems of Updates per <= 100 records marking them ``sent``;
5. ONE SQS SendMessageBatch per <= 10 poison messages to the DLQ.

Nothing escapes as an exception (except a process death): the result is a partial batch
response. FIFO: from the first failing record of a group on, the group's records are reported
failed and are not written, so order within a group is never broken.
"""

from __future__ import annotations

import decimal
import enum
import json
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.clients import MAX_ATTEMPTS, clients_from_env, transaction_backoff
from idempotent_messaging.runtime.errors import (
    ConfigurationError,
    FailureClass,
    PoisonKind,
    PoisonMessage,
    SchemaError,
    classify_cancellation,
    classify_exception,
    error_code,
    is_transaction_cancelled,
)
from idempotent_messaging.runtime.keys import (
    EventIdFromAttribute,
    EventIdFromBody,
    EventIdSource,
    StateKey,
    state_key,
    utf8_length,
    validate_tenant,
)
from idempotent_messaging.runtime.limits import check_transact_item
from idempotent_messaging.runtime.notify import (
    PUBLISH_BATCH_MAX_BYTES,
    Notification,
    Notifier,
    PublishEntry,
    chunk_entries,
)
from idempotent_messaging.runtime.observability import (
    Outcome,
    logger,
    record_outcome,
    refresh_from_env,
)
from idempotent_messaging.runtime.quarantine import Quarantine, QuarantineEntry, chunk_quarantine
from idempotent_messaging.runtime.settings import POWERTOOLS_WITHDRAWN, Settings
from idempotent_messaging.runtime.store import (
    ALLOWED_ITEM_KINDS,
    BATCH_GET_MAX_KEYS,
    TRANSACT_MAX_ITEMS,
    StateStore,
    StatusWrite,
    TransactItem,
    status_of,
)

DEFAULT_MAX_BODY_BYTES = 256 * 1024
"""Bodies above this are poison: the notification (SNS: 256 KiB) and the business row
(DynamoDB: 400 KB) could never hold them."""


@dataclass(frozen=True)
class WriteContext:
    """What ``writes`` may use besides the decoded message."""

    event_id: str
    message_id: str
    business_table: str | None
    """``BUSINESS_TABLE`` from the environment (None when unset)."""
    tenant: str | None
    now: int
    """Epoch seconds at which the batch started."""


WritesFn = Callable[[Any, WriteContext], Sequence[TransactItem]]
NotificationFn = Callable[[Any, str], Notification | None]
TenantFn = Callable[[Any], str]


@dataclass(frozen=True)
class Runtime:
    """Settings and clients for one invocation (inject it in tests; ``from_env`` in Lambda)."""

    settings: Settings
    dynamodb: Any
    sns: Any
    sqs: Any

    @classmethod
    def from_env(cls) -> Runtime:
        clients = clients_from_env()
        return cls(Settings.from_env(), clients.dynamodb, clients.sns, clients.sqs)


class _Stage(enum.Enum):
    PARSED = "parsed"
    POISON = "poison"
    NEED_READ = "need_read"
    NEED_PUBLISH = "need_publish"
    NEED_STATUS = "need_status"
    DONE = "done"


@dataclass(eq=False)
class _Record:
    index: int
    raw: Mapping[str, Any]
    message_id: str
    body: str
    receive_count: int
    group_id: str | None
    stage: _Stage = _Stage.PARSED
    event_id: str | None = None
    key: StateKey | None = None
    claim: TransactItem | None = None
    items: list[TransactItem] = field(default_factory=list)
    notification: Notification | None = None
    duplicate: bool = False
    shadow_of: _Record | None = None
    outcome: Outcome | None = None
    failure_class: FailureClass | None = None
    kind: str | None = None
    reason: str | None = None
    attempts: int = 1
    notification_id: str | None = None

    def poison(self, kind: PoisonKind | str, reason: str) -> None:
        self.stage = _Stage.POISON
        self.failure_class = FailureClass.PERMANENT
        self.kind = str(kind)
        self.reason = reason

    def fail(self, failure_class: FailureClass, reason: str) -> None:
        self.stage = _Stage.DONE
        self.outcome = Outcome.FAILED
        self.failure_class = failure_class
        self.reason = reason

    def finish(self, outcome: Outcome) -> None:
        self.stage = _Stage.DONE
        self.outcome = outcome

    @property
    def failed(self) -> bool:
        return self.outcome is Outcome.FAILED


class Consumer:
    """An idempotent SQS consumer: database exactly-once, notification at-least-once.

    Args:
        writes: ``writes(message, ctx) -> [TransactItem, ...]``: the business writes for one
            decoded message as DynamoDB transaction items in the low-level client format
            (``{"Put": {...}}``, ``{"Update": {...}}``, ``{"ConditionCheck": {...}}``). Their
            own conditions failing is a semantic failure: the message is quarantined and its
            claim is not written. Raise ``SchemaError(reason)`` (or KeyError/TypeError/
            ValueError) for a malformed message. Reasons must not quote message content.
        notification: ``notification(message, event_id) -> Notification | None``; None (the
            function or its result) means no notification: the claim is written as ``sent``.
        event_id: ``EventIdFromBody(path="event_id")``, ``EventIdFromAttribute(name)`` or
            ``EventIdFromContentHash()``.
        namespace: sort-key prefix in the tenant layout (``<namespace>#<event id>``).
        tenant: ``tenant(message) -> str``; required when ``STATE_KEY_LAYOUT=tenant``.
        requires_business_table: refuse to run when ``BUSINESS_TABLE`` is unset.

    Messages are decoded as JSON with floats as ``Decimal`` (DynamoDB's number type).
    """

    def __init__(
        self,
        *,
        writes: WritesFn,
        notification: NotificationFn | None = None,
        event_id: EventIdSource | None = None,
        namespace: str = "event",
        tenant: TenantFn | None = None,
        requires_business_table: bool = False,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not namespace or "#" in namespace:
            raise ValueError(f"namespace={namespace!r} must be non-empty and contain no '#'")
        self.writes = writes
        self.notification = notification
        self.event_id = event_id or EventIdFromBody()
        self.namespace = namespace
        self.tenant = tenant
        self.requires_business_table = requires_business_table
        self.max_body_bytes = max_body_bytes
        self.clock = clock
        self.sleep = sleep

    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        """Lambda entry: settings and clients come from the environment of THIS invocation."""
        refresh_from_env()
        try:
            runtime = Runtime.from_env()
        except ConfigurationError as exc:
            return _all_failed(event, str(exc))
        return self.process(event, context, runtime)

    def process(self, event: Mapping[str, Any], context: Any, runtime: Runtime) -> dict[str, Any]:
        """Process one SQS batch with explicit settings and clients."""
        try:
            self.check(runtime.settings)
        except ConfigurationError as exc:
            return _all_failed(event, str(exc))
        batch = _Batch(self, runtime, context, event)
        batch.run()
        return batch.response()

    def check(self, settings: Settings) -> None:
        """Raise ConfigurationError when this consumer cannot run with ``settings``."""
        if settings.tenant_layout and self.tenant is None:
            raise ConfigurationError(
                f"{env.STATE_KEY_LAYOUT}={env.LAYOUT_TENANT} needs a consumer built with tenant="
            )
        if self.notification is not None and not settings.topic_arn:
            raise ConfigurationError(
                f"{env.NOTIFICATION_TOPIC_ARN} is missing but this consumer sends notifications"
            )
        if self.requires_business_table and not settings.business_table:
            raise ConfigurationError(f"{env.BUSINESS_TABLE} is missing or empty")
        if settings.strategy == env.STRATEGY_POWERTOOLS:
            raise ConfigurationError(POWERTOOLS_WITHDRAWN)

    # --- pure per-record decoding ---------------------------------------------------------
    def decode(self, raw: Mapping[str, Any], settings: Settings, now: int) -> _Decoded:
        """Decode one record; raises PoisonMessage for anything that can never succeed and
        PluginError for an unexpected exception of consumer code (both carry the event id
        once it is known, so a DLQ copy keeps it)."""
        body = raw.get("body")
        if not isinstance(body, str):
            raise PoisonMessage(PoisonKind.NOT_JSON, "record has no text body")
        size = utf8_length(body)
        if size is None:
            raise PoisonMessage(PoisonKind.NOT_JSON, "body is not valid Unicode text")
        if size > self.max_body_bytes:
            raise PoisonMessage(
                PoisonKind.OVERSIZE, f"body is {size} bytes (max {self.max_body_bytes})"
            )
        try:
            message = json.loads(body, parse_float=Decimal)
        except json.JSONDecodeError as exc:
            # The decoder's message and position never quote the body itself.
            where = f" ({exc.msg} at position {exc.pos})"
            raise PoisonMessage(PoisonKind.NOT_JSON, f"body is not JSON{where}") from None
        except RecursionError:
            raise PoisonMessage(
                PoisonKind.NOT_JSON, "body is JSON nested deeper than the decoder allows"
            ) from None
        except ValueError:
            # e.g. an integer literal above Python's int-string conversion limit.
            raise PoisonMessage(PoisonKind.NOT_JSON, "body is not JSON") from None
        event_id = self.event_id.extract(raw, message)
        try:
            return self._decode_rest(raw, message, event_id, settings, now)
        except (PoisonMessage, PluginError) as exc:
            exc.event_id = event_id
            raise

    def _decode_rest(
        self, raw: Mapping[str, Any], message: Any, event_id: str, settings: Settings, now: int
    ) -> _Decoded:
        tenant = None
        if settings.tenant_layout:
            assert self.tenant is not None  # checked by check()
            tenant = validate_tenant(_plugin_call(self.tenant, "tenant", message))
        key = state_key(
            tenant_layout=settings.tenant_layout,
            event_id=event_id,
            namespace=self.namespace,
            tenant=tenant,
        )
        ctx = WriteContext(
            event_id=event_id,
            message_id=str(raw.get("messageId", "")),
            business_table=settings.business_table,
            tenant=tenant,
            now=now,
        )
        items = list(_plugin_call(self.writes, "writes", message, ctx) or [])
        for position, item in enumerate(items):
            if (
                not isinstance(item, Mapping)
                or len(item) != 1
                or not set(item) <= ALLOWED_ITEM_KINDS
            ):
                raise SchemaError(
                    f"writes() item {position} is not one of {sorted(ALLOWED_ITEM_KINDS)}"
                )
            check_transact_item(position, item)
        if 1 + len(items) > TRANSACT_MAX_ITEMS:
            raise PoisonMessage(
                PoisonKind.OVERSIZE,
                f"claim + {len(items)} writes exceed {TRANSACT_MAX_ITEMS} transaction items",
            )
        notification = None
        if self.notification is not None:
            notification = _plugin_call(self.notification, "notification", message, event_id)
            if notification is not None:
                notification = _checked_notification(notification)
        return _Decoded(event_id=event_id, key=key, items=items, notification=notification)


@dataclass(frozen=True)
class _Decoded:
    event_id: str
    key: StateKey
    items: list[TransactItem]
    notification: Notification | None


class PluginError(Exception):
    """Consumer code raised an exception the runtime cannot classify: the record is reported
    failed ALONE (possibly transient; SQS redelivers it, its redrive policy bounds it)."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(f"{name}() raised {type(error).__name__}")
        self.reason = f"{name}() raised {type(error).__name__}"
        self.event_id: str | None = None


def _checked_notification(notification: Any) -> Notification:
    if not isinstance(notification, Notification):
        raise SchemaError(
            f"notification() returned a {type(notification).__name__}, not a Notification"
        )
    texts = [notification.message, notification.subject or ""]
    for name, value in dict(notification.attributes).items():
        texts.extend((name, value))
    if not all(isinstance(t, str) and utf8_length(t) is not None for t in texts):
        raise SchemaError("notification() returned text that is not valid Unicode strings")
    if notification.size() > PUBLISH_BATCH_MAX_BYTES:
        raise PoisonMessage(
            PoisonKind.OVERSIZE,
            f"notification is {notification.size()} bytes (max {PUBLISH_BATCH_MAX_BYTES})",
        )
    return notification


# Consumer code raising these over a message means the message is malformed: the same message
# would raise again on every delivery.
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError, IndexError, LookupError)


def _plugin_call(fn: Callable[..., Any], name: str, *args: Any) -> Any:
    """Call consumer code; classify what it raises without ever quoting the message."""
    try:
        return fn(*args)
    except PoisonMessage:
        raise
    except RecursionError:
        raise SchemaError(f"{name}() could not handle the message: nested too deep") from None
    except decimal.DecimalException:
        # boto3's TypeSerializer traps Inexact/Rounded/Overflow/Underflow: DynamoDB's number
        # type cannot hold the value (more than 38 digits, or exponent out of range).
        raise SchemaError(
            f"{name}() met a number DynamoDB cannot hold (38 significant digits, "
            "1E-130 .. 9.9E+125)"
        ) from None
    except _MALFORMED as exc:
        # The exception text may quote the message: keep only its type.
        raise SchemaError(f"{name}() rejected the message ({type(exc).__name__})") from None
    except Exception as exc:
        raise PluginError(name, exc) from None


def _all_failed(event: Mapping[str, Any], reason: str) -> dict[str, Any]:
    logger.error("configuration error: every record is reported failed", extra={"reason": reason})
    failures = []
    for raw in event.get("Records") or []:
        record_outcome(
            Outcome.FAILED,
            message_id=raw.get("messageId"),
            failure_class="configuration",
            reason=reason,
        )
        failures.append({"itemIdentifier": raw.get("messageId")})
    return {"batchItemFailures": failures}


class _Batch:
    """State of one batch through the stages; every AWS call goes through a guard."""

    def __init__(
        self, consumer: Consumer, runtime: Runtime, context: Any, event: Mapping[str, Any]
    ) -> None:
        self.consumer = consumer
        self.settings = runtime.settings
        self.context = context
        self.store = StateStore(runtime.dynamodb, runtime.settings)
        self.notifier = (
            Notifier(runtime.sns, runtime.settings.topic_arn)
            if runtime.settings.topic_arn
            else None
        )
        self.quarantine = Quarantine(runtime.sqs, runtime.settings.dlq_url)
        self.now = int(consumer.clock())
        raws = list(event.get("Records") or [])
        self.fifo = self.settings.source_fifo or any(
            str(r.get("eventSourceARN", "")).endswith(".fifo") for r in raws
        )
        self.records = [self._wrap(i, raw) for i, raw in enumerate(raws)]

    @staticmethod
    def _wrap(index: int, raw: Mapping[str, Any]) -> _Record:
        attributes = raw.get("attributes") or {}
        try:
            receive_count = int(attributes.get("ApproximateReceiveCount", 1))
        except (TypeError, ValueError):
            receive_count = 1
        body = raw.get("body")
        return _Record(
            index=index,
            raw=raw,
            message_id=str(raw.get("messageId", f"record-{index}")),
            body=body if isinstance(body, str) else "",
            receive_count=receive_count,
            group_id=attributes.get("MessageGroupId"),
        )

    # --- driver ------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._decode_all()
            self._quarantine_now()
            self._mark_in_batch_duplicates()
            self._commit_all()
            self._read_statuses()
            self._publish()
            self._write_statuses()
            self._resolve_shadows()
            self._propagate_fifo_failures()
            self._quarantine()
            self._propagate_fifo_failures()
        except Exception as exc:  # never let one bug fail the whole batch silently
            logger.error(
                "unexpected error; unfinished records are reported failed",
                extra={
                    "error_type": type(exc).__name__,
                    # Frames only: an exception message could quote the body.
                    "stack": "".join(traceback.format_tb(exc.__traceback__)),
                },
            )
            for rec in self.records:
                if rec.stage is not _Stage.DONE:
                    rec.fail(FailureClass.TRANSIENT, f"unexpected {type(exc).__name__}")
        for rec in self.records:
            if rec.stage is not _Stage.DONE:  # defensive: every record ends somewhere
                rec.fail(FailureClass.TRANSIENT, "record did not finish")
            record_outcome(
                rec.outcome or Outcome.FAILED,
                message_id=rec.message_id,
                event_id=rec.event_id,
                group_id=rec.group_id,
                receive_count=rec.receive_count,
                failure_class=str(rec.failure_class) if rec.failure_class else None,
                failure_kind=rec.kind,
                reason=rec.reason,
                attempts=rec.attempts,
            )

    def response(self) -> dict[str, Any]:
        return {
            "batchItemFailures": [
                {"itemIdentifier": rec.message_id} for rec in self.records if rec.failed
            ]
        }

    # --- guards ------------------------------------------------------------------------------
    def _time_ok(self, recs: Sequence[_Record]) -> bool:
        """False (and ``recs`` failed) when too little Lambda time remains for another call."""
        remaining = getattr(self.context, "get_remaining_time_in_millis", None)
        if remaining is None or remaining() >= self.settings.remaining_time_guard_ms:
            return True
        for rec in recs:
            rec.fail(FailureClass.TRANSIENT, "remaining Lambda time too short; left for redelivery")
        return False

    def _blocked(self, rec: _Record) -> bool:
        """FIFO: an earlier record of the same group has failed, so this one must wait."""
        if not self.fifo or rec.group_id is None:
            return False
        return any(
            other.failed and other.group_id == rec.group_id for other in self.records[: rec.index]
        )

    def _drop_blocked(self, recs: Sequence[_Record]) -> list[_Record]:
        kept = []
        for rec in recs:
            if self._blocked(rec):
                rec.fail(FailureClass.TRANSIENT, "an earlier message of its group failed")
            else:
                kept.append(rec)
        return kept

    # --- stage 1: decode -----------------------------------------------------------------------
    def _decode_all(self) -> None:
        for rec in self.records:
            try:
                decoded = self.consumer.decode(rec.raw, self.settings, self.now)
            except PoisonMessage as exc:
                rec.event_id = exc.event_id
                rec.poison(exc.kind, exc.reason)
                continue
            except PluginError as exc:
                rec.event_id = exc.event_id
                rec.fail(FailureClass.TRANSIENT, exc.reason)
                continue
            except Exception as exc:  # a runtime bug must cost this record only
                rec.fail(FailureClass.TRANSIENT, f"decoding raised {type(exc).__name__}")
                continue
            rec.event_id = decoded.event_id
            rec.key = decoded.key
            rec.items = decoded.items
            rec.notification = decoded.notification
            rec.claim = self.store.claim_item(
                key=decoded.key,
                event_id=decoded.event_id,
                message_id=rec.message_id,
                status=env.STATUS_PENDING if decoded.notification else env.STATUS_SENT,
                now=self.now,
            )

    def _mark_in_batch_duplicates(self) -> None:
        """Two records of one event in a batch: only the first goes to DynamoDB (a transaction
        may not touch one item twice); the later one follows the first's outcome."""
        first: dict[str, _Record] = {}
        for rec in self.records:
            if rec.stage is not _Stage.PARSED or rec.key is None:
                continue
            if rec.key.label in first:
                rec.shadow_of = first[rec.key.label]  # parked until _resolve_shadows
            else:
                first[rec.key.label] = rec

    def _live(self, stage: _Stage) -> list[_Record]:
        return [r for r in self.records if r.stage is stage and r.shadow_of is None]

    # --- stage 2: claims + business writes ---------------------------------------------------
    def _commit_all(self) -> None:
        chunk: list[_Record] = []
        size = 0
        for rec in self._live(_Stage.PARSED):
            n = 1 + len(rec.items)
            if chunk and size + n > TRANSACT_MAX_ITEMS:
                self._commit(chunk)
                chunk, size = [], 0
            chunk.append(rec)
            size += n
        if chunk:
            self._commit(chunk)

    def _commit(self, todo: list[_Record]) -> None:
        while todo:
            todo = self._drop_blocked(todo)
            if not todo or not self._time_ok(todo):
                return
            items: list[TransactItem] = []
            owners: list[tuple[_Record, int]] = []  # (record, -1 for its claim or write index)
            for rec in todo:
                assert rec.claim is not None
                items.append(rec.claim)
                owners.append((rec, -1))
                for position, item in enumerate(rec.items):
                    items.append(item)
                    owners.append((rec, position))
            try:
                self.store.transact(items)
            except ClientError as exc:
                if is_transaction_cancelled(exc):
                    todo = self._split_cancelled(todo, owners, exc)
                    self._quarantine_now()
                    continue
                failure_class = classify_exception(exc)
                if failure_class is FailureClass.PERMANENT and len(todo) > 1:
                    # Not attributable to one record: fall back to one transaction per record.
                    for rec in todo:
                        self._commit([rec])
                        self._quarantine_now()
                    return
                for rec in todo:
                    if failure_class is FailureClass.PERMANENT:
                        rec.poison(PoisonKind.SCHEMA, f"transaction rejected: {_short(exc)}")
                    else:
                        rec.fail(failure_class, f"transaction failed: {_short(exc)}")
                return
            except BotoCoreError as exc:
                for rec in todo:
                    rec.fail(FailureClass.TRANSIENT, f"transaction failed: {type(exc).__name__}")
                return
            for rec in todo:
                rec.stage = _Stage.NEED_PUBLISH if rec.notification else _Stage.DONE
                if rec.stage is _Stage.DONE:
                    rec.finish(Outcome.PROCESSED)
            return

    def _split_cancelled(
        self, todo: list[_Record], owners: list[tuple[_Record, int]], exc: ClientError
    ) -> list[_Record]:
        """Use CancellationReasons to split a cancelled transaction; returns what to resubmit."""
        reasons = exc.response.get("CancellationReasons") or []
        conflicted: set[int] = set()
        if len(reasons) != len(owners):
            conflicted = {rec.index for rec in todo}  # unattributable: retry everyone
        else:
            verdicts: dict[int, list[tuple[int, str, Mapping[str, Any]]]] = {}
            for (rec, position), reason in zip(owners, reasons, strict=True):
                verdicts.setdefault(rec.index, []).append(
                    (position, str(reason.get("Code") or "None"), reason)
                )
            for rec in todo:
                claim_code = next(c for p, c, _ in verdicts[rec.index] if p == -1)
                claim_reason = next(r for p, _, r in verdicts[rec.index] if p == -1)
                if classify_cancellation(claim_code, is_claim=True) is FailureClass.DUPLICATE:
                    self._duplicate(rec, claim_reason.get("Item"))
                    continue
                classes = [
                    (p, c, classify_cancellation(c, is_claim=p == -1))
                    for p, c, _ in verdicts[rec.index]
                ]
                if any(cls is FailureClass.TRANSIENT for _, _, cls in classes):
                    conflicted.add(rec.index)
                    continue
                permanent = [(p, c) for p, c, cls in classes if cls is FailureClass.PERMANENT]
                if permanent:
                    position, code = permanent[0]
                    if position == -1:
                        # The claim itself was refused (e.g. ValidationError on the state
                        # item): not a business outcome, and there may be no business item.
                        rec.poison(
                            PoisonKind.SCHEMA,
                            f"claim write was cancelled: {code}; nothing was written",
                        )
                        continue
                    kind = (
                        PoisonKind.SEMANTIC
                        if code == "ConditionalCheckFailed"
                        else PoisonKind.SCHEMA
                    )
                    rec.poison(
                        kind,
                        f"business write {position} {_describe(rec.items[position])}"
                        f" was cancelled: {code}; claim not written",
                    )
        retry: list[_Record] = []
        worst = 0
        for rec in todo:
            if rec.stage is not _Stage.PARSED:
                continue
            if rec.index in conflicted:
                if rec.attempts >= MAX_ATTEMPTS:
                    rec.fail(
                        FailureClass.TRANSIENT,
                        f"transaction conflict persisted after {rec.attempts} attempts",
                    )
                    continue
                record_outcome(
                    Outcome.RETRIED,
                    message_id=rec.message_id,
                    event_id=rec.event_id,
                    group_id=rec.group_id,
                    receive_count=rec.receive_count,
                    failure_class=str(FailureClass.TRANSIENT),
                    reason="TransactionConflict",
                    attempts=rec.attempts,
                )
                worst = max(worst, rec.attempts)
                rec.attempts += 1
            retry.append(rec)
        if worst:
            self.consumer.sleep(transaction_backoff(worst))
        return retry

    def _duplicate(self, rec: _Record, existing: Mapping[str, Any] | None) -> None:
        rec.duplicate = True
        status = status_of(existing)
        if status is None:
            rec.stage = _Stage.NEED_READ
        else:
            self._apply_status(rec, status)

    def _apply_status(self, rec: _Record, status: str | None) -> None:
        if status == env.STATUS_SENT:
            rec.finish(Outcome.DUPLICATE_SKIPPED)
        elif status == env.STATUS_PENDING:
            # The earlier delivery died between commit and publish: publish, then mark sent.
            rec.stage = _Stage.NEED_PUBLISH
        else:
            rec.fail(FailureClass.TRANSIENT, f"claim has unexpected status {status!r}")

    # --- stage 2b: statuses of duplicates the cancellation did not carry ----------------------
    def _read_statuses(self) -> None:
        pending = self._drop_blocked(self._live(_Stage.NEED_READ))
        for start in range(0, len(pending), BATCH_GET_MAX_KEYS):
            chunk = pending[start : start + BATCH_GET_MAX_KEYS]
            if not self._time_ok(chunk):
                continue
            try:
                statuses, unprocessed = self.store.read_statuses([r.key for r in chunk if r.key])
            except (ClientError, BotoCoreError) as exc:
                for rec in chunk:
                    rec.fail(classify_exception(exc), f"status read failed: {_short(exc)}")
                continue
            for rec in chunk:
                assert rec.key is not None
                if rec.key.label in unprocessed:
                    rec.fail(FailureClass.TRANSIENT, "status read left unprocessed")
                elif statuses.get(rec.key.label) is None:
                    rec.fail(FailureClass.TRANSIENT, "claim vanished after its condition failed")
                else:
                    self._apply_status(rec, statuses[rec.key.label])

    # --- stage 3: notifications --------------------------------------------------------------
    def _publish(self) -> None:
        pending = self._drop_blocked(self._live(_Stage.NEED_PUBLISH))
        entries: list[PublishEntry] = []
        by_id: dict[str, _Record] = {}
        for rec in pending:
            if rec.notification is None or self.notifier is None:
                rec.stage = _Stage.NEED_STATUS
                continue
            entry_id = f"r{rec.index}"
            by_id[entry_id] = rec
            entries.append(
                PublishEntry(
                    entry_id=entry_id,
                    notification=rec.notification,
                    event_id=rec.event_id or rec.message_id,
                    group_id=rec.group_id,
                )
            )
        for chunk in chunk_entries(entries, one_per_group=self.fifo):
            # FIFO: a chunk may follow one where an earlier record of the group failed.
            recs = self._drop_blocked([by_id[e.entry_id] for e in chunk])
            live = {r.index for r in recs}
            self._publish_chunk([e for e in chunk if int(e.entry_id[1:]) in live], by_id)
            self._quarantine_now()

    def _publish_chunk(self, chunk: list[PublishEntry], by_id: dict[str, _Record]) -> None:
        recs = [by_id[e.entry_id] for e in chunk]
        if not recs or not self._time_ok(recs):
            return
        try:
            assert self.notifier is not None
            results = self.notifier.publish_batch(chunk)
        except (ClientError, BotoCoreError) as exc:
            failure_class = classify_exception(exc)
            if failure_class is FailureClass.PERMANENT and len(chunk) > 1:
                for entry in chunk:  # not attributable to one entry: one call each
                    if not self._blocked(by_id[entry.entry_id]):
                        self._publish_chunk([entry], by_id)
                    else:
                        by_id[entry.entry_id].fail(
                            FailureClass.TRANSIENT, "an earlier message of its group failed"
                        )
                return
            for rec in recs:
                if failure_class is FailureClass.PERMANENT:
                    self._owe(rec, _short(exc))
                else:
                    rec.fail(failure_class, f"publish failed: {_short(exc)}")
            return
        for entry in chunk:
            rec = by_id[entry.entry_id]
            result = results.get(entry.entry_id)
            if result is None or (result.error and not result.sender_fault):
                error = result.error if result else "no answer for this entry"
                # The claim stays pending; the redelivery publishes (duplicate path).
                rec.fail(FailureClass.TRANSIENT, f"publish failed: {error}")
            elif result.error:
                self._owe(rec, result.error)
            else:
                rec.notification_id = result.message_id
                rec.stage = _Stage.NEED_STATUS

    def _owe(self, rec: _Record, error: str) -> None:
        """SNS refused the notification in a way redelivery cannot cure. The business write IS
        committed, so this is not a property of the message: quarantine it as an owed
        notification (the claim stays ``pending``; a redrive or ``python -m ops owed
        republish`` publishes it once the cause is fixed)."""
        rec.poison(
            PoisonKind.NOTIFICATION_OWED,
            f"business write WAS applied; SNS refused the notification ({error}); "
            "claim left pending: the notification is owed",
        )
        if rec.key is None or rec.notification is None:
            return
        try:
            self.store.record_owed(rec.key, rec.notification, error, self.now)
        except (ClientError, BotoCoreError) as exc:
            # The DLQ copy still carries the body: a redrive publishes it.
            logger.warning(
                "could not store the owed notification on the claim",
                extra={"event_id": rec.event_id, "error": _short(exc)},
            )

    # --- stage 4: status -> sent -------------------------------------------------------------
    def _write_statuses(self) -> None:
        pending = self._live(_Stage.NEED_STATUS)
        for start in range(0, len(pending), TRANSACT_MAX_ITEMS):
            self._write_status_chunk(pending[start : start + TRANSACT_MAX_ITEMS])

    def _write_status_chunk(self, todo: list[_Record]) -> None:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if not todo or not self._time_ok(todo):
                return
            writes = [
                StatusWrite(key=r.key, notification_id=r.notification_id) for r in todo if r.key
            ]
            try:
                self.store.mark_sent(writes, self.now)
            except ClientError as exc:
                reasons = exc.response.get("CancellationReasons") or []
                if not is_transaction_cancelled(exc) or len(reasons) != len(todo):
                    for rec in todo:
                        rec.fail(classify_exception(exc), f"status write failed: {_short(exc)}")
                    return
                retry, conflict = [], False
                for rec, reason in zip(todo, reasons, strict=True):
                    code = str(reason.get("Code") or "None")
                    failure_class = classify_cancellation(code, is_claim=False)
                    if failure_class is None:
                        retry.append(rec)
                    elif failure_class is FailureClass.TRANSIENT and attempt < MAX_ATTEMPTS:
                        conflict = True
                        rec.attempts = max(rec.attempts, attempt + 1)
                        retry.append(rec)
                    else:
                        # Published but not marked: the redelivery republishes (at-least-once).
                        rec.fail(FailureClass.TRANSIENT, f"status write cancelled: {code}")
                if conflict:
                    self.consumer.sleep(transaction_backoff(attempt))
                todo = retry
                continue
            except BotoCoreError as exc:
                for rec in todo:
                    rec.fail(FailureClass.TRANSIENT, f"status write failed: {type(exc).__name__}")
                return
            for rec in todo:
                rec.finish(Outcome.REPUBLISHED if rec.duplicate else Outcome.PROCESSED)
            return
        for rec in todo:
            rec.fail(FailureClass.TRANSIENT, f"status write not done after {MAX_ATTEMPTS} attempts")

    # --- stage 5: batch bookkeeping and quarantine --------------------------------------------
    def _resolve_shadows(self) -> None:
        ok = {Outcome.PROCESSED, Outcome.REPUBLISHED, Outcome.DUPLICATE_SKIPPED}
        for rec in self.records:
            first = rec.shadow_of
            if first is None:
                continue
            rec.duplicate = True
            if first.outcome in ok:
                rec.finish(Outcome.DUPLICATE_SKIPPED)
            else:
                # Let SQS redeliver it; it will then meet the first one's claim (or make it).
                rec.fail(
                    FailureClass.TRANSIENT, "an earlier record of the same event did not finish"
                )

    def _propagate_fifo_failures(self) -> None:
        if not self.fifo:
            return
        failed_groups: set[str] = set()
        for rec in self.records:
            if rec.group_id is None:
                continue
            if rec.outcome is Outcome.QUARANTINED:
                continue  # already in the DLQ: failing it now would quarantine it twice
            if rec.group_id in failed_groups and not rec.failed:
                rec.fail(FailureClass.TRANSIENT, "an earlier message of its group failed")
            elif rec.failed:
                failed_groups.add(rec.group_id)

    def _quarantine_now(self) -> None:
        """FIFO: quarantine poison before anything later of its group is written or published,
        so a failed DLQ send holds the rest of the group back (standard queues batch it last)."""
        if self.fifo:
            self._quarantine()

    def _quarantine(self) -> None:
        poison = []
        for rec in self._drop_blocked([r for r in self.records if r.stage is _Stage.POISON]):
            if utf8_length(rec.body) is None:
                # SQS could never carry this body: keep it where it is (its redrive policy
                # moves it to the DLQ unchanged) instead of failing the whole DLQ call.
                _quarantine_failed(rec, "body is not valid Unicode and cannot be copied")
            else:
                poison.append(rec)
        source = self.consumer.event_id
        source_attribute = source.name if isinstance(source, EventIdFromAttribute) else None
        entries = [
            QuarantineEntry(
                entry_id=f"q{rec.index}",
                body=rec.body,
                failure_class=str(FailureClass.PERMANENT),
                kind=rec.kind or "unknown",
                reason=rec.reason or "unknown",
                message_id=rec.message_id,
                receive_count=rec.receive_count,
                event_id=rec.event_id,
                group_id=rec.group_id,
                original_attributes=rec.raw.get("messageAttributes") or {},
                event_id_attribute=source_attribute,
            )
            for rec in poison
        ]
        by_id = {f"q{rec.index}": rec for rec in poison}
        for chunk in chunk_quarantine(entries):
            recs = [by_id[e.entry_id] for e in chunk]
            if not self._time_ok(recs):
                continue
            try:
                results = self.quarantine.send_batch(chunk)
            except Exception as exc:  # any failure to quarantine means "keep it in SQS"
                for rec in recs:
                    _quarantine_failed(rec, _short(exc))
                continue
            for entry in chunk:
                error = results.get(entry.entry_id)
                rec = by_id[entry.entry_id]
                if error:
                    _quarantine_failed(rec, error)
                else:
                    rec.finish(Outcome.QUARANTINED)


def _quarantine_failed(rec: _Record, error: str) -> None:
    # Never dropped: report failed so SQS keeps it (and its own redrive policy applies).
    reason = f"{rec.kind}: {rec.reason}; quarantine send failed: {error}"
    rec.fail(FailureClass.PERMANENT, reason)


def _describe(item: Mapping[str, Any]) -> str:
    kind = next(iter(item), "?")
    table = item.get(kind, {}).get("TableName", "?") if isinstance(item.get(kind), Mapping) else "?"
    return f"({kind} on {table})"


def _short(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        message = str(exc.response.get("Error", {}).get("Message", ""))[:200]
        return f"{error_code(exc)}: {message}"
    return type(exc).__name__
