"""The transactional strategy: claim and business writes commit in ONE TransactWriteItems.

A single-item effect whose Put only requires its key to be new (``SingleItemEffect``, both
reference consumers) needs no transaction on a standard queue: its claims go as PartiQL
INSERTs in ONE BatchExecuteStatement per <= 25 records (``ItemClaimStore.insert``, 1 write
unit each); a duplicate's ``DuplicateItem`` refuses its statement alone, and its status comes
from one consistent BatchGetItem. FIFO keeps the transaction: statements succeed or fail one by
one, so a later record of a group could be written while an earlier one waits for a retry.

Otherwise, per batch: ONE TransactWriteItems per <= 100 items holding every record's claim
(``attribute_not_exists``) plus its business writes. On cancellation the per-item reasons split
the batch: claim conditions failed -> duplicates (status comes back with ``ALL_OLD``, else one
BatchGetItem); business conditions failed -> semantic poison; TransactionConflict -> retried
(50 ms x 2^n, +-50 % jitter, 3 attempts); the rest is re-submitted as a smaller transaction at
once. After publishing, ONE PartiQL BatchExecuteStatement per <= 25 records marks them
``sent`` (1 write unit each, see ``StateStore.mark_sent``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from idempotent_messaging.runtime.batch import (
    BatchRun,
    RecordState,
    Stage,
    describe_item,
    short_error,
)
from idempotent_messaging.runtime.clients import MAX_ATTEMPTS, transaction_backoff
from idempotent_messaging.runtime.errors import (
    TRANSIENT_STATEMENT_CODES,
    FailureClass,
    PoisonKind,
    classify_cancellation,
    classify_exception,
    classify_statement,
    is_transaction_cancelled,
)
from idempotent_messaging.runtime.item_store import ItemClaimStore
from idempotent_messaging.runtime.observability import Outcome, record_outcome
from idempotent_messaging.runtime.store import (
    BATCH_GET_MAX_KEYS,
    PARTIQL_BATCH_MAX_STATEMENTS,
    TRANSACT_MAX_ITEMS,
    StatusWrite,
    TransactItem,
)


class TransactionalBatch(BatchRun):
    """``IDEMPOTENCY_STRATEGY=transactional`` (the default)."""

    def _commit_all(self) -> None:
        inserts: list[tuple[RecordState, dict[str, Any]]] = []
        transact: list[RecordState] = []
        for rec in self._live(Stage.PARSED):
            statement = self._insert_statement(rec)
            if statement is None:
                transact.append(rec)
            else:
                inserts.append((rec, statement))
        for statements in _insert_chunks(inserts):
            self._insert(statements)
        chunk: list[RecordState] = []
        size = 0
        for rec in transact:
            n = 1 + len(rec.items)
            if chunk and size + n > TRANSACT_MAX_ITEMS:
                self._commit(chunk)
                chunk, size = [], 0
            chunk.append(rec)
            size += n
        if chunk:
            self._commit(chunk)

    def _insert_statement(self, rec: RecordState) -> dict[str, Any] | None:
        """The record's claim as one INSERT, when nothing but its own item is written and the
        queue is standard (see the module docstring for FIFO)."""
        if self.fifo or rec.items or rec.claim is None:
            return None
        if not isinstance(self.store, ItemClaimStore):
            return None
        return self.store.insert_statement(rec.claim)

    def _insert(self, todo: list[tuple[RecordState, dict[str, Any]]]) -> None:
        assert isinstance(self.store, ItemClaimStore)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            recs = [rec for rec, _ in todo]
            if not todo or not self._time_ok(recs):
                return
            try:
                answers = self.store.insert([statement for _, statement in todo])
            except (ClientError, BotoCoreError) as exc:
                failure_class = classify_exception(exc)
                if failure_class is FailureClass.PERMANENT:
                    # The whole call was refused, not one statement: one transaction per
                    # record attributes the refusal to the record that caused it.
                    for rec in recs:
                        self._commit([rec])
                    return
                for rec in recs:
                    rec.fail(failure_class, f"claim write failed: {short_error(exc)}")
                return
            retry = []
            for (rec, statement), answer in zip(todo, answers, strict=True):
                if answer.code is None:
                    self._committed(rec)
                    continue
                failure_class = classify_statement(answer.code)
                if failure_class is FailureClass.DUPLICATE:
                    rec.key_existed = True
                    self._duplicate(rec, answer.item)
                elif failure_class is FailureClass.PERMANENT:
                    assert rec.claim is not None
                    rec.poison(
                        PoisonKind.SCHEMA,
                        f"business write {describe_item(rec.claim)} was refused: "
                        f"{answer.code}: {answer.message}; nothing was written",
                    )
                elif answer.code in TRANSIENT_STATEMENT_CODES and attempt < MAX_ATTEMPTS:
                    rec.attempts = max(rec.attempts, attempt + 1)
                    retry.append((rec, statement))
                else:
                    rec.fail(FailureClass.TRANSIENT, f"claim write failed: {answer.code}")
            if retry:
                self.contract.sleep(transaction_backoff(attempt))
            todo = retry

    def _committed(self, rec: RecordState) -> None:
        rec.stage = Stage.NEED_PUBLISH if rec.notification else Stage.DONE
        if rec.stage is Stage.DONE:
            rec.finish(Outcome.PROCESSED)

    def _commit(self, todo: list[RecordState]) -> None:
        while todo:
            todo = self._drop_blocked(todo)
            if not todo or not self._time_ok(todo):
                return
            items: list[TransactItem] = []
            owners: list[tuple[RecordState, int]] = []  # (record, -1 for its claim or write index)
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
                        f"business write {position} {describe_item(rec.items[position])}"
                        f" was cancelled: {code}; claim not written",
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
            self.contract.sleep(transaction_backoff(worst))
        return retry

    # --- stage 2b: statuses of duplicates the cancellation did not carry ----------------------
    def _read_statuses(self) -> None:
        pending = self._drop_blocked(self._live(Stage.NEED_READ))
        for start in range(0, len(pending), BATCH_GET_MAX_KEYS):
            chunk = pending[start : start + BATCH_GET_MAX_KEYS]
            if not self._time_ok(chunk):
                continue
            try:
                statuses, unprocessed = self.store.read_statuses(
                    [r.key for r in chunk if r.key], [r.event_id or "" for r in chunk if r.key]
                )
            except (ClientError, BotoCoreError) as exc:
                for rec in chunk:
                    rec.fail(classify_exception(exc), f"status read failed: {short_error(exc)}")
                continue
            for rec in chunk:
                assert rec.key is not None
                if rec.key.label in unprocessed:
                    rec.fail(FailureClass.TRANSIENT, "status read left unprocessed")
                elif statuses.get(rec.key.label) is None and rec.key_existed:
                    # Its INSERT was refused because the item existed; now it is gone.
                    rec.fail(FailureClass.TRANSIENT, "item vanished after its key was refused")
                elif statuses.get(rec.key.label) is None and self.store.absent_claim_is_semantic:
                    rec.poison(
                        PoisonKind.SEMANTIC,
                        "business write was cancelled: ConditionalCheckFailed; nothing was written",
                    )
                elif statuses.get(rec.key.label) is None:
                    rec.fail(FailureClass.TRANSIENT, "claim vanished after its condition failed")
                else:
                    self._apply_status(rec, statuses[rec.key.label])

    # --- stage 3: notifications --------------------------------------------------------------
    def _write_statuses(self) -> None:
        pending = self._live(Stage.NEED_STATUS)
        for start in range(0, len(pending), PARTIQL_BATCH_MAX_STATEMENTS):
            self._write_status_chunk(pending[start : start + PARTIQL_BATCH_MAX_STATEMENTS])

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
                codes = self.store.mark_sent(writes, self.now)
            except (ClientError, BotoCoreError) as exc:
                # Published but not marked: the redelivery republishes (at-least-once).
                for rec in todo:
                    rec.fail(classify_exception(exc), f"status write failed: {short_error(exc)}")
                return
            retry = []
            for rec, code in zip(todo, codes, strict=True):
                if code is None:
                    rec.finish(Outcome.REPUBLISHED if rec.duplicate else Outcome.PROCESSED)
                elif code in TRANSIENT_STATEMENT_CODES and attempt < MAX_ATTEMPTS:
                    rec.attempts = max(rec.attempts, attempt + 1)
                    retry.append(rec)
                else:
                    # Published but not marked: the redelivery republishes (at-least-once).
                    rec.fail(FailureClass.TRANSIENT, f"status write failed: {code}")
            if retry:
                self.contract.sleep(transaction_backoff(attempt))
            todo = retry


def _insert_chunks(
    inserts: list[tuple[RecordState, dict[str, Any]]],
) -> list[list[tuple[RecordState, dict[str, Any]]]]:
    """<= 25 statements per call, and never two on one item in a call (two events naming one
    item: the later one waits for a later call, where it meets the first one's row)."""
    chunks: list[list[tuple[RecordState, dict[str, Any]]]] = []
    keys: list[set[str]] = []
    for rec, statement in inserts:
        assert rec.key is not None
        item_key = json.dumps(rec.key.key, sort_keys=True)
        for chunk, seen in zip(chunks, keys, strict=True):
            if len(chunk) < PARTIQL_BATCH_MAX_STATEMENTS and item_key not in seen:
                break
        else:
            chunk, seen = [], set()
            chunks.append(chunk)
            keys.append(seen)
        chunk.append((rec, statement))
        seen.add(item_key)
    return chunks
