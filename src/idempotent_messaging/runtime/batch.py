"""One SQS batch through its stages, every AWS call behind a guard.

``run`` drives the stages in order:

1. decode and validate every record (``decode``: poison is set aside, no AWS call) and build
   its claim where the consumer's placement keeps it (``claims``);
2. commit the claims + business writes: single-item creates on a standard queue as PartiQL
   INSERTs in ONE BatchExecuteStatement per <= 25 records (``Claim.insert``), everything else
   in ONE TransactWriteItems per <= 100 items (a cancellation is split by its reasons:
   duplicates, semantic poison, conflicts retried 50 ms x 2^n +-50 %, 3 attempts);
3. read the statuses of duplicates whose refusal did not carry the existing claim (one
   consistent BatchGetItem);
4. ONE SNS PublishBatch per <= 10 notifications (fresh claims and ``pending`` duplicates);
5. mark them ``sent``: ONE PartiQL BatchExecuteStatement per <= 25 records (not a
   transaction: 1 write unit each, see ``claims.StateTableClaims.mark_sent``);
6. ONE SQS SendMessageBatch per <= 10 poison messages to the DLQ (only when there is poison).

Nothing escapes as an exception (except a process death): the result is a partial batch
response. FIFO: a record after a failed record of its message group is held (``_hold_back``,
the one place of that rule): reported failed, neither written nor published. FIFO also keeps
the transaction for single-item claims: statements succeed or fail one by one, so a later
record of a group could be written while an earlier one waits for a retry.
"""

from __future__ import annotations

import enum
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.claims import (
    BATCH_GET_MAX_KEYS,
    CLAIMED_BY_OTHER_EVENT,
    PARTIQL_BATCH_MAX_STATEMENTS,
    TRANSACT_MAX_ITEMS,
    Claim,
    ClaimPlacement,
    ClaimThenRow,
    Conflict,
    StateKey,
    StatusWrite,
    TransactItem,
    conflicts,
    describe_item,
    insert_chunks,
    receipt_size,
    row_key_text,
)
from idempotent_messaging.runtime.clients import MAX_ATTEMPTS, transaction_backoff
from idempotent_messaging.runtime.errors import (
    FailureClass,
    PluginError,
    PoisonKind,
    PoisonMessage,
    classify_exception,
    classify_statement,
    is_transaction_cancelled,
    retried_now,
    short_error,
    split_cancellation,
)
from idempotent_messaging.runtime.notify import Notification, Notifier, PublishEntry, chunk_entries
from idempotent_messaging.runtime.observability import (
    Outcome,
    logger,
    record_outcome,
    record_outcomes,
)
from idempotent_messaging.runtime.quarantine import (
    Quarantine,
    QuarantineEntry,
    can_carry,
    chunk_quarantine,
)
from idempotent_messaging.runtime.settings import Runtime, is_fifo

_Read = TypeVar("_Read")  # what one round of a batch read answers (BatchRun._read_rounds)


@dataclass(frozen=True)
class DecodedMessage:
    """What decoding a record yields (``consumer.Consumer.decode``)."""

    event_id: str
    key: StateKey
    items: list[TransactItem]
    notification: Notification | None
    event_time_ms: int | None = None
    """The producer's own time of the event, when the consumer's contract carries one."""


STATUS_READ_ATTEMPTS = 5
"""BatchGetItem rounds for the keys DynamoDB leaves unprocessed (it may, for any reason, e.g.
throttling; the API reference asks for a retry with exponential backoff): 50 ms x 2^n,
+-50 % jitter between rounds, each behind the remaining-time guard."""
DEDUP_HORIZON_MARGIN_SECONDS = 3600
"""A copy is refused once ``first seen + claim TTL <= now + this``: more than one invocation
(at most 15 minutes) plus clock skew between SQS's timestamps and the function's clock."""


