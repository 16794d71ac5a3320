"""The redelivery protocol of the consumer runtime, as the code implements it.

One state holds the source queue (SQS, standard or FIFO), the DLQ, the claims, business
effects and publication receipts in DynamoDB, the notifications published on SNS, up to
``Config.concurrency`` invocations of the consumer Lambda in flight, the clock, and ghost
facts the invariants read (which effects were applied, which events were dead-lettered).
Every transition is one atomic step of one party:

* the producer sends (a re-send: the same event id, the same body or another one);
* Lambda's event source mapping receives a batch (receive count + 1) and the invocation
  decodes it (``BatchRun._wrap``, ``BatchRun._decode_all``: poison, the dedup horizon);
* an invocation makes its next AWS call, with its exact semantics and every outcome the
  fault budget allows (a PartiQL INSERT refused alone with ``DuplicateItem``; an atomic
  TransactWriteItems cancelled as a whole, the existing claim returned; a PublishBatch
  failing per entry; a call failing after it was applied, ...);
* an invocation dies (process death, function timeout) before any call or before it
  returns, or runs out of time (``BatchRun._time_ok``: every later call fails its records);
* an invocation returns its partial batch response and the event source mapping deletes
  what was not reported failed;
* SQS: a message received ``maxReceiveCount`` times is moved to the DLQ by SQS itself,
  bare; retention (a failed or orphaned message stays receivable: its visibility timeout may
  pass at any moment, so "it becomes visible, then a receive takes it" is one receive);
* DynamoDB deletes an expired claim or publication receipt, at any time after it expired
  (not at expiry);
* the operator redrives a DLQ copy (``ops redrive``: a NEW message, fresh retention, its
  first-seen time carried or established), or a native move task moves one (where the DLQ
  policy allows it: a NEW message, its attributes kept, nothing established);
* the clock ticks (only between invocations: one tick is longer than an invocation plus
  ``batch.DEDUP_HORIZON_MARGIN_SECONDS``).

What each action models is named in ``ACTIONS`` (module and qualified name, checked to exist
by tests/model/test_model.py) and ``Features.of_code`` reads, from the code, the switches
that later work added (the dedup horizon, UnprocessedKeys retries, the content fingerprint,
publication receipts, the redrive guards). docs/model.md describes the model, its abstractions
and its findings.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Iterator, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

# --- what each action models --------------------------------------------------------------------


@dataclass(frozen=True)
class Code:
    """A function (or class attribute) of the repository that an action models."""

    module: str
    qualname: str

    def resolve(self) -> Any:
        value: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            value = getattr(value, part)
        return value

    def __str__(self) -> str:
        return f"{self.module}:{self.qualname}"


@dataclass(frozen=True)
class Action:
    name: str
    summary: str
    code: tuple[Code, ...] = ()
    aws: str = ""
    """The AWS behaviour modelled (documented service semantics, not this repository's code)."""


_B = "idempotent_messaging.runtime.batch"
_C = "idempotent_messaging.runtime.claims"
_E = "idempotent_messaging.runtime.errors"
_N = "idempotent_messaging.runtime.notify"
_Q = "idempotent_messaging.runtime.quarantine"

ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        Action(
            "send",
            "the producer sends a message (a re-send: same event id, same or another body)",
            aws="SQS SendMessage: a new message id, fresh SentTimestamp and retention",
        ),
        Action(
            "receive",
            "the event source mapping receives a batch; the invocation decodes it",
            (
                Code(_B, "BatchRun._wrap"),
                Code(_B, "BatchRun._decode_all"),
                Code(_B, "BatchRun._beyond_horizon"),
                Code(_B, "BatchRun._mark_in_batch_duplicates"),
                Code(_B, "BatchRun._conflict"),
                Code(_C, "conflicts"),
                Code(_B, "BatchRun._commit_all"),
                Code("idempotent_messaging.runtime.consumer", "Consumer.decode"),
            ),
            aws="SQS ReceiveMessage (receive count + 1; FIFO: in group order, a group with a "
            "message in flight is not returned)",
        ),
        Action(
            "insert",
            "ONE BatchExecuteStatement of PartiQL INSERTs (claim in the item, standard queue)",
            (
                Code(_B, "BatchRun._insert"),
                Code(_B, "BatchRun._committed"),
                Code(_B, "BatchRun._duplicate"),
                Code(_C, "ItemClaims.claim"),
                Code(_C, "ItemClaims.insert"),
                Code(_C, "insert_chunks"),
                Code(_E, "classify_statement"),
            ),
            aws="DynamoDB PartiQL INSERT: atomic per statement, DuplicateItem when the key exists",
        ),
        Action(
            "transact",
            "ONE TransactWriteItems of claims + business writes, split when cancelled",
            (
                Code(_B, "BatchRun._commit"),
                Code(_B, "BatchRun._split_cancelled"),
                Code(_B, "BatchRun._duplicate"),
                Code(_B, "BatchRun._apply_status"),
                Code(_C, "StateTableClaims.claim"),
                Code(_C, "StateTableClaims.verdict"),
                Code(_C, "ItemClaims.verdict"),
                Code(_E, "split_cancellation"),
            ),
            aws="DynamoDB TransactWriteItems: all or nothing; a failed condition cancels it "
            "with the existing item (ALL_OLD)",
        ),
        Action(
            "read",
            "ONE consistent BatchGetItem of the duplicates' claims (UnprocessedKeys retried), "
            "and of the claims of copies beyond the dedup horizon (present: the duplicate branch; "
            "absent: refused)",
            (
                Code(_B, "BatchRun._read_statuses"),
                Code(_B, "BatchRun._beyond_horizon"),
                Code(_B, "BatchRun._read_status_chunk"),
                Code(_B, "BatchRun._status_read"),
                Code(_C, "ItemClaims.read_statuses"),
                Code(_C, "StateTableClaims.read_statuses"),
            ),
            aws="DynamoDB BatchGetItem (ConsistentRead): may leave keys unprocessed",
        ),
        Action(
            "row-insert",
            "DomainKeyedCreate: ONE BatchExecuteStatement of the rows' INSERTs (each recording "
            "its event id), for the records whose claim is known to be their own",
            (
                Code(_B, "BatchRun._write_rows"),
                Code(_B, "BatchRun._insert_rows"),
                Code(_B, "BatchRun._row_written"),
                Code(_B, "BatchRun._to_publish"),
                Code(_C, "ClaimThenRow.claim"),
                Code(_C, "ClaimThenRow.insert_rows"),
            ),
            aws="DynamoDB PartiQL INSERT: atomic per statement, DuplicateItem when the key exists",
        ),
        Action(
            "row-read",
            "DomainKeyedCreate: ONE consistent BatchGetItem of the rows whose INSERT was "
            "refused: this event's (verified), or another event's (a business conflict)",
            (
                Code(_B, "BatchRun._read_rows"),
                Code(_B, "BatchRun._settle_row"),
                Code(_C, "ClaimThenRow.read_rows"),
            ),
            aws="DynamoDB BatchGetItem (ConsistentRead): may leave keys unprocessed",
        ),
        Action(
            "release",
            "DomainKeyedCreate: the claim of a copy whose row is another event's is released "
            "(one conditional DeleteItem: pending, this content)",
            (
                Code(_B, "BatchRun._release_claims"),
                Code(_C, "ClaimThenRow.release"),
            ),
            aws="DynamoDB DeleteItem with a condition (ConditionalCheckFailed: left alone)",
        ),
        Action(
            "publish",
            "ONE PublishBatch per chunk (FIFO: one entry per group); success per entry",
            (
                Code(_B, "BatchRun._publish"),
                Code(_B, "BatchRun._publish_chunk"),
                Code(_N, "Notifier.publish_batch"),
                Code(_N, "chunk_entries"),
            ),
            aws="SNS PublishBatch: per-entry Successful/Failed (SenderFault)",
        ),
        Action(
            "receipt-read",
            "ONE consistent BatchGetItem of the receipts the pending duplicates' claims name",
            (
                Code(_B, "BatchRun._read_receipts"),
                Code(_B, "BatchRun._read_receipt_chunk"),
                Code(_C, "Receipts.read"),
            ),
            aws="DynamoDB BatchGetItem (ConsistentRead): an absent receipt lists nothing",
        ),
        Action(
            "receipt-write",
            "ONE PutItem: the batch's receipt listing the fresh claims whose notifications "
            "went out (they stay pending)",
            (
                Code(_B, "BatchRun._write_statuses"),
                Code(_B, "BatchRun._write_receipt"),
                Code(_B, "BatchRun._assign_receipt"),
                Code(_C, "Receipts.write"),
            ),
            aws="DynamoDB PutItem (unconditional: the receipt id is new)",
        ),
        Action(
            "owe",
            "a refused notification is owed: quarantined as notification_owed, kept on the claim",
            (
                Code(_B, "BatchRun._owe"),
                Code(_C, "StateTableClaims.record_owed"),
                Code(_C, "ItemClaims.record_owed"),
            ),
            aws="DynamoDB UpdateItem with a condition (the claim is this event's, pending)",
        ),
        Action(
            "mark",
            "ONE BatchExecuteStatement of PartiQL UPDATEs to sent (per statement, no transaction)",
            (
                Code(_B, "BatchRun._write_statuses"),
                Code(_B, "BatchRun._write_status_chunk"),
                Code(_C, "StateTableClaims.mark_sent"),
                Code(_C, "ItemClaims.mark_sent"),
            ),
            aws="DynamoDB PartiQL UPDATE: ConditionalCheckFailed when the WHERE matches no item",
        ),
        Action(
            "quarantine",
            "ONE SendMessageBatch of poison to the DLQ (FIFO: at once; last receive: exhausted)",
            (
                Code(_B, "BatchRun._quarantine"),
                Code(_B, "BatchRun._quarantine_now"),
                Code(_B, "BatchRun._quarantine_exhausted"),
                Code(_Q, "Quarantine.send_batch"),
                Code(_Q, "_attributes"),
            ),
            aws="SQS SendMessageBatch: a NEW message (fresh retention); FIFO dedup id = "
            "the original message id",
        ),
        Action(
            "return",
            "the invocation returns its partial batch response; the mapping deletes the rest",
            (
                Code(_B, "BatchRun._resolve_shadows"),
                Code(_B, "BatchRun._hold_back"),
                Code(_B, "BatchRun.response"),
                Code(_B, "BatchRun.run"),
            ),
            aws="Lambda event source mapping with ReportBatchItemFailures: DeleteMessageBatch "
            "of the records not reported failed",
        ),
        Action(
            "crash",
            "the invocation dies (process death or function timeout): nothing is reported",
            aws="Lambda: a dead invocation deletes nothing; its batch returns after the "
            "visibility timeout",
        ),
        Action(
            "timeout",
            "the remaining-time guard trips: every later call fails its records",
            (Code(_B, "BatchRun._time_ok"),),
        ),
        Action(
            "sqs-redrive",
            "SQS moves a message received maxReceiveCount times to the DLQ, bare",
            aws="SQS redrive policy: the message as it is, none of the runtime's attributes; "
            "standard keeps its enqueue time, FIFO resets it",
        ),
        Action(
            "tick",
            "the clock advances (between invocations); retention deletes old messages",
            aws="SQS MessageRetentionPeriod (source and DLQ)",
        ),
        Action(
            "ttl-delete",
            "DynamoDB deletes an expired claim or publication receipt, at any time after its "
            "expiry",
            (Code(_C, "StateTableClaims.claim"), Code(_C, "Receipts.write")),
            aws="DynamoDB TTL: expired items are deleted typically within days, not at expiry, "
            "and are read and conditioned on until then",
        ),
        Action(
            "ops-redrive",
            "the operator redrives one DLQ copy: a NEW message with fresh retention, carrying "
            "the copy's first-seen attribute or one established from its SentTimestamp",
            (
                Code("idempotent_messaging.ops.dlq", "manual_redrive"),
                Code("idempotent_messaging.ops.dlq", "_send_entry"),
                Code("idempotent_messaging.ops.dlq", "bare_first_seen_ms"),
            ),
            aws="SQS SendMessageBatch + DeleteMessage (the copy's message attributes kept)",
        ),
        Action(
            "native-move",
            "a native move task (the console's 'Start DLQ redrive', or StartMessageMoveTask) "
            "moves one DLQ copy: a NEW message, its attributes kept, nothing established; the "
            "component's DLQ policy denies it unless the consumer opts out",
            (
                Code("idempotent_messaging.components.queues", "deny_message_move_statement"),
                Code("idempotent_messaging.ops.dlq", "native_move"),
            ),
            aws="SQS StartMessageMoveTask: 'All redriven messages are considered new messages "
            "with a new messageID and enqueueTime'; message attributes kept",
        ),
    )
}


