"""What every strategy's batch run shares: record state, decoding, FIFO holds, publishing,
quarantine and the batch response.

A strategy subclasses ``BatchRun`` and supplies the DynamoDB stages (``commit_all``,
``read_statuses``, ``write_statuses``); ``run`` drives the stages in order:

1. decode and validate every record (poison is set aside for quarantine, no AWS call);
2. the strategy's commit of claims + business writes (duplicates and semantic poison split out);
3. the strategy's status read for duplicates whose claim did not come back with the refusal;
4. ONE SNS PublishBatch per <= 10 notifications (fresh claims and ``pending`` duplicates);
5. the strategy's ``sent`` marking;
6. ONE SQS SendMessageBatch per <= 10 poison messages to the DLQ.

Nothing escapes as an exception (except a process death): the result is a partial batch
response. FIFO: from the first failing record of a group on, the group's records are reported
failed and are not written, so order within a group is never broken.
"""

from __future__ import annotations

import enum
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.contract import ConsumerContract, PluginError, Runtime
from idempotent_messaging.runtime.env import is_fifo
from idempotent_messaging.runtime.errors import (
    FailureClass,
    PoisonKind,
    PoisonMessage,
    classify_exception,
    error_code,
)
from idempotent_messaging.runtime.item_store import ItemClaimStore
from idempotent_messaging.runtime.keys import EventIdFromAttribute, StateKey, utf8_length
from idempotent_messaging.runtime.notify import Notification, Notifier, PublishEntry, chunk_entries
from idempotent_messaging.runtime.observability import Outcome, logger, record_outcomes
from idempotent_messaging.runtime.quarantine import Quarantine, QuarantineEntry, chunk_quarantine
from idempotent_messaging.runtime.store import (
    CLAIMED_BY_OTHER_EVENT,
    ClaimStore,
    StateStore,
    TransactItem,
)


class Stage(enum.Enum):
    PARSED = "parsed"
    POISON = "poison"
    NEED_READ = "need_read"
    NEED_PUBLISH = "need_publish"
    NEED_STATUS = "need_status"
    DONE = "done"


@dataclass(eq=False)
class RecordState:
    index: int
    raw: Mapping[str, Any]
    message_id: str
    body: str
    receive_count: int
    group_id: str | None
    stage: Stage = Stage.PARSED
    event_id: str | None = None
    key: StateKey | None = None
    claim: TransactItem | None = None
    items: list[TransactItem] = field(default_factory=list)
    notification: Notification | None = None
    duplicate: bool = False
    key_existed: bool = False
    """Its claim's INSERT was refused with DuplicateItem: the item existed at that moment."""
    shadow_of: RecordState | None = None
    outcome: Outcome | None = None
    failure_class: FailureClass | None = None
    kind: str | None = None
    reason: str | None = None
    attempts: int = 1
    notification_id: str | None = None

    def poison(self, kind: PoisonKind | str, reason: str) -> None:
        self.stage = Stage.POISON
        self.outcome = None
        self.failure_class = FailureClass.PERMANENT
        self.kind = str(kind)
        self.reason = reason

    def fail(self, failure_class: FailureClass, reason: str) -> None:
        self.stage = Stage.DONE
        self.outcome = Outcome.FAILED
        self.failure_class = failure_class
        self.reason = reason

    def finish(self, outcome: Outcome) -> None:
        self.stage = Stage.DONE
        self.outcome = outcome

    @property
    def failed(self) -> bool:
        return self.outcome is Outcome.FAILED