class Stage(enum.Enum):
    PARSED = "parsed"
    POISON = "poison"
    NEED_READ = "need_read"
    NEED_RECEIPT = "need_receipt"
    NEED_ROW = "need_row"
    NEED_ROW_READ = "need_row_read"
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
    claim: Claim | None = None
    notification: Notification | None = None
    duplicate: bool = False
    key_existed: bool = False
    """Its claim's INSERT was refused with DuplicateItem: the item existed at that moment."""
    shadow_of: RecordState | None = None
    shadow_differs: bool = False
    """Its shadow's content differs from the first's: judged once the first's verdict is known."""
    outcome: Outcome | None = None
    failure_class: FailureClass | None = None
    kind: str | None = None
    reason: str | None = None
    attempts: int = 1
    notification_id: str | None = None
    receipt: str | None = None
    """The receipt of THIS batch its fresh claim names (claims.Receipts): written after the
    publish, listing ``receipt_entry`` if its notification went out."""
    receipt_entry: str = ""
    found_receipt: str | None = None
    """A duplicate's: the receipt its existing ``pending`` claim names (read before publish)."""
    first_seen_ms: int | None = None
    """The earliest time known of this event (epoch ms): the carried first-seen attribute,
    SQS's SentTimestamp of this copy, the producer's event time."""
    first_seen_from: str = ""
    release_claim: bool = False
    """``ClaimThenRow``: its row could not be written (another event's row, or refused), so
    its claim is released (``BatchRun._release_claims``)."""
    beyond_horizon: str | None = None
    """Why this copy is older than its claim is known to live (``BatchRun._beyond_horizon``):
    its claim is read, never written; present, the copy is a duplicate; absent, it is refused
    with this reason."""

    def saw(self, epoch_ms: int | None, source: str) -> None:
        if (
            epoch_ms is not None
            and epoch_ms > 0
            and (self.first_seen_ms is None or epoch_ms < self.first_seen_ms)
        ):
            self.first_seen_ms, self.first_seen_from = epoch_ms, source

    @property
    def key(self) -> StateKey | None:
        return self.claim.key if self.claim else None

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
    """State of one batch through the stages.

    It never sees the consumer: only its ``decode``, the claim placement it declared
    (``claims.placement``), the attribute its event id comes from (kept on DLQ copies), the
    batch's ``now`` and ``sleep`` (the conflict backoff).
    """

    def __init__(
        self,
        runtime: Runtime,
        context: Any,
        event: Mapping[str, Any],
        *,
        decode: Callable[[Mapping[str, Any], int], DecodedMessage],
        claims: ClaimPlacement,
        event_id_attribute: str | None,
        now: int,
        sleep: Callable[[float], None],
    ) -> None:
        self.settings = runtime.settings
        self.context = context
        self.decode = decode
        self.claims = claims
        self.event_id_attribute = event_id_attribute
        self.now = now
        self.sleep = sleep
        self.sqs = runtime.sqs
        self.notifier = (
            Notifier(runtime.sns, runtime.settings.topic_arn)
            if runtime.settings.topic_arn
            else None
        )
        raws = list(event.get("Records") or [])
        self.fifo = self.settings.source_fifo or any(
            is_fifo(str(r.get("eventSourceARN", ""))) for r in raws
        )
        self.records = [self._wrap(i, raw) for i, raw in enumerate(raws)]
        self._receipt_id: str | None = None
        self._receipt_bytes = 0

    @staticmethod
    def _wrap(index: int, raw: Mapping[str, Any]) -> RecordState:
        attributes = raw.get("attributes") or {}
        try:
            receive_count = int(attributes.get("ApproximateReceiveCount", 1))
        except (TypeError, ValueError):
            receive_count = 1
        body = raw.get("body")
        rec = RecordState(
            index=index,
            raw=raw,
            message_id=str(raw.get("messageId", f"record-{index}")),
            body=body if isinstance(body, str) else "",
            receive_count=receive_count,
            group_id=attributes.get("MessageGroupId"),
        )
        # SQS's SentTimestamp of THIS copy (a quarantine or a redrive makes a new message)...
        rec.saw(_epoch_ms(attributes.get("SentTimestamp")), "SentTimestamp")
        # ...and the first-seen time earlier copies carried forward.
        carried = (raw.get("messageAttributes") or {}).get(env.FIRST_SEEN_ATTRIBUTE)
        if isinstance(carried, Mapping):
            rec.saw(_epoch_ms(carried.get("stringValue")), env.FIRST_SEEN_ATTRIBUTE)
        return rec

    # --- driver ------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._decode_all()
            self._quarantine_now()
            self._mark_in_batch_duplicates()
            self._commit_all()
            self._read_statuses()
            self._read_receipts()
            self._write_rows()
            self._read_rows()
            self._release_claims()
            self._publish()
            self._write_statuses()
            self._resolve_shadows()
            self._hold_back(self.records)
            self._quarantine()
            self._hold_back(self.records)
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

    # --- guards ------------------------------------------------------------------------------
    def _time_ok(self, recs: Sequence[RecordState]) -> bool:
        """False (and ``recs`` failed) when too little Lambda time remains for another call."""
        remaining = getattr(self.context, "get_remaining_time_in_millis", None)
        if remaining is None or remaining() >= self.settings.remaining_time_guard_ms:
            return True
        for rec in recs:
            rec.fail(FailureClass.TRANSIENT, "remaining Lambda time too short; left for redelivery")
        return False

    def _hold_back(self, recs: Sequence[RecordState]) -> list[RecordState]:
        """THE FIFO group rule: a failed record holds every later record of its message group
        in the batch. Each of ``recs`` after a failed record of its group is failed too (left
        for redelivery, in order), unless it is done without failing or already in the DLQ;
        returns those that may go on. Standard queues: every record is independent."""
        if not self.fifo:
            return list(recs)
        first_failure: dict[str, int] = {}  # group -> index of its first failed record
        for rec in self.records:
            if rec.failed and rec.group_id is not None:
                first_failure.setdefault(rec.group_id, rec.index)
        kept = []
        for rec in recs:
            if rec.failed or rec.outcome is Outcome.QUARANTINED:
                continue  # decided (failing a quarantined one would quarantine it twice)
            if rec.group_id is not None and first_failure.get(rec.group_id, rec.index) < rec.index:
                rec.fail(FailureClass.TRANSIENT, "an earlier message of its group failed")
            else:
                kept.append(rec)
        return kept

    # --- stage 1: decode ---------------------------------------------------------------------
    def _decode_all(self) -> None:
        for rec in self.records:
            try:
                decoded = self.decode(rec.raw, self.now)
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
            rec.saw(decoded.event_time_ms, "the event time")
            beyond = self._beyond_horizon(rec)
            entry = self.claims.receipt_entry(decoded.key, rec.event_id)
            if decoded.notification and not beyond:
                self._assign_receipt(rec, entry)
            rec.receipt_entry = entry  # how a receipt lists it, also when only read (beyond)
            rec.claim = self.claims.claim(
                key=decoded.key,
                event_id=decoded.event_id,
                message_id=rec.message_id,
                items=decoded.items,
                status=env.STATUS_PENDING if decoded.notification else env.STATUS_SENT,
                now=self.now,
                receipt=rec.receipt,
            )
            if beyond:  # its claim is read (_read_statuses), never written
                rec.stage = Stage.NEED_READ
                rec.duplicate = True

    def _assign_receipt(self, rec: RecordState, entry: str) -> None:
        """The receipt id its claim will name, chosen before the commit: one per batch, a new
        one each ``env.RECEIPT_MAX_BYTES`` of entries (the item limit; 1 write unit per KB
        either way)."""
        size = receipt_size(entry)
        if self._receipt_id is None or self._receipt_bytes + size > env.RECEIPT_MAX_BYTES:
            self._receipt_id, self._receipt_bytes = self.claims.receipts.new_id(), 0
        self._receipt_bytes += size
        rec.receipt, rec.receipt_entry = self._receipt_id, entry

    def _beyond_horizon(self, rec: RecordState) -> bool:
        """A copy first seen longer ago than its claim is known to live may meet no claim
        although its effect was applied (the claim expired): it is never written. Its claim is
        READ instead (``_status_read``): present (an expired claim is readable until DynamoDB
        deletes it), the copy is a duplicate like any other, and a pending claim's owed
        notification is published; absent, the copy is refused as ``beyond_dedup_horizon``."""
        horizon = self.claims.dedup_horizon_seconds
        if horizon is None or rec.first_seen_ms is None:
            return False
        first_seen = rec.first_seen_ms // 1000
        if first_seen + horizon > self.now + DEDUP_HORIZON_MARGIN_SECONDS:
            return False
        rec.beyond_horizon = (
            f"first seen {self.now - first_seen} s ago (from {rec.first_seen_from}); its claim "
            f"is kept {horizon} s ({env.CLAIM_TTL_SECONDS}) and is gone, so applying it could "
            "apply its effect a second time; nothing was written. Whether its effect was "
            "applied and a notification is owed is no longer recorded"
        )
        return True

    def _mark_in_batch_duplicates(self) -> None:
        """Two records of one event in a batch: only the first goes to DynamoDB (a transaction
        may not touch one item twice); the later one follows the first's outcome."""
        first: dict[str, RecordState] = {}
        for rec in self.records:
            if rec.stage is not Stage.PARSED or rec.key is None:
                continue
            if rec.key.label in first:
                earlier = first[rec.key.label]
                rec.shadow_of = earlier  # parked until _resolve_shadows
                # Another body: a conflict only if the first copy's claim is made HERE; the
                # claim may already hold this copy's content (the first copy is then the
                # conflict), so it is not judged before the first's verdict.
                rec.shadow_differs = conflicts(
                    earlier.key.fingerprint if earlier.key else None, rec.key.fingerprint
                )
            else:
                first[rec.key.label] = rec

    def _live(self, stage: Stage) -> list[RecordState]:
        return [r for r in self.records if r.stage is stage and r.shadow_of is None]

    # --- stage 2: claims + business writes ---------------------------------------------------
    def _commit_all(self) -> None:
        inserts: list[tuple[RecordState, Claim]] = []
        transact: list[RecordState] = []
        for rec in self._live(Stage.PARSED):
            assert rec.claim is not None
            if rec.claim.insert is not None and not self.fifo:
                inserts.append((rec, rec.claim))
            else:
                transact.append(rec)
        for statements in insert_chunks(inserts):
            self._insert([rec for rec, _ in statements])
        chunk: list[RecordState] = []
        size = 0
        for rec in transact:
            assert rec.claim is not None
            n = 1 + len(rec.claim.items)
            if chunk and size + n > TRANSACT_MAX_ITEMS:
                self._commit(chunk)
                chunk, size = [], 0
            chunk.append(rec)
            size += n
        if chunk:
            self._commit(chunk)

    def _insert(self, todo: list[RecordState]) -> None:
        """ONE BatchExecuteStatement of claim INSERTs (``_statements``)."""

        def refused_call(todo: list[RecordState], exc: Exception) -> None:
            # The whole call was refused, not one statement: one transaction per record
            # attributes the refusal to the record that caused it.
            for rec in todo:
                self._commit([rec])

        def written(rec: RecordState) -> None:
            assert rec.claim is not None
            self._committed(rec, row_pending=rec.claim.row is not None)

        def exists(rec: RecordState, answer: Any) -> None:
            rec.key_existed = True
            self._duplicate(rec, answer.item)

        def refused(rec: RecordState, why: str) -> None:
            assert rec.claim is not None
            rec.poison(
                PoisonKind.SCHEMA,
                f"business write {describe_item(rec.claim.put)} was refused: {why}; nothing "
                "was written",
            )

        self._statements(
            todo, _insert_of, self.claims.insert, "claim", refused_call, written, exists, refused
        )

    def _statements(
        self,
        todo: list[RecordState],
        statement_of: Callable[[RecordState], Any],
        send: Callable[[list[Any]], Sequence[Any]],
        what: str,
        refused_call: Callable[[list[RecordState], Exception], None],
        written: Callable[[RecordState], None],
        exists: Callable[[RecordState, Any], None],
        refused: Callable[[RecordState, str], None],
    ) -> None:
        """ONE BatchExecuteStatement of INSERTs, one per record; each statement's answer is
        classed as the same code at call level would be: written, its key exists (DUPLICATE),
        refused (PERMANENT), or retried alone while botocore would retry the code (throttling)
        with the transaction backoff, else failed for redelivery. A PERMANENT refusal of the
        whole call goes to ``refused_call``; any other call error fails every record."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if not todo or not self._time_ok(todo):
                return
            try:
                answers = send([statement_of(rec) for rec in todo])
            except (ClientError, BotoCoreError) as exc:
                failure_class = classify_exception(exc)
                if failure_class is FailureClass.PERMANENT:
                    refused_call(todo, exc)
                    return
                for rec in todo:
                    rec.fail(failure_class, f"{what} write failed: {short_error(exc)}")
                return
            retry = []
            for rec, answer in zip(todo, answers, strict=True):
                verdict = classify_statement(answer.code) if answer.code else None
                if answer.code is None:
                    written(rec)
                elif verdict is FailureClass.DUPLICATE:
                    exists(rec, answer)
                elif verdict is FailureClass.PERMANENT:
                    refused(rec, f"{answer.code}: {answer.message}")
                elif retried_now("dynamodb", answer.code) and attempt < MAX_ATTEMPTS:
                    rec.attempts = max(rec.attempts, attempt + 1)
                    retry.append(rec)
                else:
                    rec.fail(FailureClass.TRANSIENT, f"{what} write failed: {answer.code}")
            if retry:
                self.sleep(transaction_backoff(attempt))
            todo = retry

    def _committed(self, rec: RecordState, *, row_pending: bool = False) -> None:
        """The claim (and, unless ``row_pending``, the effect) committed."""
        if row_pending:  # ClaimThenRow: the claim is this copy's; its row comes next
            rec.stage = Stage.NEED_ROW
            return
        rec.stage = Stage.NEED_PUBLISH if rec.notification else Stage.DONE
        if rec.stage is Stage.DONE:
            rec.finish(Outcome.PROCESSED)

    def _to_publish(self, rec: RecordState) -> None:
        """A ``pending`` claim whose notification may be owed (unlisted by its receipt, or
        none): publish. A claim whose row is written after it (``ClaimThenRow`` on a standard
        queue: a death may have come between) first completes or verifies its row."""
        row = rec.claim is not None and rec.claim.row is not None and not self.fifo
        rec.stage = Stage.NEED_ROW if row else Stage.NEED_PUBLISH

    def _commit(self, todo: list[RecordState]) -> None:
        """ONE TransactWriteItems of the records' claims and writes, resubmitted smaller after
        a cancellation until every record is decided."""
        while todo:
            todo = self._hold_back(todo)
            if not todo or not self._time_ok(todo):
                return
            items: list[TransactItem] = []
            owners: list[tuple[RecordState, int]] = []  # (record, -1 for its claim or write index)
            for rec in todo:
                assert rec.claim is not None
                items.append(rec.claim.put)
                owners.append((rec, -1))
                for position, item in enumerate(rec.claim.items):
                    items.append(item)
                    owners.append((rec, position))
            try:
                self.claims.transact(items)
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
                        rec.poison(PoisonKind.SCHEMA, f"transaction rejected: {short_error(exc)}")
                    else:
                        rec.fail(failure_class, f"transaction failed: {short_error(exc)}")
                return
            except BotoCoreError as exc:
                for rec in todo:
                    rec.fail(FailureClass.TRANSIENT, f"transaction failed: {type(exc).__name__}")
                return
            for rec in todo:
                self._committed(rec)
            return

    def _split_cancelled(
        self, todo: list[RecordState], owners: list[tuple[RecordState, int]], exc: ClientError
    ) -> list[RecordState]:
        """Use CancellationReasons to split a cancelled transaction; returns what to resubmit."""
        verdicts = split_cancellation(
            exc.response.get("CancellationReasons") or [],
            [(rec.index, position) for rec, position in owners],
        )
        conflicted: set[int] = set()
        for rec in todo:
            verdict = verdicts[rec.index]
            if verdict.failure_class is FailureClass.DUPLICATE:
                self._duplicate(rec, verdict.item)
            elif verdict.failure_class is FailureClass.TRANSIENT:
                conflicted.add(rec.index)
            elif verdict.failure_class is FailureClass.PERMANENT and verdict.position == -1:
                # The claim itself was refused (e.g. ValidationError on the state item): not
                # a business outcome, and there may be no business item.
                rec.poison(
                    PoisonKind.SCHEMA,
                    f"claim write was cancelled: {verdict.code}; nothing was written",
                )
            elif verdict.failure_class is FailureClass.PERMANENT:
                assert rec.claim is not None
                kind = (
                    PoisonKind.SEMANTIC
                    if verdict.code == "ConditionalCheckFailed"
                    else PoisonKind.SCHEMA
                )
                item = describe_item(rec.claim.items[verdict.position])
                rec.poison(
                    kind,
                    f"business write {verdict.position} {item} was cancelled: {verdict.code};"
                    " claim not written",
                )
        retry: list[RecordState] = []
        worst = 0
        for rec in todo:
            if rec.stage is not Stage.PARSED:
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
            self.sleep(transaction_backoff(worst))
        return retry

    # --- stage 3: duplicates -----------------------------------------------------------------
    def _duplicate(self, rec: RecordState, existing: Mapping[str, Any] | None) -> None:
        rec.duplicate = True
        fingerprint = rec.key.fingerprint if rec.key else None
        status = self.claims.verdict(existing, rec.event_id, fingerprint)
        if status is None:
            rec.stage = Stage.NEED_READ
        else:
            rec.found_receipt = self.claims.receipt_of(existing)
            self._apply_status(rec, status)

    def _apply_status(self, rec: RecordState, status: str | None) -> None:
        if isinstance(status, Conflict):
            self._conflict(rec, status.first_message_id)
        elif status == CLAIMED_BY_OTHER_EVENT:
            rec.poison(
                PoisonKind.SEMANTIC,
                "the business item already holds another event's effect (ConditionalCheckFailed);"
                " nothing was written",
            )
        elif status == env.STATUS_SENT:
            rec.finish(Outcome.DUPLICATE_SKIPPED)
        elif status == env.STATUS_PENDING and rec.found_receipt:
            # Published if its receipt lists it (_read_receipts).
            rec.stage = Stage.NEED_RECEIPT
        elif status == env.STATUS_PENDING:
            # The earlier delivery died between commit and publish: publish, then mark sent.
            self._to_publish(rec)
        else:
            rec.fail(FailureClass.TRANSIENT, f"claim has unexpected status {status!r}")

    def _conflict(self, rec: RecordState, first_message_id: str, where: str = "") -> None:
        """Same event id, other content: never a silent duplicate. The first effect stands;
        this copy goes to the DLQ naming the event and both message ids, never a value."""
        rec.poison(
            PoisonKind.CONFLICTING_DUPLICATE,
            f"conflict: event id {rec.event_id} first applied by message {first_message_id}"
            f"{where}; this copy {rec.message_id} differs; the first effect stands",
        )

    def _read_statuses(self) -> None:
        """Statuses of the duplicates whose refusal did not carry the existing claim."""
        pending = self._hold_back(self._live(Stage.NEED_READ))
        for start in range(0, len(pending), BATCH_GET_MAX_KEYS):
            self._read_status_chunk(pending[start : start + BATCH_GET_MAX_KEYS])

    def _read_status_chunk(self, todo: list[RecordState]) -> None:
        """One consistent BatchGetItem of the claims, in rounds (``_read_rounds``)."""

        def settle(rec: RecordState, answer: tuple[Any, ...]) -> bool:
            statuses, unprocessed, receipts = answer
            assert rec.key is not None
            if rec.key.label in unprocessed:
                return True
            rec.found_receipt = receipts.get(rec.key.label)
            self._status_read(rec, statuses)
            return False

        self._read_rounds(
            todo,
            "status",
            lambda recs: self.claims.read_statuses(
                [r.key for r in recs if r.key], [r.event_id or "" for r in recs if r.key]
            ),
            settle,
        )

    def _read_rounds(
        self,
        todo: list[RecordState],
        what: str,
        read: Callable[[list[RecordState]], _Read],
        settle: Callable[[RecordState, _Read], bool],
    ) -> None:
        """A consistent batch read, then again for the keys DynamoDB left unprocessed (backoff
        with jitter, ``STATUS_READ_ATTEMPTS`` rounds, each behind the time guard): an
        unprocessed key says nothing, so it is never a verdict. ``settle(rec, answer)`` applies
        the answer to one record, True when its key was left unprocessed."""
        for attempt in range(1, STATUS_READ_ATTEMPTS + 1):
            if not todo or not self._time_ok(todo):
                return
            try:
                answer = read(todo)
            except (ClientError, BotoCoreError) as exc:
                for rec in todo:
                    rec.fail(classify_exception(exc), f"{what} read failed: {short_error(exc)}")
                return
            retry = [rec for rec in todo if settle(rec, answer)]
            if retry and attempt == STATUS_READ_ATTEMPTS:
                for rec in retry:
                    rec.fail(
                        FailureClass.TRANSIENT,
                        f"{what} read left unprocessed by DynamoDB {attempt} times",
                    )
                return
            if retry:
                self.sleep(transaction_backoff(attempt))
            todo = retry

    def _status_read(self, rec: RecordState, statuses: Mapping[str, str | None]) -> None:
        """What a processed key of the status read says of ``rec``."""
        assert rec.key is not None
        if statuses.get(rec.key.label) is None and rec.beyond_horizon:
            rec.poison(PoisonKind.BEYOND_DEDUP_HORIZON, rec.beyond_horizon)
        elif statuses.get(rec.key.label) is None and rec.key_existed:
            # Its INSERT was refused because the item existed; now it is gone.
            rec.fail(FailureClass.TRANSIENT, "item vanished after its key was refused")
        elif statuses.get(rec.key.label) is None and self.claims.absent_claim_is_semantic:
            rec.poison(
                PoisonKind.SEMANTIC,
                "business write was cancelled: ConditionalCheckFailed; nothing was written",
            )
        elif statuses.get(rec.key.label) is None:
            rec.fail(FailureClass.TRANSIENT, "claim vanished after its condition failed")
        else:
            self._apply_status(rec, statuses[rec.key.label])

    def _read_receipts(self) -> None:
        """``pending`` duplicates whose claim names a receipt: ONE consistent BatchGetItem of
        the receipts (<= 100 ids a call; unprocessed ids again, as the status read). Listed ->
        published (skip); not listed or absent (a death after the publish, a refused receipt
        write, a failed PublishBatch entry) -> publish again, then mark the claim ``sent``."""
        todo = self._hold_back(self._live(Stage.NEED_RECEIPT))
        while todo:
            ids = list(dict.fromkeys(r.found_receipt for r in todo if r.found_receipt))[
                :BATCH_GET_MAX_KEYS
            ]
            chunk = [r for r in todo if r.found_receipt in ids]
            todo = [r for r in todo if r.found_receipt not in ids]
            self._read_receipt_chunk(chunk)

    def _read_receipt_chunk(self, todo: list[RecordState]) -> None:
        def settle(rec: RecordState, answer: tuple[Any, ...]) -> bool:
            listed, unprocessed = answer
            if rec.found_receipt in unprocessed:
                return True
            if rec.receipt_entry in listed.get(rec.found_receipt or "", frozenset()):
                rec.finish(Outcome.DUPLICATE_SKIPPED)
            else:
                self._to_publish(rec)
            return False

        self._read_rounds(
            todo,
            "receipt",
            lambda recs: self.claims.receipts.read(
                [r.found_receipt for r in recs if r.found_receipt]
            ),
            settle,
        )

    # --- stage 3b: the rows of claims kept apart from them (ClaimThenRow) ---------------------
    def _write_rows(self) -> None:
        """The business rows of the records whose claim is known to be their own: ONE
        BatchExecuteStatement of INSERTs per <= 25 rows, never two on one row key in a call (two
        events for one row: the later meets the first's row in a later call). Standard queues
        only (``_to_publish``, ``_commit_all``): on FIFO the row commits with its claim."""
        for chunk in _row_chunks(self._live(Stage.NEED_ROW)):
            self._insert_rows(chunk)

    @property
    def _rows(self) -> ClaimThenRow:
        """The placement that writes rows apart from claims (only its records need a row)."""
        assert isinstance(self.claims, ClaimThenRow)
        return self.claims

    def _insert_rows(self, todo: list[RecordState]) -> None:
        """ONE BatchExecuteStatement of row INSERTs (``_statements``); a refused row (its key
        exists) is read (``_read_rows``)."""

        def refused_call(todo: list[RecordState], exc: Exception) -> None:
            if len(todo) > 1:
                for rec in todo:  # not attributable to one row: one call each
                    self._insert_rows([rec])
            else:
                refused(todo[0], short_error(exc))

        def exists(rec: RecordState, answer: Any) -> None:
            rec.stage = Stage.NEED_ROW_READ  # whose row is it?

        def refused(rec: RecordState, why: str) -> None:
            rec.poison(
                PoisonKind.SCHEMA,
                f"business row was refused: {why}; nothing of it was written (its claim is "
                "released)",
            )
            rec.release_claim = True

        self._statements(
            todo,
            _row_of,
            self._rows.insert_rows,
            "row",
            refused_call,
            self._row_written,
            exists,
            refused,
        )

    def _row_written(self, rec: RecordState) -> None:
        """The row holds this event's effect (written now, or verified by the event id it
        records): publish, or done when the consumer notifies nothing."""
        rec.stage = Stage.NEED_PUBLISH if rec.notification else Stage.DONE
        if rec.stage is Stage.DONE:
            rec.finish(Outcome.REPUBLISHED if rec.duplicate else Outcome.PROCESSED)

    def _read_rows(self) -> None:
        """The rows whose INSERT was refused: ONE consistent BatchGetItem (in rounds, as the
        status read). The row records this event -> its effect is applied (a copy that died
        between row and publish wrote it); another event, or none -> a business conflict:
        ``semantic`` poison, this event's write NOT applied; gone -> failed for redelivery."""
        todo = self._hold_back(self._live(Stage.NEED_ROW_READ))
        for start in range(0, len(todo), BATCH_GET_MAX_KEYS):
            self._read_rounds(
                todo[start : start + BATCH_GET_MAX_KEYS],
                "row",
                lambda recs: self._rows.read_rows([_row_key(r) for r in recs]),
                self._settle_row,
            )

    def _settle_row(self, rec: RecordState, answer: tuple[Any, ...]) -> bool:
        found, unprocessed = answer
        text = row_key_text(_row_key(rec))
        if text in unprocessed:
            return True
        recorded = found.get(text)
        if recorded is None:
            rec.fail(FailureClass.TRANSIENT, "row vanished after its key was refused")
        elif recorded == rec.event_id:
            self._row_written(rec)
        else:
            rec.poison(
                PoisonKind.SEMANTIC,
                f"the business row {sorted(_row_key(rec))} already holds another event's effect "
                "(ConditionalCheckFailed); this event's write was NOT applied (its claim is "
                "released)",
            )
            rec.release_claim = True
        return False

    def _release_claims(self) -> None:
        """The claims of the records whose row could not be written: released (one DeleteItem
        each, conditional; rare), so that nothing says their write was applied. A failure is
        logged: the record goes to the DLQ with its reason either way."""
        for rec in self.records:
            if not rec.release_claim or rec.key is None:
                continue
            try:
                self._rows.release(rec.key)
            except (ClientError, BotoCoreError) as exc:
                logger.warning(
                    "could not release the claim of an event whose row was refused",
                    extra={"event_id": rec.event_id, "error": short_error(exc)},
                )

    # --- stage 4: notifications --------------------------------------------------------------
    def _publish(self) -> None:
        pending = self._hold_back(self._live(Stage.NEED_PUBLISH))
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
            live = {r.index for r in self._hold_back([by_id[e.entry_id] for e in chunk])}
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
                    if self._hold_back([by_id[entry.entry_id]]):
                        self._publish_chunk([entry], by_id)
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
            if result is None or (result.error and result.failure_class is FailureClass.TRANSIENT):
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
            self.claims.record_owed(rec.key, rec.notification, error, self.now, rec.event_id or "")
        except (ClientError, BotoCoreError) as exc:
            # The DLQ copy still carries the body: a redrive publishes it.
            logger.warning(
                "could not store the owed notification on the claim",
                extra={"event_id": rec.event_id, "error": short_error(exc)},
            )

    # --- stage 5: status -> sent -------------------------------------------------------------
    def _write_statuses(self) -> None:
        """Fresh claims: the batch's receipt(s) list them (one PutItem each, ``_write_receipt``);
        republished duplicates, and claims without a receipt: the ``sent`` marking."""
        pending = self._live(Stage.NEED_STATUS)
        fresh: dict[str, list[RecordState]] = {}
        for rec in pending:
            if rec.receipt and not rec.duplicate:
                fresh.setdefault(rec.receipt, []).append(rec)
        for receipt, recs in fresh.items():
            self._write_receipt(receipt, recs)
        pending = [r for r in pending if r.stage is Stage.NEED_STATUS]
        for start in range(0, len(pending), PARTIQL_BATCH_MAX_STATEMENTS):
            self._write_status_chunk(pending[start : start + PARTIQL_BATCH_MAX_STATEMENTS])

    def _write_receipt(self, receipt: str, todo: list[RecordState]) -> None:
        """ONE PutItem listing the published records of the receipt (botocore retries a
        throttle). Refused or failed: published but not recorded; the records are reported
        failed and their redelivery, finding no listing, publishes again (at-least-once)."""
        if not self._time_ok(todo):
            return
        try:
            self.claims.receipts.write(receipt, [r.receipt_entry for r in todo], self.now)
        except (ClientError, BotoCoreError) as exc:
            for rec in todo:
                rec.fail(classify_exception(exc), f"receipt write failed: {short_error(exc)}")
            return
        for rec in todo:
            rec.finish(Outcome.PROCESSED)

    def _write_status_chunk(self, todo: list[RecordState]) -> None:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if not todo or not self._time_ok(todo):
                return
            writes = []
            for rec in todo:
                assert rec.key is not None  # every committed record has its key
                writes.append(
                    StatusWrite(
                        key=rec.key,
                        notification_id=rec.notification_id,
                        event_id=rec.event_id or "",
                    )
                )
            try:
                codes = self.claims.mark_sent(writes, self.now)
            except (ClientError, BotoCoreError) as exc:
                # Published but not marked: the redelivery republishes (at-least-once).
                for rec in todo:
                    rec.fail(classify_exception(exc), f"status write failed: {short_error(exc)}")
                return
            retry = []
            for rec, code in zip(todo, codes, strict=True):
                if code is None:
                    rec.finish(Outcome.REPUBLISHED if rec.duplicate else Outcome.PROCESSED)
                elif retried_now("dynamodb", code) and attempt < MAX_ATTEMPTS:
                    rec.attempts = max(rec.attempts, attempt + 1)
                    retry.append(rec)
                else:
                    # Published but not marked: the redelivery republishes (at-least-once).
                    rec.fail(FailureClass.TRANSIENT, f"status write failed: {code}")
            if retry:
                self.sleep(transaction_backoff(attempt))
            todo = retry

    def _resolve_shadows(self) -> None:
        ok = {Outcome.PROCESSED, Outcome.REPUBLISHED, Outcome.DUPLICATE_SKIPPED}
        for rec in self.records:
            first = rec.shadow_of
            if first is None:
                continue
            rec.duplicate = True
            if rec.shadow_differs:
                # The claim holds the first copy's content: it made the claim here, or met it
                # as its own duplicate. Otherwise (a conflict itself, or unfinished) the claim
                # may be this copy's own: judged alone on redelivery.
                if first.outcome in ok:
                    self._conflict(rec, first.message_id, " (claimed in this batch)")
                else:
                    rec.fail(
                        FailureClass.TRANSIENT,
                        "another copy of this event with other content came first in the "
                        "batch and did not make the claim; judged alone on redelivery",
                    )
            elif first.outcome in ok:
                rec.finish(Outcome.DUPLICATE_SKIPPED)
            else:
                # Let SQS redeliver it; it will then meet the first one's claim (or make it).
                rec.fail(
                    FailureClass.TRANSIENT, "an earlier record of the same event did not finish"
                )

    # --- stage 6: quarantine -----------------------------------------------------------------
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
        poison = self._hold_back([r for r in self.records if r.stage is Stage.POISON])
        if not poison:
            return
        copyable = []
        for rec in poison:
            if can_carry(rec.body):
                copyable.append(rec)
            else:
                # SQS could never carry this body: keep it where it is (its redrive policy
                # moves it to the DLQ unchanged) instead of failing the whole DLQ call.
                _quarantine_failed(rec, "body is not valid Unicode and cannot be copied")
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
                event_id_attribute=self.event_id_attribute,
                first_seen_ms=rec.first_seen_ms,
            )
            for rec in copyable
        ]
        by_id = {f"q{rec.index}": rec for rec in copyable}
        sender = Quarantine(self.sqs, self.settings.dlq_url)
        for chunk in chunk_quarantine(entries):
            recs = [by_id[e.entry_id] for e in chunk]
            if not self._time_ok(recs):
                continue
            try:
                results = sender.send_batch(chunk)
            except Exception as exc:  # any failure to quarantine means "keep it in SQS"
                for rec in recs:
                    _quarantine_failed(rec, short_error(exc))
                continue
            for entry in chunk:
                error = results.get(entry.entry_id)
                rec = by_id[entry.entry_id]
                if error:
                    _quarantine_failed(rec, error)
                else:
                    rec.finish(Outcome.QUARANTINED)