def _poison_kinds() -> set[str]:
    errors = importlib.import_module(_E)
    return {str(kind) for kind in errors.PoisonKind}


@dataclass(frozen=True)
class Features:
    """Switches for what the code does or will do; ``Features.of_code()`` reads them."""

    horizon: bool = True
    """A copy first seen a claim TTL ago is refused (``beyond_dedup_horizon``)."""
    read_attempts: int = 5
    """BatchGetItem rounds for UnprocessedKeys (``batch.STATUS_READ_ATTEMPTS``; 1: none)."""
    fingerprint: bool = True
    """A claim keeps a content fingerprint: a same-id, different-body copy is a
    ``conflicting_duplicate``, quarantined (in the batch: ``_mark_in_batch_duplicates``; a
    stored claim: its verdict)."""
    receipts: bool = True
    """A fresh claim names its batch's publication receipt: after the publish ONE PutItem
    lists the claims whose notifications went out (the claim stays ``pending``); a pending
    duplicate reads the receipt: listed -> skipped, else published again and marked sent."""
    redrive_carries_sent_time: bool = False
    """``ops redrive`` writes the first-seen attribute from the DLQ copy's SentTimestamp when
    the copy carries none (an SQS-moved copy has none of the runtime's attributes)."""
    redrive_fifo_before_retention: bool = False
    """... and on a FIFO DLQ (which resets the enqueue time of a copy SQS moves) from its
    SentTimestamp less the source queue's retention: the earliest the original can have been
    sent (``ops.dlq.bare_first_seen_ms``)."""
    native_move_denied: bool = False
    """The component's DLQ policy denies ``sqs:StartMessageMoveTask`` (the console's redrive
    button, ``ops redrive --method native``): a native move gives a bare copy a new
    SentTimestamp and no first-seen time (``queues.deny_message_move_statement``)."""
    horizon_reads_claim: bool = False
    """A copy beyond the dedup horizon reads its claim before it is refused: present, it takes
    the duplicate branch (a pending claim's owed notification is published); absent, it is
    refused (``RecordState.beyond_horizon``)."""

    @classmethod
    def of_code(cls) -> Features:
        batch = importlib.import_module(_B)
        kinds = _poison_kinds()
        dlq = importlib.import_module("idempotent_messaging.ops.dlq")
        env = importlib.import_module("idempotent_messaging.runtime.env")
        first_seen = getattr(env, "FIRST_SEEN_ATTRIBUTE", None)
        source = ""
        try:
            import inspect

            source = inspect.getsource(dlq)
        except OSError:  # pragma: no cover - source always available in the repository
            pass
        try:
            queues = importlib.import_module("idempotent_messaging.components.queues")
        except ImportError:  # pragma: no cover - the components are in the repository
            queues = None
        return cls(
            horizon="beyond_dedup_horizon" in kinds,
            read_attempts=int(getattr(batch, "STATUS_READ_ATTEMPTS", 1)),
            fingerprint="conflicting_duplicate" in kinds,
            receipts=hasattr(importlib.import_module(_C), "Receipts"),
            redrive_carries_sent_time=bool(first_seen)
            and ("FIRST_SEEN" in source or str(first_seen) in source),
            redrive_fifo_before_retention=hasattr(dlq, "bare_first_seen_ms"),
            native_move_denied=hasattr(queues, "deny_message_move_statement"),
            horizon_reads_claim="beyond_horizon"
            in getattr(batch.RecordState, "__dataclass_fields__", {}),
        )

    def label(self) -> str:
        on = [
            name
            for name, value in (
                ("horizon", self.horizon),
                ("fingerprint", self.fingerprint),
                ("receipts", self.receipts),
                ("redrive-sent-time", self.redrive_carries_sent_time),
                ("redrive-fifo-retention", self.redrive_fifo_before_retention),
                ("native-move-denied", self.native_move_denied),
                ("horizon-reads-claim", self.horizon_reads_claim),
            )
            if value
        ]
        return ",".join(on) or "none"


# --- mutations: each breaks one rule of the code; the checker must find a counterexample ---------

MUTATIONS: dict[str, str] = {
    "no-fifo-hold": "BatchRun._hold_back holds nothing back on FIFO queues",
    "pending-as-sent": "BatchRun._apply_status takes a pending claim for sent (skips it)",
    "write-before-claim": "the business writes commit on their own, before the claim",
    "ttl-shorter-than-retention": "CLAIM_TTL_SECONDS below the source retention (the settings "
    "rule bypassed)",
    "quarantine-without-reason": "DLQ copies carry no failure kind or reason",
    "publish-before-commit": "the notification is published before the commit",
    "mark-before-publish": "the claim is marked sent before the notification is published",
    "failures-not-reported": "BatchRun.response reports no failure: the mapping deletes all",
    "no-last-receive-quarantine": "BatchRun._quarantine_exhausted does nothing",
    "shadow-ignores-first": "BatchRun._resolve_shadows skips an in-batch duplicate whatever "
    "became of the first record",
    "owed-not-quarantined": "BatchRun._owe finishes the record instead of quarantining it",
    "early-in-batch-conflict": "BatchRun._mark_in_batch_duplicates quarantines a later copy "
    "with other content at once, before the first copy's verdict (the defect the model found)",
    "native-move-allowed": "the DLQ policy allows the native move task (no "
    "queues.deny_message_move_statement): a bare copy is moved with a new SentTimestamp and "
    "no first-seen time",
    "horizon-refuses-unread": "BatchRun._beyond_horizon refuses a copy before reading its "
    "claim (a live pending claim's owed notification is never published)",
    "fifo-stamps-dlq-time": "ops.dlq.bare_first_seen_ms stamps a FIFO bare copy with its DLQ "
    "SentTimestamp (SQS reset it when it moved the copy)",
    "absent-receipt-as-listed": "Receipts.read takes an absent receipt (never written, or "
    "deleted by its TTL) for one listing every claim that names it",
    "row-before-claim": "DomainKeyedCreate: a row is written for a copy whose claim INSERT was "
    "refused, before its claim is known to be this copy's (no read, no fingerprint verdict)",
}

# --- invariants ---------------------------------------------------------------------------------

INVARIANTS: dict[str, str] = {
    "at-most-once": "at most one business effect per event id",
    "exactly-once": "every content sent has its effect, unless dead-lettered (or lost to "
    "retention)",
    "notified": "at least one notification per effect, unless a DLQ copy says it is (or may "
    "be) owed, or SQS moved a bare copy (the documented exception)",
    "notify-after-effect": "no notification before its effect",
    "no-silent-delete": "nothing deleted from SQS without its effect or a DLQ copy",
    "dlq-explained": "every DLQ copy explained: the runtime's carry a true kind and a reason; "
    "a bare copy only after a last receive that died, timed out or could not quarantine",
    "fifo-order": "FIFO: effects and first notifications in send order within a group "
    "(dead-lettered events excepted)",
    "quiescent": "every run ends with the queue empty and no invocation in flight",
}


OWING_KINDS = frozenset({"notification_owed", "retries_exhausted"})
"""DLQ copies that say the notification is, or may be, owed: ``notification_owed`` (the
write WAS applied) and ``retries_exhausted`` (the message did not finish on its last receive;
its reason names the failure, its redrive finishes it, e.g. a commit applied while every
attempt's answer was lost)."""


def owing_kinds(features: Features) -> frozenset[str]:
    """The DLQ copies that excuse a missing notification while they are in the DLQ (a bare
    copy, kind "", too). ``beyond_dedup_horizon`` only when the refusal read the claim and
    found none: the effect may have been applied and nothing remembers it but this copy. A
    copy refused without reading its claim says nothing of it (the live claim could still
    have had its notification published)."""
    if features.horizon_reads_claim:
        return OWING_KINDS | {"beyond_dedup_horizon"}
    return OWING_KINDS


class Violation(NamedTuple):
    invariant: str
    detail: str


# --- configuration ------------------------------------------------------------------------------