class BatchRun:
    """State of one batch through the stages; every AWS call goes through a guard."""

    def __init__(
        self, contract: ConsumerContract, runtime: Runtime, context: Any, event: Mapping[str, Any]
    ) -> None:
        self.contract = contract
        self.settings = runtime.settings
        self.context = context
        # The one place that decides where claims live (the consumer declares it).
        self.store: ClaimStore = (
            ItemClaimStore(runtime.dynamodb, runtime.settings, contract.effect)
            if contract.effect is not None
            else StateStore(runtime.dynamodb, runtime.settings)
        )
        self.notifier = (
            Notifier(runtime.sns, runtime.settings.topic_arn)
            if runtime.settings.topic_arn
            else None
        )
        self.quarantine = Quarantine(runtime.sqs, runtime.settings.dlq_url)
        self.now = int(contract.clock())
        raws = list(event.get("Records") or [])
        self.fifo = self.settings.source_fifo or any(
            is_fifo(str(r.get("eventSourceARN", ""))) for r in raws
        )
        self.records = [self._wrap(i, raw) for i, raw in enumerate(raws)]

    @staticmethod
    def _wrap(index: int, raw: Mapping[str, Any]) -> RecordState:
        attributes = raw.get("attributes") or {}
        try:
            receive_count = int(attributes.get("ApproximateReceiveCount", 1))
        except (TypeError, ValueError):
            receive_count = 1
        body = raw.get("body")
        return RecordState(
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
            self._quarantine_exhausted()
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
                if rec.stage is not Stage.DONE:
                    rec.fail(FailureClass.TRANSIENT, f"unexpected {type(exc).__name__}")
        outcomes = []
        for rec in self.records:
            if rec.stage is not Stage.DONE:  # defensive: every record ends somewhere
                rec.fail(FailureClass.TRANSIENT, "record did not finish")
            fields = {
                "message_id": rec.message_id,
                "event_id": rec.event_id,
                "group_id": rec.group_id,
                "receive_count": rec.receive_count,
                "failure_class": str(rec.failure_class) if rec.failure_class else None,
                "failure_kind": rec.kind,
                "reason": rec.reason,
                "attempts": rec.attempts,
            }
            outcomes.append((rec.outcome or Outcome.FAILED, fields))
        record_outcomes(outcomes)

    def response(self) -> dict[str, Any]:
        return {
            "batchItemFailures": [
                {"itemIdentifier": rec.message_id} for rec in self.records if rec.failed
            ]
        }

    # --- the strategy's DynamoDB stages ---------------------------------------------------------
    def _commit_all(self) -> None:
        """Claims + business writes of every PARSED record (duplicates, poison split out)."""
        raise NotImplementedError

    def _read_statuses(self) -> None:
        """Statuses of NEED_READ duplicates (then ``_apply_status``)."""
        raise NotImplementedError

    def _write_statuses(self) -> None:
        """Mark NEED_STATUS records ``sent`` and finish them."""
        raise NotImplementedError

    # --- guards ------------------------------------------------------------------------------
    def _time_ok(self, recs: Sequence[RecordState]) -> bool:
        """False (and ``recs`` failed) when too little Lambda time remains for another call."""
        remaining = getattr(self.context, "get_remaining_time_in_millis", None)
        if remaining is None or remaining() >= self.settings.remaining_time_guard_ms:
            return True
        for rec in recs:
            rec.fail(FailureClass.TRANSIENT, "remaining Lambda time too short; left for redelivery")
        return False

    def _blocked(self, rec: RecordState) -> bool:
        """FIFO: an earlier record of the same group has failed, so this one must wait."""
        if not self.fifo or rec.group_id is None:
            return False
        return any(
            other.failed and other.group_id == rec.group_id for other in self.records[: rec.index]
        )

    def _drop_blocked(self, recs: Sequence[RecordState]) -> list[RecordState]:
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
                decoded = self.contract.decode(rec.raw, self.settings, self.now)
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
            rec.notification = decoded.notification
            rec.key, rec.claim, rec.items = self.store.claim(
                key=decoded.key,
                event_id=decoded.event_id,
                message_id=rec.message_id,
                items=decoded.items,
                status=env.STATUS_PENDING if decoded.notification else env.STATUS_SENT,
                now=self.now,
            )

    def _mark_in_batch_duplicates(self) -> None:
        """Two records of one event in a batch: only the first goes to DynamoDB (a transaction
        may not touch one item twice); the later one follows the first's outcome."""
        first: dict[str, RecordState] = {}
        for rec in self.records:
            if rec.stage is not Stage.PARSED or rec.key is None:
                continue
            if rec.key.label in first:
                rec.shadow_of = first[rec.key.label]  # parked until _resolve_shadows
            else:
                first[rec.key.label] = rec

    def _live(self, stage: Stage) -> list[RecordState]:
        return [r for r in self.records if r.stage is stage and r.shadow_of is None]

    # --- stage 2: claims + business writes ---------------------------------------------------
    def _duplicate(self, rec: RecordState, existing: Mapping[str, Any] | None) -> None:
        rec.duplicate = True
        status = self.store.verdict(existing, rec.event_id)
        if status is None:
            rec.stage = Stage.NEED_READ
        else:
            self._apply_status(rec, status)

    def _apply_status(self, rec: RecordState, status: str | None) -> None:
        if status == CLAIMED_BY_OTHER_EVENT:
            rec.poison(
                PoisonKind.SEMANTIC,
                "the business item already holds another event's effect (ConditionalCheckFailed);"
                " nothing was written",
            )
        elif status == env.STATUS_SENT:
            rec.finish(Outcome.DUPLICATE_SKIPPED)
        elif status == env.STATUS_PENDING:
            # The earlier delivery died between commit and publish: publish, then mark sent.
            rec.stage = Stage.NEED_PUBLISH
        else:
            rec.fail(FailureClass.TRANSIENT, f"claim has unexpected status {status!r}")

    def _publish(self) -> None:
        pending = self._drop_blocked(self._live(Stage.NEED_PUBLISH))
        entries: list[PublishEntry] = []
        by_id: dict[str, RecordState] = {}
        for rec in pending:
            if rec.notification is None or self.notifier is None:
                rec.stage = Stage.NEED_STATUS
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

    def _publish_chunk(self, chunk: list[PublishEntry], by_id: dict[str, RecordState]) -> None:
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
                    self._owe(rec, short_error(exc))
                else:
                    rec.fail(failure_class, f"publish failed: {short_error(exc)}")
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
                rec.stage = Stage.NEED_STATUS

    def _owe(self, rec: RecordState, error: str) -> None:
        """SNS refused the notification in a way redelivery cannot cure. The business write IS
        committed, so this is not a property of the message: quarantine it as an owed
        notification (the claim stays ``pending``; a redrive or
        ``python -m idempotent_messaging.ops owed --republish`` publishes it once the cause is
        fixed)."""
        rec.poison(
            PoisonKind.NOTIFICATION_OWED,
            f"business write WAS applied; SNS refused the notification ({error}); "
            "claim left pending: the notification is owed",
        )
        if rec.key is None or rec.notification is None:
            return
        try:
            self.store.record_owed(rec.key, rec.notification, error, self.now, rec.event_id or "")
        except (ClientError, BotoCoreError) as exc:
            # The DLQ copy still carries the body: a redrive publishes it.
            logger.warning(
                "could not store the owed notification on the claim",
                extra={"event_id": rec.event_id, "error": short_error(exc)},
            )

    # --- stage 4: status -> sent -------------------------------------------------------------
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

    def _quarantine_exhausted(self) -> None:
        """A record failing on its last receive would be dead-lettered by SQS with no reason:
        quarantine it now, with the failure that exhausted it (a failed send leaves it to SQS)."""
        limit = self.settings.max_receive_count
        if limit is None:
            return
        exhausted = [r for r in self.records if r.failed and r.receive_count >= limit]
        for rec in exhausted:
            rec.poison(
                PoisonKind.RETRIES_EXHAUSTED,
                f"failed on receive {rec.receive_count} of {limit} "
                f"({rec.failure_class}: {rec.reason})",
            )
        if exhausted:
            self._quarantine()

    def _quarantine(self) -> None:
        poison = []
        for rec in self._drop_blocked([r for r in self.records if r.stage is Stage.POISON]):
            if utf8_length(rec.body) is None:
                # SQS could never carry this body: keep it where it is (its redrive policy
                # moves it to the DLQ unchanged) instead of failing the whole DLQ call.
                quarantine_failed(rec, "body is not valid Unicode and cannot be copied")
            else:
                poison.append(rec)
        source = self.contract.event_id
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
                    quarantine_failed(rec, short_error(exc))
                continue
            for entry in chunk:
                error = results.get(entry.entry_id)
                rec = by_id[entry.entry_id]
                if error:
                    quarantine_failed(rec, error)
                else:
                    rec.finish(Outcome.QUARANTINED)


def quarantine_failed(rec: RecordState, error: str) -> None:
    # Never dropped: report failed so SQS keeps it (and its own redrive policy applies).
    reason = f"{rec.kind}: {rec.reason}; quarantine send failed: {error}"
    rec.fail(FailureClass.PERMANENT, reason)


def describe_item(item: Mapping[str, Any]) -> str:
    kind = next(iter(item), "?")
    table = item.get(kind, {}).get("TableName", "?") if isinstance(item.get(kind), Mapping) else "?"
    return f"({kind} on {table})"


def short_error(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        message = str(exc.response.get("Error", {}).get("Message", ""))[:200]
        return f"{error_code(exc)}: {message}"
    return type(exc).__name__