def _epoch_ms(value: Any) -> int | None:
    """An SQS timestamp (epoch milliseconds as text), None when absent or unreadable."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def _insert_of(rec: RecordState) -> dict[str, Any]:
    assert rec.claim is not None and rec.claim.insert is not None
    return rec.claim.insert


def _row_chunks(recs: Sequence[RecordState]) -> list[list[RecordState]]:
    """<= 25 row INSERTs per call, never two on one row key in a call (the later waits for a
    later call, where it meets the first's row). Standard queues only: on FIFO the row commits
    with its claim in the transaction."""
    chunks: list[list[RecordState]] = []
    keys: list[set[str]] = []
    for rec in recs:
        key = row_key_text(_row_key(rec))
        for chunk, seen in zip(chunks, keys, strict=True):
            if len(chunk) < PARTIQL_BATCH_MAX_STATEMENTS and key not in seen:
                chunk.append(rec)
                seen.add(key)
                break
        else:
            chunks.append([rec])
            keys.append({key})
    return chunks


def _row_of(rec: RecordState) -> dict[str, Any]:
    assert rec.claim is not None and rec.claim.row is not None
    return rec.claim.row


def _row_key(rec: RecordState) -> dict[str, Any]:
    assert rec.claim is not None and rec.claim.row_key is not None
    return rec.claim.row_key


def _quarantine_failed(rec: RecordState, error: str) -> None:
    # Never dropped: report failed so SQS keeps it (and its own redrive policy applies).
    reason = f"{rec.kind}: {rec.reason}; quarantine send failed: {error}"
    rec.fail(FailureClass.PERMANENT, reason)