class Content(NamedTuple):
    """What a message carries: an event (index into ``Config.events``) with a body variant,
    or poison (event -1)."""

    event: int
    body: int = 0
    row: int = -1
    """DomainKeyedCreate: the business row (key) the content's Put creates; -1: its own (the
    content's index: another body is another ``order_id``)."""


class Send(NamedTuple):
    """A producer send: initial ones are queued at time 0 in order; optional ones (re-sends)
    may happen at any time in ``[earliest, latest]``."""

    content: int
    group: str | None = None
    optional: bool = False
    earliest: int = 0
    latest: int = 0


ALL_FAULTS = frozenset(
    {
        "commit-fail",  # the commit call refused (throttled after botocore's retries)
        "commit-ambiguous",  # applied, yet the client sees an error (timeout after commit)
        "stmt-transient",  # one PartiQL statement refused transiently (retried alone)
        "read-fail",
        "read-unprocessed",
        "publish-fail",
        "publish-ambiguous",
        "entry-transient",
        "entry-sender",  # SenderFault: redelivery cannot cure it (owed)
        "entry-ambiguous",  # published, no answer for the entry
        "mark-fail",
        "mark-ambiguous",
        "dlq-fail",
        "dlq-ambiguous",
        "dlq-entry",
        "owe-fail",
        "release-fail",
        "receipt-fail",
        "receipt-ambiguous",
    }
)


@dataclass(frozen=True)
class Config:
    name: str
    placement: str
    """"item" (ItemClaims), "separate" (StateTableClaims), "domain" (ClaimThenRow: the claim in
    the state table, the row keyed by a business key written after it)."""
    fifo: bool = False
    events: tuple[str, ...] = ("e1", "e2")
    contents: tuple[Content, ...] = (Content(0), Content(1))
    sends: tuple[Send, ...] = (Send(0), Send(1))
    batch: int = 2
    concurrency: int = 2
    max_receive: int = 2
    crashes: int = 1
    """Budget of deaths and time-outs per run."""
    faults: int = 1
    """Budget of injected AWS faults per run."""
    fault_kinds: frozenset[str] = ALL_FAULTS
    time: int = 0
    """Last clock value (0: no time, no TTL, no retention)."""
    source_retention: int = 99
    dlq_retention: int = 99
    claim_ttl: int = 99
    redrives: int = 0
    native_move: bool = False
    """A native move task may move DLQ copies (the DLQ policy allows it: the consumer opted
    out of the component's deny, or the code has no such deny)."""
    event_time: bool = False
    """The consumer declares the event's own time (``EventTimeFromBody``): re-sends carry
    the time of the first send."""
    features: Features = field(default_factory=Features)
    mutations: frozenset[str] = frozenset()
    only: frozenset[str] | None = None
    """Check only these invariants (None: all)."""

    def describe(self) -> str:
        parts = [
            "fifo" if self.fifo else "standard",
            {"item": "claim-in-item", "separate": "separate-claim", "domain": "claim-then-row"}[
                self.placement
            ],
            f"{len(self.sends)} sends",
            f"batch {self.batch}",
            f"{self.concurrency} invocations",
            f"maxReceiveCount {self.max_receive}",
            f"{self.crashes} deaths/time-outs",
            f"{self.faults} faults",
        ]
        if self.time:
            parts.append(
                f"time 0..{self.time} (retention {self.source_retention}+{self.dlq_retention},"
                f" claim TTL {self.claim_ttl}, {self.redrives} redrives"
                + (", native moves" if self.native_move else "")
                + ")"
            )
        parts.append(f"features {self.features.label()}")
        if self.mutations:
            parts.append(f"mutation {','.join(sorted(self.mutations))}")
        return ", ".join(parts)


# --- state --------------------------------------------------------------------------------------

PARSED, POISON, NEED_READ, NEED_PUBLISH, NEED_STATUS, DONE, NEED_RECEIPT = range(7)
NEED_ROW, NEED_ROW_READ = 7, 8
NO_OUTCOME, PROCESSED, SKIPPED, REPUBLISHED, QUARANTINED, FAILED = range(6)
VISIBLE, INFLIGHT = range(2)
STAGE_NAMES = (
    "parsed",
    "poison",
    "need_read",
    "need_publish",
    "need_status",
    "done",
    "need_receipt",
    "need_row",
    "need_row_read",
)
OUTCOME_NAMES = ("-", "processed", "duplicate_skipped", "republished", "quarantined", "failed")


class Msg(NamedTuple):
    mid: int
    content: int
    group: str | None
    sent_at: int  # SentTimestamp of this message
    carried: int  # the first-seen attribute it carries (-1: none)
    event_time: int  # the event's own time in its body (-1: none)
    rc: int  # receive count
    state: int
    holder: int  # invocation id while in flight
    last_end: str  # how its last receive ended


class Copy(NamedTuple):
    """A DLQ message."""

    cid: int
    content: int
    kind: str  # "" for a bare copy moved by SQS
    reason: bool
    sent_at: int
    carried: int
    event_time: int
    group: str | None
    source: int  # the message id it copies


class Claim(NamedTuple):
    status: str  # "pending" | "sent"
    body: int
    expires: int  # -1: no TTL (the claim lives in the business item)
    owed: bool
    receipt: int = -1  # the receipt it names (-1: none)


class Rec(NamedTuple):
    i: int
    mid: int
    content: int
    group: str | None
    rc: int
    first_seen: int
    stage: int = PARSED
    outcome: int = NO_OUTCOME
    kind: str = ""
    why: str = ""
    shadow: int = -1
    differs: bool = False  # a shadow whose content differs from the first's
    key_existed: bool = False
    duplicate: bool = False
    found: int = -1  # a duplicate's: the receipt its existing pending claim names
    beyond: bool = False  # beyond the dedup horizon: its claim is read, never written
    release: bool = False  # DomainKeyedCreate: its row is another event's; release its claim


class Inv(NamedTuple):
    iid: int
    now: int
    recs: tuple[Rec, ...]
    cont: tuple[tuple[Any, ...], ...]
    late: bool
    call: tuple[str, tuple[int, ...]]
    receipt: int  # the batch's receipt id (-1: none)


class State(NamedTuple):
    clock: int
    queue: tuple[Msg, ...]
    dlq: tuple[Copy, ...]
    claims: tuple[Claim | None, ...]
    effects: tuple[tuple[int, ...], ...]
    notes: tuple[int, ...]
    dead: int  # bitmask of contents ever dead-lettered
    owed_lost: int  # bitmask of events whose owing DLQ copy expired (outside the promise)
    lost: int  # bitmask of contents lost to retention
    sent: int  # bitmask of contents the producer sent
    invs: tuple[Inv, ...]
    next_mid: int
    next_cid: int
    crashes: int
    faults: int
    redrives: int
    resent: int  # bitmask of optional sends done
    dlq_sources: frozenset[int]  # FIFO DLQ deduplication: message ids already copied
    receipts: frozenset[tuple[int, int, int]] = frozenset()
    """(receipt id, event listed, expiry: -1 none) of every publication receipt written."""
    next_receipt: int = 0
    rows: tuple[int, ...] = ()
    """DomainKeyedCreate: per business row, the content whose row it is (-1: none)."""


Step = tuple[Any, ...]

# --- the model ----------------------------------------------------------------------------------


class Model:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.fifo = config.fifo
        self.item = config.placement == "item"
        self.domain = config.placement == "domain"
        self.mut = config.mutations
        self.f = config.features
        self.ttl = config.claim_ttl
        if "ttl-shorter-than-retention" in self.mut:
            self.ttl = max(1, config.source_retention - 1)
        self.max_receive = config.max_receive
        # Caches of pure functions of the configuration (the checker's hot paths).
        self._key_cache: dict[tuple[int, str | None], frozenset[tuple[Any, ...]]] = {}
        self._outcome_cache: dict[tuple[str, tuple[int, ...]], list[tuple[Any, ...]]] = {}
        self._settled: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._receipt_order: dict[tuple[Any, ...], list[int]] = {}
        features = self.f
        if "horizon-refuses-unread" in self.mut:
            features = replace(features, horizon_reads_claim=False)
        self.horizon_reads_claim = features.horizon_reads_claim
        self.owing_kinds = owing_kinds(features)
        # FIFO order: events of a group in the order of their first send.
        self.earlier: dict[int, tuple[int, ...]] = {}
        order: dict[str | None, list[int]] = {}
        for send in config.sends:
            event = config.contents[send.content].event
            if event < 0 or not config.fifo:
                continue
            seen = order.setdefault(send.group, [])
            if event not in seen:
                self.earlier[event] = tuple(seen)
                seen.append(event)

    # --- initial state -----------------------------------------------------------------------
    def initial(self) -> State:
        c = self.config
        queue = []
        sent = 0
        for n, send in enumerate(s for s in c.sends if not s.optional):
            queue.append(self._new_msg(n, send, 0))
            sent |= 1 << send.content
        return State(
            clock=0,
            queue=tuple(queue),
            dlq=(),
            claims=(None,) * len(c.events),
            effects=((),) * len(c.events),
            notes=(0,) * len(c.events),
            dead=0,
            owed_lost=0,
            lost=0,
            sent=sent,
            invs=(),
            next_mid=len(queue),
            next_cid=0,
            crashes=c.crashes,
            faults=c.faults,
            redrives=c.redrives,
            resent=0,
            dlq_sources=frozenset(),
            rows=(-1,) * len(c.contents) if self.domain else (),
        )

    def row_of(self, content: int) -> int:
        """DomainKeyedCreate: the business row a content's Put creates."""
        row = self.config.contents[content].row
        return row if row >= 0 else content

    def _new_msg(self, mid: int, send: Send, now: int) -> Msg:
        event_time = 0 if self.config.event_time else -1  # the event happened at time 0
        return Msg(mid, send.content, send.group, now, -1, event_time, 0, VISIBLE, -1, "")

    # --- names -------------------------------------------------------------------------------
    def content_name(self, content: int) -> str:
        event, body = self.config.contents[content][:2]
        if event < 0:
            return "POISON"
        return self.config.events[event] + "'" * body

    def describe(self, step: Step, before: State | None = None) -> str:
        kind = step[0]
        if kind == "send":
            return f"send m{step[2]} ({self.content_name(step[1])})"
        if kind == "receive":
            return f"receive i{step[1]}: " + ", ".join(
                f"m{mid}" + (f"({self.content_name(c)} rc{rc})") for mid, c, rc in step[2]
            )
        if kind == "call":
            _, iid, name, mids, outcome = step
            return f"i{iid} {name}[{','.join(f'm{m}' for m in mids)}] -> {_outcome(outcome)}"
        if kind in ("crash", "timeout", "return"):
            return f"i{step[1]} {kind}" + (f" (before {step[2]})" if len(step) > 2 else "")
        if kind in ("expire", "sqs-redrive"):
            return f"{kind} m{step[1]}"
        if kind == "ttl-delete":
            return f"ttl-delete claim of {self.config.events[step[1]]}"
        if kind in ("ops-redrive", "native-move"):
            return f"{kind} copy c{step[1]} -> m{step[2]}"
        if kind == "receipt-ttl-delete":
            return f"receipt-ttl-delete receipt r{step[1]}"
        return " ".join(str(x) for x in step)

    # --- transitions -------------------------------------------------------------------------
    def successors(self, s: State) -> Iterator[tuple[Step, State, Violation | None]]:
        ample = self._ample(s)
        if ample is not None:
            yield from self._inv_steps(s, ample)
            return
        yield from self._all_steps(s)

    def _keys(self, content: int, group: str | None) -> frozenset[tuple[Any, ...]]:
        cached = self._key_cache.get((content, group))
        if cached is not None:
            return cached
        event = self.config.contents[content].event
        keys: set[tuple[Any, ...]] = {("e", event) if event >= 0 else ("c", content)}
        if self.fifo:
            keys.add(("g", group))
        if self.domain and event >= 0:  # two events may name one business row
            keys.add(("r", self.row_of(content)))
        self._key_cache[(content, group)] = frozen = frozenset(keys)
        return frozen

    def _ample(self, s: State) -> Inv | None:
        """An invocation whose every step is independent of every other transition, now and
        later: no other message, invocation, pending send or redrivable DLQ copy shares an
        event (FIFO: a group) with it, and no claim of its events can expire meanwhile
        (ticks wait for the invocations). Exploring only its steps first loses no run up to
        the order of independent steps, and no violation: each is decided by the keys its
        step touches (a persistent set; the state graph is acyclic)."""
        if len(s.invs) < 2:
            return None
        c = self.config
        others: list[Set[tuple[Any, ...]]] = []
        for m in s.queue:
            if m.state != INFLIGHT:
                others.append(self._keys(m.content, m.group))
        for k, send in enumerate(c.sends):
            if send.optional and not s.resent >> k & 1 and s.clock <= send.latest:
                others.append(self._keys(send.content, send.group))
        if s.redrives:
            others += [self._keys(d.content, d.group) for d in s.dlq]
        for e, claim in enumerate(s.claims):
            if claim is not None and claim.expires >= 0:
                others.append({("e", e)})
        for _, e, expires in s.receipts:
            if expires >= 0:
                others.append({("e", e)})
        held = [set().union(*(self._keys(r.content, r.group) for r in inv.recs)) for inv in s.invs]
        for n, inv in enumerate(s.invs):
            mine = held[n]
            if any(mine & k for k in others):
                continue
            if any(mine & h for j, h in enumerate(held) if j != n):
                continue
            return inv
        return None

    def _inv_steps(self, s: State, inv: Inv) -> Iterator[tuple[Step, State, Violation | None]]:
        name, _ = inv.call
        if name == "return":
            yield self._return(s, inv)
        else:
            for outcome, cost in self._outcomes(s, inv):
                if cost <= s.faults:
                    yield self._call(s, inv, outcome, cost)
            if s.crashes and not inv.late and name not in ("owe", "release"):  # no guard
                yield self._timeout(s, inv)
        if s.crashes:
            yield self._crash(s, inv)

    def _all_steps(self, s: State) -> Iterator[tuple[Step, State, Violation | None]]:
        c = self.config
        # the producer
        for k, send in enumerate(c.sends):
            if send.optional and not s.resent >> k & 1 and send.earliest <= s.clock <= send.latest:
                w = _World(self, s)
                mid = w.next_mid
                w.next_mid += 1
                w.queue.append(self._new_msg(mid, send, s.clock))
                w.resent |= 1 << k
                w.sent |= 1 << send.content
                yield ("send", send.content, mid), w.freeze(), w.violation
        # Lambda receives
        if len(s.invs) < c.concurrency:
            for batch in self._batches(s):
                yield self._receive(s, batch)
        # invocations
        for inv in s.invs:
            yield from self._inv_steps(s, inv)
        # SQS's own redrive (a failed or orphaned message is VISIBLE: its visibility timeout
        # may pass at any moment, so the next receive may take it)
        for m in s.queue:
            if m.state == VISIBLE and m.rc >= self.max_receive:
                yield self._sqs_redrive(s, m)
        # time, TTL, the operator
        if (
            c.time
            and s.clock < c.time
            and not s.invs
            and all(s.clock + 1 - m.sent_at <= c.source_retention for m in s.queue)
        ):
            # Between invocations, and never past a message's retention: a message SQS
            # deletes unread is outside the promise.
            yield self._tick(s)
        for e, claim in enumerate(s.claims):
            if claim is not None and 0 <= claim.expires < s.clock:
                w = _World(self, s)
                w.claims[e] = None
                yield ("ttl-delete", e), w.freeze(), w.violation
        for rid in sorted({r for r, _, expires in s.receipts if 0 <= expires < s.clock}):
            w = _World(self, s)
            w.receipts = frozenset(x for x in s.receipts if x[0] != rid)
            yield ("receipt-ttl-delete", rid), w.freeze(), w.violation
        if s.redrives:
            for copy in s.dlq:
                yield self._ops_redrive(s, copy)
            if c.native_move or "native-move-allowed" in self.mut:
                for copy in s.dlq:
                    yield self._native_move(s, copy)

    def at_rest(self, s: State) -> bool:
        """Nothing in flight: no invocation, no message in the source queue."""
        return not s.invs and not s.queue

    def final_violation(self, s: State) -> Violation | None:
        """At a state with no successor: the run is over."""
        only = self.config.only
        if s.invs or s.queue:
            if only is None or "quiescent" in only:
                return Violation("quiescent", "no step is possible, yet the run is not over")
            return None
        for content, (event, body, *_) in enumerate(self.config.contents):
            bit = 1 << content
            if not s.sent & bit or (s.dead | s.lost) & bit:
                continue
            if (event < 0 or body not in s.effects[event]) and (
                only is None or "exactly-once" in only
            ):
                return Violation(
                    "exactly-once",
                    f"{self.content_name(content)} was sent; its effect was never applied "
                    "and no DLQ copy of it exists",
                )
        excused = self.excused(s)
        for event, effects in enumerate(s.effects):
            owed = excused >> event & 1
            if effects and not s.notes[event] and not owed and (only is None or "notified" in only):
                return Violation(
                    "notified",
                    f"{self.config.events[event]}'s effect was applied, no notification was "
                    "published and no DLQ copy says it is owed",
                )
        return None

    def owing(self, copy: Copy) -> bool:
        """A DLQ copy that says its event's notification is, or may be, owed."""
        return copy.kind == "" or copy.kind in self.owing_kinds

    def excused(self, s: State) -> int:
        """Events whose missing notification a DLQ copy explains: an owing copy IN the DLQ now
        (one the operator redrove excuses nothing any more: its redelivery must publish, or
        leave an owing copy again), or one the DLQ's retention deleted."""
        bits = s.owed_lost
        for copy in s.dlq:
            if self.owing(copy):
                bits |= self._event_bit(copy.content)
        return bits

    # --- receive -------------------------------------------------------------------------------
    def _eligible_standard(self, s: State) -> list[Msg]:
        return [m for m in s.queue if m.state == VISIBLE and m.rc < self.max_receive]

    def _batches(self, s: State) -> Iterator[tuple[Msg, ...]]:
        size = self.config.batch
        if not self.fifo:
            eligible = self._eligible_standard(s)
            for n in range(1, min(size, len(eligible)) + 1):
                yield from itertools.combinations(eligible, n)
            return
        groups: dict[str | None, list[Msg]] = {}
        blocked: set[str | None] = set()
        for m in s.queue:
            if m.state != VISIBLE:
                blocked.add(m.group)
            elif m.group not in blocked:
                groups.setdefault(m.group, []).append(m)
        heads = [
            (g, ms) for g, ms in groups.items() if g not in blocked and ms[0].rc < self.max_receive
        ]
        choices: list[list[tuple[Msg, ...]]] = []
        for _, ms in heads:
            prefix: list[Msg] = []
            options: list[tuple[Msg, ...]] = [()]
            for m in ms:
                if m.rc >= self.max_receive:
                    break  # SQS moves it before anything after it is returned
                prefix.append(m)
                options.append(tuple(prefix))
            choices.append(options)
        order = {m.mid: n for n, m in enumerate(s.queue)}
        for combo in itertools.product(*choices):
            batch = [m for part in combo for m in part]
            if 1 <= len(batch) <= size:
                yield tuple(sorted(batch, key=lambda m: order[m.mid]))

    def _first_seen(self, m: Msg) -> int:
        seen = [m.sent_at]
        if m.carried >= 0:
            seen.append(m.carried)
        if m.event_time >= 0:
            seen.append(m.event_time)
        return min(seen)

    def _receive(self, s: State, batch: Sequence[Msg]) -> tuple[Step, State, Violation | None]:
        w = _World(self, s)
        iid = batch[0].mid
        recs = []
        for i, m in enumerate(batch):
            w.set_msg(_msg((*m[:6], m.rc + 1, INFLIGHT, iid, m.last_end)))
            rec = Rec(i, m.mid, m.content, m.group, m.rc + 1, self._first_seen(m))
            # BatchRun._decode_all: poison, then the dedup horizon (StateTableClaims only)
            if self.config.contents[m.content].event < 0:
                rec = rec._replace(stage=POISON, kind="not_json")
            elif self.f.horizon and not self.item and rec.first_seen + self.ttl <= s.clock:
                if self.horizon_reads_claim:  # never written: its claim is read first
                    rec = rec._replace(stage=NEED_READ, beyond=True)
                else:
                    rec = rec._replace(stage=POISON, kind="beyond_dedup_horizon")
            recs.append(rec)
        # BatchRun._mark_in_batch_duplicates (the fingerprint: another body is a conflict)
        first: dict[int, int] = {}
        for n, rec in enumerate(recs):
            if rec.stage != PARSED:
                continue
            event, body = self.config.contents[rec.content][:2]
            if event not in first:
                first[event] = rec.i
            else:  # judged in resolve_shadows, once the first's verdict is known
                differs = (
                    self.f.fingerprint
                    and self.config.contents[recs[first[event]].content].body != body
                )
                if differs and "early-in-batch-conflict" in self.mut:
                    recs[n] = rec._replace(stage=POISON, kind="conflicting_duplicate")
                else:
                    recs[n] = rec._replace(shadow=first[event], differs=differs)
        cont: list[tuple[Any, ...]] = []
        if self.fifo:
            cont.append(("qnow",))
        cont += [("commit",), ("read",), ("receipts",), ("rows",), ("rowread",), ("release",)]
        cont += [("publish",), ("status",), ("end",)]
        if "mark-before-publish" in self.mut:
            cont = [x for x in cont if x[0] != "status"]
            cont.insert(cont.index(("publish",)), ("status-early",))
        receipt = -1
        if self.f.receipts and any(r.stage == PARSED for r in recs):
            receipt = w.next_receipt  # BatchRun._assign_receipt: one per batch
            w.next_receipt += 1
        inv = _Inv(self, iid, s.clock, recs, cont, False, receipt)
        inv.settle()
        w.invs.append(inv.freeze())
        step = ("receive", iid, tuple((m.mid, m.content, m.rc + 1) for m in batch))
        return step, w.freeze(), w.violation

    # --- calls ---------------------------------------------------------------------------------
    def _outcomes(self, s: State, inv: Inv) -> list[tuple[tuple[Any, ...], int]]:
        """Every outcome the call may have and its fault cost: a pure function of the call and
        the configuration, computed once per call."""
        cached = self._outcome_cache.get(inv.call)
        if cached is None:
            cached = self._outcome_cache[inv.call] = self._outcomes_of(inv.call)
        return cached

    def _outcomes_of(self, call: tuple[str, tuple[int, ...]]) -> list[tuple[tuple[Any, ...], int]]:
        name, idxs = call
        kinds = self.config.fault_kinds
        out: list[tuple[tuple[Any, ...], int]] = [(("ok",), 0)]

        def per(kind: str) -> None:
            if kind in kinds:
                out.extend(((kind, i), 1) for i in idxs)

        def whole(*names: str) -> None:
            out.extend(((k,), 1) for k in names if k in kinds)

        if name == "quarantine":
            whole("dlq-fail", "dlq-ambiguous")
            if len(idxs) > 1:
                per("dlq-entry")
        elif name in ("insert", "transact"):
            whole("commit-fail", "commit-ambiguous")
            if name == "insert":
                per("stmt-transient")
        elif name == "read":
            whole("read-fail")
            per("read-unprocessed")
        elif name == "publish":
            whole("publish-fail", "publish-ambiguous")
            per("entry-transient")
            per("entry-sender")
            per("entry-ambiguous")
        elif name == "mark":
            whole("mark-fail", "mark-ambiguous")
            per("stmt-transient")
        elif name == "owe":
            whole("owe-fail")
        elif name == "receipt-read":
            whole("read-fail")
        elif name == "receipt-write":
            whole("receipt-fail", "receipt-ambiguous")
        elif name == "row-insert":
            whole("commit-fail", "commit-ambiguous")
            per("stmt-transient")
        elif name == "row-read":
            whole("read-fail")
            per("read-unprocessed")
        elif name == "release":
            whole("release-fail")
        elif name == "early-publish":
            pass
        return out

    def _call(
        self, s: State, inv: Inv, outcome: tuple[Any, ...], cost: int
    ) -> tuple[Step, State, Violation | None]:
        w = _World(self, s)
        w.faults -= cost
        x = _Inv.thaw(self, inv)
        name, idxs = inv.call
        mids = tuple(x.recs[i].mid for i in idxs)
        getattr(x, "call_" + name.replace("-", "_"))(w, idxs, outcome)
        x.settle()
        w.replace_inv(inv.iid, x.freeze())
        return ("call", inv.iid, name, mids, outcome), w.freeze(), w.violation

    def _timeout(self, s: State, inv: Inv) -> tuple[Step, State, Violation | None]:
        w = _World(self, s)
        w.crashes -= 1
        x = _Inv.thaw(self, inv)
        x.late = True
        x.settle()
        w.replace_inv(inv.iid, x.freeze())
        return ("timeout", inv.iid, inv.call[0]), w.freeze(), w.violation

    def _crash(self, s: State, inv: Inv) -> tuple[Step, State, Violation | None]:
        w = _World(self, s)
        w.crashes -= 1
        w.invs = [v for v in w.invs if v.iid != inv.iid]
        for rec in inv.recs:
            m = w.msg(rec.mid)
            if m is not None and m.holder == inv.iid:
                w.set_msg(_msg((*m[:7], VISIBLE, -1, "died")))
        return ("crash", inv.iid, inv.call[0]), w.freeze(), w.violation

    def _return(self, s: State, inv: Inv) -> tuple[Step, State, Violation | None]:
        w = _World(self, s)
        w.invs = [v for v in w.invs if v.iid != inv.iid]
        for rec in inv.recs:
            m = w.msg(rec.mid)
            if m is None or m.holder != inv.iid:
                continue  # gone (retention)
            if rec.outcome == FAILED and "failures-not-reported" not in self.mut:
                w.set_msg(_msg((*m[:7], VISIBLE, -1, rec.why)))
            else:
                w.delete(m, f"i{inv.iid} acknowledged m{m.mid} ({OUTCOME_NAMES[rec.outcome]})")
        return ("return", inv.iid), w.freeze(), w.violation

    # --- SQS, time, the operator ---------------------------------------------------------------
    def _sqs_redrive(self, s: State, m: Msg) -> tuple[Step, State, Violation | None]:
        w = _World(self, s)
        w.queue = [q for q in w.queue if q.mid != m.mid]
        sent_at = s.clock if self.fifo else m.sent_at
        copy = Copy(
            w.next_cid, m.content, "", False, sent_at, m.carried, m.event_time, m.group, m.mid
        )
        w.next_cid += 1
        if m.last_end not in ("died", "guard", "dlqfail"):
            w.flag(
                "dlq-explained",
                f"SQS moved m{m.mid} to the DLQ bare although its last receive ended "
                f"'{m.last_end}' (not a death, a time-out or a failed quarantine)",
            )
        w.add_copy(copy)
        return ("sqs-redrive", m.mid), w.freeze(), w.violation

    def _event_bit(self, content: int) -> int:
        event = self.config.contents[content].event
        return 0 if event < 0 else 1 << event

    def _tick(self, s: State) -> tuple[Step, State, Violation | None]:
        w = _World(self, s)
        w.clock += 1
        kept = []
        for m in w.queue:
            if w.clock - m.sent_at > self.config.source_retention:
                w.lost |= 1 << m.content
            else:
                kept.append(m)
        w.queue = kept
        dlq = []
        for d in w.dlq:
            if w.clock - d.sent_at <= self.config.dlq_retention:
                dlq.append(d)
            elif self.owing(d):  # the operator let it expire: outside the promise
                w.owed_lost |= self._event_bit(d.content)
        w.dlq = dlq
        return ("tick",), w.freeze(), w.violation

    def _ops_redrive(self, s: State, copy: Copy) -> tuple[Step, State, Violation | None]:
        """``ops redrive`` (receive, send, delete): the copy's first-seen attribute, or for a
        bare copy one established from its SentTimestamp (``ops.dlq.bare_first_seen_ms``)."""
        carried = copy.carried
        if carried < 0 and self.f.redrive_carries_sent_time:
            carried = copy.sent_at
            if (
                self.fifo
                and self.f.redrive_fifo_before_retention
                and "fifo-stamps-dlq-time" not in self.mut
            ):
                # A FIFO DLQ reset the enqueue time when SQS moved it: the original was sent
                # at most one source retention earlier.
                carried = max(0, copy.sent_at - self.config.source_retention)
        step, state, violation = self._redrive(s, copy, carried)
        return ("ops-redrive", *step), state, violation

    def _native_move(self, s: State, copy: Copy) -> tuple[Step, State, Violation | None]:
        """StartMessageMoveTask: a new message, the copy's attributes kept; nothing is
        established for a bare copy (its SentTimestamp, the only proof of its age, is
        replaced)."""
        step, state, violation = self._redrive(s, copy, copy.carried)
        return ("native-move", *step), state, violation

    def _redrive(
        self, s: State, copy: Copy, carried: int
    ) -> tuple[tuple[int, int], State, Violation | None]:
        w = _World(self, s)
        w.redrives -= 1
        w.dlq = [d for d in w.dlq if d.cid != copy.cid]
        mid = w.next_mid
        w.next_mid += 1
        w.queue.append(
            Msg(
                mid, copy.content, copy.group, s.clock, carried, copy.event_time, 0, VISIBLE, -1, ""
            )
        )
        return (copy.cid, mid), w.freeze(), w.violation


def _outcome(outcome: tuple[Any, ...]) -> str:
    if len(outcome) == 1:
        return str(outcome[0])
    return f"{outcome[0]} on record {outcome[1]}"


class _World:
    """A mutable copy of the shared state for one transition; ``freeze`` makes the state."""

    def __init__(self, model: Model, s: State) -> None:
        self.model = model
        self.clock = s.clock
        self.queue = list(s.queue)
        self.dlq = list(s.dlq)
        self.claims = list(s.claims)
        self.effects = list(s.effects)
        self.notes = list(s.notes)
        self.dead = s.dead
        self.owed_lost = s.owed_lost
        self.lost = s.lost
        self.sent = s.sent
        self.invs = list(s.invs)
        self.next_mid = s.next_mid
        self.next_cid = s.next_cid
        self.crashes = s.crashes
        self.faults = s.faults
        self.redrives = s.redrives
        self.resent = s.resent
        self.dlq_sources = s.dlq_sources
        self.receipts = s.receipts
        self.next_receipt = s.next_receipt
        self.rows = list(s.rows)
        self.violation: Violation | None = None

    def _canonical_receipts(self) -> None:
        """Receipt ids are only compared for equality: renumber them in an order that does not
        depend on their numbers (the claims, the invocations, then what the receipts list), so
        runs that differ only in which batch drew which id meet in one state."""
        # The checker's hottest function: field positions, not names, no closure; the order of
        # the receipts' own ids is a pure function of the receipts (in their iteration order).
        ids: dict[int, int] = {}
        moved = False
        for claim in self.claims:
            if claim is not None:
                rid = claim.receipt
                if rid >= 0 and rid not in ids:
                    moved = moved or rid != len(ids)
                    ids[rid] = len(ids)
        invs = sorted(self.invs)
        for inv in invs:
            rid = inv.receipt
            if rid >= 0 and rid not in ids:
                moved = moved or rid != len(ids)
                ids[rid] = len(ids)
            for r in inv.recs:
                rid = r.found
                if rid >= 0 and rid not in ids:
                    moved = moved or rid != len(ids)
                    ids[rid] = len(ids)
        if self.receipts:
            key = tuple(self.receipts)
            order = self.model._receipt_order.get(key)
            if order is None:
                listed: dict[int, list[int]] = {}
                for rid, event, _ in key:
                    listed.setdefault(rid, []).append(event)
                order = sorted(listed, key=lambda r: sorted(listed[r]))
                self.model._receipt_order[key] = order
            for rid in order:
                if rid not in ids:
                    moved = moved or rid != len(ids)
                    ids[rid] = len(ids)
        if not moved and self.next_receipt == len(ids):
            return
        mapped = {-1: -1, **ids}
        self.claims = [
            None if c is None else _claim((*c[:_CLAIM_RECEIPT], mapped[c.receipt]))
            for c in self.claims
        ]
        self.invs = [
            _inv(
                (
                    *inv[:_INV_RECS],
                    tuple(
                        _rec((*r[:_REC_FOUND], mapped[r.found], *r[_REC_FOUND + 1 :]))
                        if r.found >= 0
                        else r
                        for r in inv.recs
                    ),
                    *inv[_INV_RECS + 1 : _INV_RECEIPT],
                    mapped[inv.receipt],
                )
            )
            for inv in invs
        ]
        self.receipts = frozenset(
            (mapped[rid], event, expires) for rid, event, expires in self.receipts
        )
        self.next_receipt = len(ids)

    def freeze(self) -> State:
        if self.model.f.receipts:
            self._canonical_receipts()
        return State(
            self.clock,
            tuple(self.queue),
            tuple(self.dlq),
            tuple(self.claims),
            tuple(self.effects),
            tuple(self.notes),
            self.dead,
            self.owed_lost,
            self.lost,
            self.sent,
            tuple(sorted(self.invs)),
            self.next_mid,
            self.next_cid,
            self.crashes,
            self.faults,
            self.redrives,
            self.resent,
            self.dlq_sources,
            self.receipts,
            self.next_receipt,
            tuple(self.rows),
        )

    def flag(self, invariant: str, detail: str) -> None:
        only = self.model.config.only
        if self.violation is None and (only is None or invariant in only):
            self.violation = Violation(invariant, detail)

    def msg(self, mid: int) -> Msg | None:
        for m in self.queue:
            if m.mid == mid:
                return m
        return None

    def set_msg(self, new: Msg) -> None:
        self.queue = [new if m.mid == new.mid else m for m in self.queue]

    def replace_inv(self, iid: int, new: Inv) -> None:
        self.invs = [new if v.iid == iid else v for v in self.invs]

    def dead_event(self, event: int) -> bool:
        contents = self.model.config.contents
        return any(self.dead >> n & 1 for n, c in enumerate(contents) if c.event == event)

    # --- the facts invariants read ---------------------------------------------------------------
    def apply_effect(self, content: int, why: str) -> None:
        event, body = self.model.config.contents[content][:2]
        if self.effects[event]:
            self.flag(
                "at-most-once",
                f"{self.model.config.events[event]}'s effect applied a second time ({why})",
            )
        else:
            for before in self.model.earlier.get(event, ()):
                if not self.effects[before] and not self.dead_event(before):
                    self.flag(
                        "fifo-order",
                        f"{self.model.config.events[event]}'s effect applied before that of "
                        f"{self.model.config.events[before]}, sent earlier in its group",
                    )
        self.effects[event] = (*self.effects[event], body)[:2]

    def publish(self, content: int) -> None:
        event = self.model.config.contents[content].event
        name = self.model.config.events[event]
        if not self.effects[event]:
            self.flag("notify-after-effect", f"{name}'s notification published before its effect")
        if not self.notes[event]:
            for before in self.model.earlier.get(event, ()):
                if not self.notes[before] and not self.dead_event(before):
                    self.flag(
                        "fifo-order",
                        f"{name}'s first notification published before that of "
                        f"{self.model.config.events[before]}, sent earlier in its group",
                    )
        self.notes[event] = min(2, self.notes[event] + 1)

    def add_copy(self, copy: Copy) -> None:
        if self.model.fifo and copy.kind:
            if copy.source in self.dlq_sources:
                return  # FIFO DLQ: the original message id is the deduplication id
            self.dlq_sources = self.dlq_sources | {copy.source}
        self.dlq.append(copy)
        self.dead |= 1 << copy.content

    def quarantine(self, rec: Rec, now: int) -> None:
        model = self.model
        config = model.config
        event = config.contents[rec.content].event
        reason = "quarantine-without-reason" not in model.mut
        if not reason:
            self.flag("dlq-explained", f"m{rec.mid} quarantined without a kind or a reason")
        claim = self.claims[event] if event >= 0 else None
        # a conflicting duplicate has another content than the claim's (or, in its batch,
        # than an earlier record's): never the content the claim holds
        owns = claim is not None and claim.body == config.contents[rec.content].body
        truth = {
            "not_json": event < 0,
            "notification_owed": event >= 0 and bool(self.effects[event]),
            "retries_exhausted": rec.rc >= model.max_receive,
            "beyond_dedup_horizon": rec.first_seen + model.ttl <= now
            and now - rec.first_seen >= config.source_retention + config.dlq_retention,
            # another content than the claim's (or, in the batch, than an earlier record's):
            # never the content the claim holds
            "conflicting_duplicate": event >= 0 and not owns,
            # another event's row already at this content's business key (DomainKeyedCreate)
            "semantic": event >= 0
            and model.domain
            and self.rows[model.row_of(rec.content)] >= 0
            and config.contents[self.rows[model.row_of(rec.content)]].event != event,
        }.get(rec.kind, False)
        if not truth:
            self.flag(
                "dlq-explained",
                f"m{rec.mid} ({model.content_name(rec.content)}) quarantined as "
                f"'{rec.kind}', which is not true of it",
            )
        carried = rec.first_seen if model.f.horizon else -1
        m = self.msg(rec.mid)
        event_time = m.event_time if m is not None else -1
        copy = Copy(
            self.next_cid,
            rec.content,
            rec.kind,
            reason,
            now,
            carried,
            event_time,
            rec.group,
            rec.mid,
        )
        self.next_cid += 1
        self.add_copy(copy)

    def delete(self, m: Msg, why: str) -> None:
        event, body = self.model.config.contents[m.content][:2]
        applied = event >= 0 and body in self.effects[event]
        if not applied and not self.dead >> m.content & 1:
            self.flag(
                "no-silent-delete",
                f"{why}: {self.model.content_name(m.content)} has no effect and no DLQ copy",
            )
        self.queue = [q for q in self.queue if q.mid != m.mid]


def _rec(values: tuple[Any, ...]) -> Rec:
    return tuple.__new__(Rec, values)


def _claim(values: tuple[Any, ...]) -> Claim:
    return tuple.__new__(Claim, values)


def _inv(values: tuple[Any, ...]) -> Inv:
    return tuple.__new__(Inv, values)


def _msg(values: tuple[Any, ...]) -> Msg:
    return tuple.__new__(Msg, values)


# Field positions for the hot paths (NamedTuple._replace costs a dict and a map per call).
_CLAIM_STATUS, _CLAIM_BODY, _CLAIM_OWED, _CLAIM_RECEIPT = (
    Claim._fields.index(f) for f in ("status", "body", "owed", "receipt")
)
_INV_RECS, _INV_RECEIPT = Inv._fields.index("recs"), Inv._fields.index("receipt")
_REC_DUPLICATE, _REC_FOUND, _REC_RELEASE = (
    Rec._fields.index(f) for f in ("duplicate", "found", "release")
)
# The slices below rely on these positions (the last field of Claim and Inv, Msg's tail).
assert Claim._fields[_CLAIM_RECEIPT:] == ("receipt",)
assert Inv._fields[_INV_RECEIPT:] == ("receipt",) and _INV_RECS < _INV_RECEIPT
assert Msg._fields[6:] == ("rc", "state", "holder", "last_end")


_CALL_OF_CHUNK = {
    "insert": "insert",
    "transact": "transact",
    "readchunk": "read",
    "receiptchunk": "receipt-read",
    "receiptwrite": "receipt-write",
    "statuschunk": "mark",
    "early-publish": "early-publish",
    "rowchunk": "row-insert",
    "rowreadchunk": "row-read",
}
"""The continuation steps that make one AWS call on their records, and the call's name."""


class _Inv:
    """A mutable invocation: the records of its batch and where ``BatchRun.run`` is."""

    def __init__(
        self,
        model: Model,
        iid: int,
        now: int,
        recs: list[Rec],
        cont: list[tuple[Any, ...]],
        late: bool,
        receipt: int = -1,
    ) -> None:
        self.model = model
        self.iid = iid
        self.now = now
        self.recs = recs
        self.cont = cont
        self.late = late
        self.receipt = receipt
        self.call: tuple[str, tuple[int, ...]] = ("return", ())

    @classmethod
    def thaw(cls, model: Model, inv: Inv) -> _Inv:
        x = cls(model, inv.iid, inv.now, list(inv.recs), list(inv.cont), inv.late, inv.receipt)
        x.call = inv.call
        return x

    def freeze(self) -> Inv:
        return Inv(
            self.iid,
            self.now,
            tuple(self.recs),
            tuple(self.cont),
            self.late,
            self.call,
            self.receipt,
        )

    # --- record helpers (RecordState.poison / fail / finish) -------------------------------------
    # (NamedTuple._replace is the checker's hottest path: these build the tuple directly.)
    def poison(self, i: int, kind: str) -> None:
        r = self.recs[i]
        self.recs[i] = _rec((*r[:6], POISON, NO_OUTCOME, kind, *r[9:]))

    def fail(self, i: int, why: str) -> None:
        r = self.recs[i]
        self.recs[i] = _rec((*r[:6], DONE, FAILED, r[8], why, *r[10:]))

    def finish(self, i: int, outcome: int) -> None:
        r = self.recs[i]
        self.recs[i] = _rec((*r[:6], DONE, outcome, *r[8:]))

    def stage(self, i: int, stage: int) -> None:
        r = self.recs[i]
        self.recs[i] = _rec((*r[:6], stage, *r[7:]))

    def event(self, i: int) -> int:
        return self.model.config.contents[self.recs[i].content].event

    def body(self, i: int) -> int:
        return self.model.config.contents[self.recs[i].content].body

    def live(self, stage: int) -> list[int]:
        return [r.i for r in self.recs if r.stage == stage and r.shadow < 0]

    def hold_back(self, idxs: Sequence[int]) -> list[int]:
        """``BatchRun._hold_back``."""
        if not self.model.fifo or "no-fifo-hold" in self.model.mut:
            return list(idxs)
        first: dict[str | None, int] = {}
        for r in self.recs:
            if r.outcome == FAILED and r.group is not None:
                first.setdefault(r.group, r.i)
        kept = []
        for i in idxs:
            r = self.recs[i]
            if r.outcome in (FAILED, QUARANTINED):
                continue
            if r.group is not None and first.get(r.group, i) < i:
                self.fail(i, "holdback")
            else:
                kept.append(i)
        return kept

    # --- BatchRun.run, up to the next AWS call ---------------------------------------------------
    def settle(self) -> None:
        """Run to the next AWS call (or the return): a pure function of the records, the
        continuation, ``late`` and the receipt id (the world is not read), so each distinct
        invocation is settled once per model."""
        key = (tuple(self.recs), tuple(self.cont), self.late, self.receipt)
        settled = self.model._settled.get(key)
        if settled is None:
            self._settle()
            settled = self.model._settled[key] = (tuple(self.recs), tuple(self.cont), self.call)
        recs, cont, self.call = settled
        self.recs, self.cont = list(recs), list(cont)

    def _settle(self) -> None:
        m = self.model
        cont = self.cont
        while cont:
            head = cont[0]
            k = head[0]
            if k == "qnow":  # BatchRun._quarantine_now
                cont[0] = ("q",)
                if not m.fifo:
                    cont.pop(0)
                continue
            if k == "q":  # BatchRun._quarantine
                poison = self.hold_back([r.i for r in self.recs if r.stage == POISON])
                if poison and not self.late:
                    self.call = ("quarantine", tuple(poison))
                    return
                for i in poison:
                    self.fail(i, "guard")
                cont.pop(0)
                continue
            if k == "commit":  # BatchRun._commit_all
                cont.pop(0)
                live = self.live(PARSED)
                # INSERTs: the claim-carrying row (item), or the claim before its row (domain)
                inserts = [i for i in live if (m.item or m.domain) and not m.fifo]
                transact = [i for i in live if i not in inserts]
                plan: list[tuple[Any, ...]] = []
                if "publish-before-commit" in m.mut and live:
                    plan.append(("early-publish", tuple(live)))
                if inserts:
                    plan.append(("insert", tuple(inserts), 1))
                if transact:
                    plan.append(("transact", tuple(transact)))
                cont[0:0] = plan
                continue
            if k == "rows":  # BatchRun._write_rows: <= 25, one statement per row key a call
                cont.pop(0)
                calls: list[list[int]] = []
                for i in self.live(NEED_ROW):
                    row = m.row_of(self.recs[i].content)
                    for call in calls:
                        if all(m.row_of(self.recs[j].content) != row for j in call):
                            call.append(i)
                            break
                    else:
                        calls.append([i])
                cont[0:0] = [("rowchunk", tuple(c), 1) for c in calls]
                continue
            if k == "rowread":  # BatchRun._read_rows
                cont.pop(0)
                pending = self.live(NEED_ROW_READ)
                if pending:
                    cont.insert(0, ("rowreadchunk", tuple(pending), 1))
                continue
            if k == "release":  # BatchRun._release_claims: one DeleteItem each, no time guard
                cont.pop(0)
                plan = [("releaseone", r.i) for r in self.recs if r.release]
                cont[0:0] = plan
                continue
            if k == "releaseone":
                self.call = ("release", (head[1],))
                return
            if k == "receipts":  # BatchRun._read_receipts
                cont.pop(0)
                pending = self.hold_back(self.live(NEED_RECEIPT))
                if pending:
                    cont.insert(0, ("receiptchunk", tuple(pending), 1))
                continue
            if k in _CALL_OF_CHUNK:
                todo = list(head[1])
                if k == "transact":
                    todo = self.hold_back(todo)
                if todo and not self.late:
                    cont[0] = (k, tuple(todo), *head[2:])
                    name = _CALL_OF_CHUNK[k]
                    self.call = (name, tuple(todo))
                    return
                for i in todo:
                    self.fail(i, "guard")
                cont.pop(0)
                continue
            if k == "read":  # BatchRun._read_statuses
                cont.pop(0)
                pending = self.hold_back(self.live(NEED_READ))
                if pending:
                    cont.insert(0, ("readchunk", tuple(pending), 1))
                continue
            if k == "publish":  # BatchRun._publish + notify.chunk_entries
                cont.pop(0)
                pending = self.hold_back(self.live(NEED_PUBLISH))
                plan = []
                for chunk in self._chunks(pending):
                    plan += [("chunk", chunk), ("qnow",)]
                cont[0:0] = plan
                continue
            if k == "chunk":  # BatchRun._publish_chunk
                live_recs = self.hold_back(head[1])
                if live_recs and not self.late:
                    cont[0] = ("chunk", tuple(live_recs))
                    self.call = ("publish", tuple(live_recs))
                    return
                for i in live_recs:
                    self.fail(i, "guard")
                cont.pop(0)
                continue
            if k == "owe":  # StateTableClaims/ItemClaims.record_owed: no time guard
                self.call = ("owe", (head[1],))
                return
            if k in ("status", "status-early"):  # BatchRun._write_statuses
                cont.pop(0)
                todo = self.live(NEED_STATUS if k == "status" else NEED_PUBLISH)
                plan = []
                if k == "status" and self.receipt >= 0:
                    fresh = tuple(i for i in todo if not self.recs[i].duplicate)
                    if fresh:  # the batch's receipt lists them; the claims stay pending
                        plan.append(("receiptwrite", fresh))
                    todo = [i for i in todo if self.recs[i].duplicate]
                if todo:
                    plan.append(("statuschunk", tuple(todo), 1))
                cont[0:0] = plan
                continue
            if k == "end":
                cont.pop(0)
                self.resolve_shadows()
                self.hold_back(range(len(self.recs)))
                cont[0:0] = [("q",), ("hold",), ("exhaust",)]
                continue
            if k == "hold":
                cont.pop(0)
                self.hold_back(range(len(self.recs)))
                continue
            if k == "exhaust":  # BatchRun._quarantine_exhausted
                cont.pop(0)
                if "no-last-receive-quarantine" in m.mut:
                    continue
                exhausted = [
                    r.i for r in self.recs if r.outcome == FAILED and r.rc >= m.max_receive
                ]
                for i in exhausted:
                    self.poison(i, "retries_exhausted")
                if exhausted:
                    cont.insert(0, ("q",))
                continue
            raise AssertionError(f"unknown step {head}")  # pragma: no cover
        for r in self.recs:  # BatchRun.run: every record ends somewhere
            if r.stage != DONE:
                self.fail(r.i, "unfinished")
        self.call = ("return", ())

    def _chunks(self, pending: Sequence[int]) -> list[tuple[int, ...]]:
        """notify.chunk_entries: <= 10 entries; FIFO: one entry per message group."""
        chunks: list[list[int]] = []
        current: list[int] = []
        groups: set[str | None] = set()
        for i in pending:
            group = self.recs[i].group
            taken = self.model.fifo and group is not None and group in groups
            if current and (taken or len(current) >= 10):
                chunks.append(current)
                current, groups = [], set()
            current.append(i)
            if group is not None:
                groups.add(group)
        if current:
            chunks.append(current)
        return [tuple(c) for c in chunks]

    def resolve_shadows(self) -> None:
        """``BatchRun._resolve_shadows``."""
        ok = (PROCESSED, REPUBLISHED, SKIPPED)
        for r in list(self.recs):
            if r.shadow < 0:
                continue
            first = self.recs[r.shadow]
            self.recs[r.i] = _rec((*r[:_REC_DUPLICATE], True, *r[_REC_DUPLICATE + 1 :]))
            if r.differs:  # a conflict only where the claim holds the first copy's content
                if first.outcome in ok:
                    self.poison(r.i, "conflicting_duplicate")
                else:
                    self.fail(r.i, "shadow-differs")
            elif "shadow-ignores-first" in self.model.mut or first.outcome in ok:
                self.finish(r.i, SKIPPED)
            else:
                self.fail(r.i, "shadow")

    def apply_status(self, i: int, claim: Claim) -> None:
        """``BatchRun._duplicate`` / ``_apply_status`` with the claim's verdict."""
        r = self.recs[i]
        self.recs[i] = _rec((*r[:_REC_DUPLICATE], True, *r[_REC_DUPLICATE + 1 :]))
        if self.model.f.fingerprint and claim.body != self.body(i):
            self.poison(i, "conflicting_duplicate")
        elif claim.status == "sent" or "pending-as-sent" in self.model.mut:
            self.finish(i, SKIPPED)
        elif claim.receipt >= 0:  # published if its receipt lists it (BatchRun._read_receipts)
            r = self.recs[i]
            self.recs[i] = _rec((*r[:_REC_FOUND], claim.receipt, *r[_REC_FOUND + 1 :]))
            self.stage(i, NEED_RECEIPT)
        else:
            self.to_publish(i)

    def to_publish(self, i: int) -> None:
        """``BatchRun._to_publish``: a pending claim's notification may be owed; a claim whose
        row comes after it (DomainKeyedCreate, standard queue) completes or verifies it first."""
        self.stage(i, NEED_ROW if self.model.domain and not self.model.fifo else NEED_PUBLISH)

    def committed(self, i: int) -> None:
        self.stage(i, NEED_PUBLISH)  # every modelled consumer notifies

    def new_claim(self) -> Claim:
        expires = -1 if self.model.item else self.now + self.model.ttl
        return Claim("pending", 0, expires, False, self.receipt)

    # --- the calls -------------------------------------------------------------------------------
    def call_quarantine(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        kind = outcome[0]
        for i in idxs:
            lost = kind == "dlq-fail" or (kind == "dlq-entry" and outcome[1] == i)
            if not lost:
                w.quarantine(self.recs[i], self.now)
            if lost or kind == "dlq-ambiguous":
                self.fail(i, "dlqfail")
            else:
                self.finish(i, QUARANTINED)
        self.cont.pop(0)

    def statement_round(
        self, outcome: tuple[Any, ...], failure: str, reason: str, apply: Callable[[int], None]
    ) -> None:
        """One PartiQL batch of the continuation's records: the whole call refused
        (``failure``: every record fails), one statement refused transiently (that record
        again alone, up to 3 attempts), or ``apply(i)`` for each other record."""
        kind = outcome[0]
        step, todo, attempt = self.cont[0]
        if kind == failure:
            for i in todo:
                self.fail(i, reason)
            self.cont.pop(0)
            return
        retry = []
        for i in todo:
            if kind == "stmt-transient" and outcome[1] == i:
                if attempt < 3:
                    retry.append(i)
                else:
                    self.fail(i, reason)
                continue
            apply(i)
        if retry:
            self.cont[0] = (step, tuple(retry), attempt + 1)
        else:
            self.cont.pop(0)

    def call_insert(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        def insert(i: int) -> None:
            event = self.event(i)
            existing = w.claims[event]
            if existing is None:
                w.claims[event] = self.new_claim()._replace(body=self.body(i))
                if self.model.domain:  # the claim alone: its row comes next
                    self.stage(i, NEED_ROW)
                else:
                    w.apply_effect(self.recs[i].content, f"INSERT by m{self.recs[i].mid}")
                    self.committed(i)
            else:
                self.recs[i] = self.recs[i]._replace(key_existed=True, duplicate=True)
                if self.model.domain and "row-before-claim" in self.model.mut:
                    self.stage(i, NEED_ROW)  # the mutation: no verdict on the claim first
                else:
                    self.stage(i, NEED_READ)  # DuplicateItem carries no item: read it
            if outcome[0] == "commit-ambiguous":
                self.fail(i, "commit")

        self.statement_round(outcome, "commit-fail", "commit", insert)

    def call_transact(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        kind = outcome[0]
        todo = list(idxs)
        if "write-before-claim" in self.model.mut and kind != "commit-fail":
            for i in todo:
                w.apply_effect(self.recs[i].content, f"business write of m{self.recs[i].mid}")
        if kind == "commit-fail":
            for i in todo:
                self.fail(i, "commit")
            self.cont.pop(0)
            return
        existing = {i: w.claims[self.event(i)] for i in todo}
        rows = {i: self.model.row_of(self.recs[i].content) for i in todo}
        taken = {i: self.model.domain and w.rows[rows[i]] >= 0 for i in todo}
        if all(c is None for c in existing.values()) and not any(taken.values()):
            for i in todo:  # all or nothing: committed
                w.claims[self.event(i)] = self.new_claim()._replace(body=self.body(i))
                if self.model.domain:
                    w.rows[rows[i]] = self.recs[i].content
                if "write-before-claim" not in self.model.mut:
                    w.apply_effect(self.recs[i].content, f"transaction of m{self.recs[i].mid}")
                if kind == "commit-ambiguous":
                    self.fail(i, "commit")
                else:
                    self.committed(i)
            self.cont.pop(0)
            return
        if kind == "commit-ambiguous":
            for i in todo:
                self.fail(i, "commit")
            self.cont.pop(0)
            return
        # cancelled: the claims that exist come back (ALL_OLD); the rest is resubmitted
        retry = []
        for i in todo:
            claim = existing[i]
            if claim is not None:
                self.apply_status(i, claim)
            elif taken[i]:  # the row's own condition: another event's row (or an old one)
                self.poison(i, "semantic")
            else:
                retry.append(i)
        self.cont[0] = ("transact", tuple(retry))
        if self.model.fifo:
            self.cont.insert(0, ("qnow",))

    def call_read(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        kind = outcome[0]
        _, todo, attempt = self.cont[0]
        if kind == "read-fail":
            for i in todo:
                self.fail(i, "read")
            self.cont.pop(0)
            return
        retry = []
        for i in todo:
            if kind == "read-unprocessed" and outcome[1] == i:
                retry.append(i)
                continue
            claim = w.claims[self.event(i)]
            if claim is None and self.recs[i].beyond:
                # Nothing remembers the event: refused, never applied (again).
                self.poison(i, "beyond_dedup_horizon")
            elif claim is None:
                # key_existed (INSERT refused) or a vanished separate claim: transient
                self.fail(i, "vanished")
            else:
                self.apply_status(i, claim)
        attempts = self.model.f.read_attempts
        if retry and attempt >= attempts:
            for i in retry:
                self.fail(i, "read")
            retry = []
        if retry:
            self.cont[0] = ("readchunk", tuple(retry), attempt + 1)
        else:
            self.cont.pop(0)

    def call_receipt_read(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        todo = self.cont.pop(0)[1]
        for i in todo:
            r = self.recs[i]
            if outcome[0] == "read-fail":
                self.fail(i, "read")
            elif any(x[0] == r.found and x[1] == self.event(i) for x in w.receipts) or (
                "absent-receipt-as-listed" in self.model.mut
                and not any(x[0] == r.found for x in w.receipts)
            ):
                self.finish(i, SKIPPED)
            else:  # not listed, or no receipt: publish again, then mark the claim sent
                self.to_publish(i)

    def call_receipt_write(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        self.cont.pop(0)
        kind = outcome[0]
        if kind != "receipt-fail":
            # The receipt keeps the claim TTL from its write (none with the claim in the item).
            expires = -1 if self.model.item else self.now + self.model.ttl
            w.receipts = w.receipts | {(self.receipt, self.event(i), expires) for i in idxs}
        for i in idxs:
            if kind == "ok":
                self.finish(i, PROCESSED)
            else:
                self.fail(i, "receipt")

    def call_early_publish(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        for i in idxs:
            w.publish(self.recs[i].content)
        self.cont.pop(0)

    def call_publish(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        kind = outcome[0]
        self.cont.pop(0)
        owed = []
        for i in idxs:
            target = len(outcome) > 1 and outcome[1] == i
            published = kind in ("ok", "publish-ambiguous") or (
                kind.startswith("entry-") and (not target or kind == "entry-ambiguous")
            )
            if published:
                w.publish(self.recs[i].content)
            if kind in ("publish-fail", "publish-ambiguous") or (
                target and kind in ("entry-transient", "entry-ambiguous")
            ):
                self.fail(i, "publish")
            elif target and kind == "entry-sender":
                if "owed-not-quarantined" in self.model.mut:
                    self.finish(i, PROCESSED)
                else:
                    self.poison(i, "notification_owed")
                    owed.append(("owe", i))
            elif "mark-before-publish" in self.model.mut:
                self.finish(i, REPUBLISHED if self.recs[i].duplicate else PROCESSED)
            else:
                self.stage(i, NEED_STATUS)
        self.cont[0:0] = owed

    def call_owe(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        self.cont.pop(0)
        if outcome[0] == "owe-fail":
            return
        event = self.event(idxs[0])
        claim = w.claims[event]
        if claim is not None and claim.status == "pending":
            w.claims[event] = _claim((*claim[:_CLAIM_OWED], True, *claim[_CLAIM_OWED + 1 :]))

    def call_mark(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        def mark(i: int) -> None:
            event = self.event(i)
            claim = w.claims[event]
            if claim is None:
                self.fail(i, "mark")  # ConditionalCheckFailed: a vanished claim is not re-made
                return
            w.claims[event] = _claim((*claim[:_CLAIM_STATUS], "sent", *claim[_CLAIM_STATUS + 1 :]))
            if outcome[0] == "mark-ambiguous":
                self.fail(i, "mark")
            elif self.recs[i].stage == NEED_PUBLISH:  # mark-before-publish: publish next
                pass
            else:
                self.finish(i, REPUBLISHED if self.recs[i].duplicate else PROCESSED)

        self.statement_round(outcome, "mark-fail", "mark", mark)

    def call_row_insert(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        """``BatchRun._insert_rows``: one INSERT per row, atomic per statement."""

        def insert(i: int) -> None:
            content = self.recs[i].content
            row = self.model.row_of(content)
            if w.rows[row] < 0:
                w.rows[row] = content
                w.apply_effect(content, f"row INSERT by m{self.recs[i].mid}")
                self.committed(i)
            else:
                self.stage(i, NEED_ROW_READ)  # DuplicateItem: whose row is it?
            if outcome[0] == "commit-ambiguous":
                self.fail(i, "commit")

        self.statement_round(outcome, "commit-fail", "commit", insert)

    def call_release(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        """``ClaimThenRow.release``: delete the claim while pending with this content."""
        self.cont.pop(0)
        i = idxs[0]
        self.recs[i] = self.recs[i]._replace(release=False)
        claim = w.claims[self.event(i)]
        if outcome[0] == "release-fail" or claim is None:
            return
        if claim.status == "pending" and claim.body == self.body(i):
            w.claims[self.event(i)] = None

    def call_row_read(self, w: _World, idxs: Sequence[int], outcome: tuple[Any, ...]) -> None:
        """``BatchRun._read_rows`` / ``_settle_row``: this event's row (verified), another's
        (a business conflict: semantic), or gone."""
        kind = outcome[0]
        _, todo, attempt = self.cont[0]
        if kind == "read-fail":
            for i in todo:
                self.fail(i, "read")
            self.cont.pop(0)
            return
        retry = []
        contents = self.model.config.contents
        for i in todo:
            if kind == "read-unprocessed" and outcome[1] == i:
                retry.append(i)
                continue
            holder = w.rows[self.model.row_of(self.recs[i].content)]
            if holder < 0:
                self.fail(i, "vanished")
            elif contents[holder].event == self.event(i):
                self.committed(i)
            else:
                self.poison(i, "semantic")
                self.recs[i] = self.recs[i]._replace(release=True)
        if retry and attempt >= self.model.f.read_attempts:
            for i in retry:
                self.fail(i, "read")
            retry = []
        if retry:
            self.cont[0] = ("rowreadchunk", tuple(retry), attempt + 1)
        else:
            self.cont.pop(0)


def with_features(config: Config, **changes: Any) -> Config:
    return replace(config, features=replace(config.features, **changes))
