"""DLQ operations: peek without consuming, explain, FIFO-safe redrive, purge.

Works with any SQS endpoint: real AWS or the emulator (the client decides which).

``explain`` says, per DLQ message, what happened to its event: a copy the runtime quarantined
carries its reason; a copy WITHOUT reason attributes was moved by SQS's own redrive policy
(the consumer died or timed out on the message's last receive, or could not quarantine it),
and only its claim can tell whether the business write was applied and whether a notification
is owed. The claim is looked up where the consumer keeps it (the state table, or the business
item its ``SingleItemEffect`` derives from the event id), so a redrive or a republish is an
informed one.
"""

from __future__ import annotations

import importlib
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from idempotent_messaging.ops.owed import ReceiptsUnknown, read_receipts, receipt_of
from idempotent_messaging.runtime import env as runtime_env
from idempotent_messaging.runtime.claims import (
    DomainKeyedCreate,
    SingleItemEffect,
    published_status,
)

RECEIVE_MAX = 10
# How long peeked / in-transit messages stay hidden from other readers while we hold them.
HOLD_VISIBILITY_S = 60
FIFO_DEDUP_WINDOW_S = 300
NATIVE_MAX_RATE = 500  # StartMessageMoveTask MaxNumberOfMessagesPerSecond limit
# Errors an endpoint without StartMessageMoveTask answers with (moto: HTTP 500).
_UNSUPPORTED_CODES = frozenset(
    {"InvalidAction", "UnknownOperationException", "NotImplemented", "UnsupportedOperation"}
)
# The quarantine attributes the runtime writes (runtime/quarantine.py), shown first.
REASON_ATTRIBUTES = (
    "failure_class",
    "failure_kind",
    "failure_reason",
    "event_id",
    "original_message_id",
    "receive_count",
)


class OpsError(Exception):
    """An operation cannot proceed; the message says why and what to do."""


class RedriveRefused(OpsError):
    """One DLQ message cannot be redriven safely: it stays in the DLQ, the rest goes on."""


@dataclass
class PeekedMessage:
    message_id: str
    body: str
    attributes: dict[str, str]
    message_attributes: dict[str, Any]

    @property
    def group_id(self) -> str | None:
        return self.attributes.get("MessageGroupId")

    @property
    def dedup_id(self) -> str | None:
        return self.attributes.get("MessageDeduplicationId")

    def reasons(self) -> dict[str, str]:
        """Quarantine attributes first, then any other string attributes."""
        plain = {
            name: str(value.get("StringValue", ""))
            for name, value in self.message_attributes.items()
            if "StringValue" in value
        }
        ordered = {k: plain[k] for k in REASON_ATTRIBUTES if k in plain}
        ordered.update({k: v for k, v in plain.items() if k not in ordered})
        return ordered

    @property
    def reasonless(self) -> bool:
        """No reason attributes: not a runtime quarantine copy but SQS's redrive policy (the
        consumer died or timed out on the last receive, or could not quarantine it)."""
        return "failure_kind" not in self.message_attributes

    def to_json(self, include_body: bool) -> dict[str, Any]:
        data: dict[str, Any] = {
            "message_id": self.message_id,
            "receive_count": int(self.attributes.get("ApproximateReceiveCount", "0")),
            "sent_timestamp": self.attributes.get("SentTimestamp"),
            "group_id": self.group_id,
            "dedup_id": self.dedup_id,
            "reasons": self.reasons(),
            "reasonless": self.reasonless,
            "body_bytes": len(self.body.encode()),
        }
        conflict = conflict_summary(self)
        if conflict:
            data["conflict"] = conflict
        if include_body:
            data["body"] = self.body
        return data


def _receive(sqs: Any, url: str, count: int, hold_s: int) -> list[dict[str, Any]]:
    response = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=max(1, min(RECEIVE_MAX, count)),
        VisibilityTimeout=hold_s,
        MessageSystemAttributeNames=["All"],
        MessageAttributeNames=["All"],
        WaitTimeSeconds=0,
    )
    return list(response.get("Messages", []))


def _set_visibility(sqs: Any, url: str, handles: list[str], seconds: int) -> None:
    """Hide held messages for `seconds` more (0: visible again at once)."""
    for start in range(0, len(handles), RECEIVE_MAX):
        chunk = handles[start : start + RECEIVE_MAX]
        sqs.change_message_visibility_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": h, "VisibilityTimeout": seconds}
                for i, h in enumerate(chunk)
            ],
        )


def _release(sqs: Any, url: str, handles: list[str]) -> None:
    _set_visibility(sqs, url, handles, 0)


@contextmanager
def held_messages(sqs: Any, url: str, limit: int) -> Iterator[list[dict[str, Any]]]:
    """Receive up to `limit` messages, hold them invisible, and release them all on exit.

    Each receive counts towards ApproximateReceiveCount, which matters on a DLQ only if the DLQ
    itself had a redrive policy (it should not).
    """
    held: list[dict[str, Any]] = []
    try:
        while len(held) < limit:
            batch = _receive(sqs, url, limit - len(held), HOLD_VISIBILITY_S)
            if not batch:
                break
            held.extend(batch)
        yield held
    finally:
        _release(sqs, url, [m["ReceiptHandle"] for m in held])


def peek(sqs: Any, dlq_url: str, limit: int = 10) -> list[PeekedMessage]:
    """Read up to `limit` DLQ messages with their quarantine reasons, consuming none."""
    if limit < 1:
        raise OpsError(f"--max must be >= 1, got {limit}")
    with held_messages(sqs, dlq_url, limit) as held:
        return [_peeked(m) for m in held]


def _peeked(message: dict[str, Any]) -> PeekedMessage:
    return PeekedMessage(
        message_id=message["MessageId"],
        body=message["Body"],
        attributes=dict(message.get("Attributes", {})),
        message_attributes=dict(message.get("MessageAttributes", {})),
    )


def queue_depth(sqs: Any, url: str) -> dict[str, int]:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )["Attributes"]
    return {k: int(v) for k, v in attributes.items()}


def queue_arn(sqs: Any, url: str) -> str:
    arn: str = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return arn


def source_queue_of(sqs: Any, dlq_url: str) -> str:
    """The one queue whose redrive policy targets this DLQ (ListDeadLetterSourceQueues)."""
    urls = sqs.list_dead_letter_source_queues(QueueUrl=dlq_url).get("queueUrls", [])
    if len(urls) != 1:
        raise OpsError(
            f"DLQ {dlq_url} is the dead-letter queue of {len(urls)} queues "
            f"({', '.join(urls) or 'none'}): pass --to-url"
        )
    return str(urls[0])


@dataclass
class RedriveReport:
    method: str  # "native" | "manual" | "dry-run"
    moved: int = 0
    held_back: int = 0
    failed: int = 0
    refused: int = 0
    """Messages left in the DLQ because their first-seen time can be neither carried nor
    established (``bare_first_seen_ms``)."""
    task_handle: str | None = None
    notes: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)


def native_move(
    probe: Any, dlq_arn: str, source_arn: str, rate: float | None
) -> tuple[bool, str | None, str]:
    """Try StartMessageMoveTask. (started?, task handle, why not).

    `probe` should be a client with a single attempt: on emulators "not implemented" is an
    HTTP 500, which botocore would otherwise retry before we can fall back.
    """
    kwargs: dict[str, Any] = {"SourceArn": dlq_arn, "DestinationArn": source_arn}
    if rate is not None:
        kwargs["MaxNumberOfMessagesPerSecond"] = max(1, min(NATIVE_MAX_RATE, int(rate)))
    try:
        response = probe.start_message_move_task(**kwargs)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code in _UNSUPPORTED_CODES or status in (500, 501):
            return False, None, f"endpoint does not support StartMessageMoveTask ({code or status})"
        raise
    return True, str(response["TaskHandle"]), ""


def wait_native(sqs: Any, dlq_arn: str, timeout_s: float = 300) -> dict[str, Any]:
    """Poll ListMessageMoveTasks until the newest task leaves RUNNING."""
    deadline = time.monotonic() + timeout_s
    while True:
        tasks = sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=1).get("Results", [])
        task: dict[str, Any] = tasks[0] if tasks else {}
        if task.get("Status") != "RUNNING" or time.monotonic() > deadline:
            return task
        time.sleep(2)


def _sent_at(message: dict[str, Any]) -> float:
    return int(message.get("Attributes", {}).get("SentTimestamp", "0")) / 1000


MAX_MESSAGE_ATTRIBUTES = 10  # SQS: at most 10 message attributes per message


def bare_first_seen_ms(
    message: dict[str, Any], fifo: bool, source_retention_s: int | None
) -> int | None:
    """The oldest first-seen time a DLQ copy WITHOUT the runtime's attribute proves (epoch ms):
    SQS moved it there itself (a death or time-out on its last receive). A standard DLQ keeps
    the original enqueue time of a message its redrive policy moved, so its SentTimestamp is
    that time. A FIFO DLQ resets it to the move ("Using dead-letter queues in Amazon SQS"): the
    original was sent at most one source retention earlier, so that is the time established
    (refusing a copy as beyond the horizon too early is safe; too late applies twice). None
    when the copy has no SentTimestamp, or a FIFO source's retention is unknown."""
    try:
        sent = int(str(message.get("Attributes", {}).get("SentTimestamp", "")))
    except ValueError:
        return None
    if not fifo:
        return sent
    if source_retention_s is None:
        return None
    return max(0, sent - 1000 * source_retention_s)


def _send_entry(
    message: dict[str, Any],
    fifo: bool,
    dedup_id: str | None,
    source_retention_s: int | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"Id": "0", "MessageBody": message["Body"]}
    attributes = {}
    for name, value in message.get("MessageAttributes", {}).items():
        kept = {k: v for k, v in value.items() if k in ("DataType", "StringValue", "BinaryValue")}
        attributes[name] = kept
    # The resend is a NEW message (new SentTimestamp, fresh retention): carry the event's
    # first-seen time, so the consumer can refuse a copy older than its claim. A runtime copy
    # carries it already; a bare one gets the oldest time its DLQ copy proves.
    if runtime_env.FIRST_SEEN_ATTRIBUTE not in attributes:
        first_seen = bare_first_seen_ms(message, fifo, source_retention_s)
        if first_seen is None:
            raise RedriveRefused(
                f"message {message.get('MessageId')} carries no first-seen time and its age "
                "cannot be established (no SentTimestamp, or the FIFO source's retention is "
                "unknown): redriven, it could pass the consumer's dedup horizon after its "
                "claim expired; left in the DLQ"
            )
        if len(attributes) >= MAX_MESSAGE_ATTRIBUTES:
            raise RedriveRefused(
                f"message {message.get('MessageId')} has {len(attributes)} message attributes "
                "(SQS allows 10) and no first-seen time: it cannot carry the time established "
                "for it; left in the DLQ"
            )
        attributes[runtime_env.FIRST_SEEN_ATTRIBUTE] = {
            "DataType": "Number",
            "StringValue": str(first_seen),
        }
    if attributes:
        entry["MessageAttributes"] = attributes
    if fifo:
        system = message.get("Attributes", {})
        group = system.get("MessageGroupId")
        if not group:
            raise OpsError(f"FIFO message {message['MessageId']} has no MessageGroupId")
        entry["MessageGroupId"] = group
        if dedup_id:
            entry["MessageDeduplicationId"] = dedup_id
    return entry


def source_retention_s(sqs: Any, source_url: str) -> int:
    """The source queue's MessageRetentionPeriod (GetQueueAttributes), in seconds."""
    attributes = sqs.get_queue_attributes(
        QueueUrl=source_url, AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]
    return int(attributes["MessageRetentionPeriod"])


def manual_redrive(
    sqs: Any,
    dlq_url: str,
    source_url: str,
    *,
    rate: float | None = None,
    limit: int | None = None,
    dedup_window: str = "wait",
    dry_run: bool = False,
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    log: Callable[[str], None] = lambda _line: None,
) -> RedriveReport:
    """Receive / send / delete, preserving body, message attributes, group and dedup ids.

    FIFO: messages come off the DLQ in group order and go back in that order with their
    MessageGroupId and MessageDeduplicationId. SQS silently drops a FIFO send whose
    deduplication id was used in the last 5 minutes, so a message that entered the DLQ less
    than 5 minutes ago could vanish on redrive; `dedup_window` decides: "wait" until the
    window has passed (default), "skip" to leave it in the DLQ, "new-id" to send it with a
    fresh deduplication id (safe because the consumer is idempotent).
    """
    if dedup_window not in ("wait", "skip", "new-id"):
        raise OpsError(f"--dedup-window must be wait, skip or new-id, got {dedup_window!r}")
    if rate is not None and rate <= 0:
        raise OpsError(f"--rate must be > 0 messages/s, got {rate}")
    fifo = source_url.endswith(".fifo")
    if fifo != dlq_url.endswith(".fifo"):
        raise OpsError(f"queue types differ: DLQ {dlq_url} vs source {source_url}")
    report = RedriveReport(method="dry-run" if dry_run else "manual")
    started = time.monotonic()
    # A FIFO DLQ reset the enqueue time of the copies SQS moved: their first-seen time is
    # established from the source's retention (bare_first_seen_ms).
    retention = source_retention_s(sqs, source_url) if fifo and not dry_run else None
    if dry_run:
        with held_messages(sqs, dlq_url, limit or 10_000) as held:
            for m in held:
                report.messages.append(_peeked(m).to_json(include_body=False))
            report.moved = 0
            report.notes.append(f"dry run: {len(held)} message(s) would move to {source_url}")
        return report
    held_back: list[str] = []  # receipt handles released at the end (skip policy)
    blocked_groups: set[str | None] = set()
    try:
        while limit is None or report.moved + report.held_back < limit:
            want = RECEIVE_MAX if limit is None else limit - report.moved - report.held_back
            batch = _receive(sqs, dlq_url, want, HOLD_VISIBILITY_S)
            if not batch:
                break
            if fifo and dedup_window == "wait":
                ages = [now() - _sent_at(m) for m in batch]
                wait = max((FIFO_DEDUP_WINDOW_S - a + 1 for a in ages), default=0)
                if wait > 0:
                    # Keep the batch hidden while we wait, so no other reader takes it.
                    _set_visibility(
                        sqs,
                        dlq_url,
                        [m["ReceiptHandle"] for m in batch],
                        int(wait) + HOLD_VISIBILITY_S,
                    )
                    log(
                        f"waiting {wait:.0f} s: {sum(a < FIFO_DEDUP_WINDOW_S for a in ages)} "
                        "message(s) entered the DLQ inside the FIFO 5-minute deduplication "
                        "window; SQS would silently drop their resend"
                    )
                    sleep(wait)
            for message in batch:
                dedup = message.get("Attributes", {}).get("MessageDeduplicationId")
                group = message.get("Attributes", {}).get("MessageGroupId")
                if fifo and group in blocked_groups:
                    # An earlier message of this group stays behind: so must this one.
                    held_back.append(message["ReceiptHandle"])
                    report.held_back += 1
                    continue
                if fifo and now() - _sent_at(message) < FIFO_DEDUP_WINDOW_S:
                    if dedup_window == "skip":
                        held_back.append(message["ReceiptHandle"])
                        report.held_back += 1
                        blocked_groups.add(group)
                        continue
                    if dedup_window == "new-id":
                        dedup = f"redrive-{uuid.uuid4().hex}"
                try:
                    entry = _send_entry(message, fifo, dedup, retention)
                except RedriveRefused as exc:
                    held_back.append(message["ReceiptHandle"])
                    report.refused += 1
                    report.notes.append(str(exc))
                    log(str(exc))
                    blocked_groups.add(group)  # FIFO: nothing later of its group overtakes it
                    continue
                response = sqs.send_message_batch(QueueUrl=source_url, Entries=[entry])
                if response.get("Failed"):
                    failure = response["Failed"][0]
                    held_back.append(message["ReceiptHandle"])
                    report.failed += 1
                    report.notes.append(
                        f"send of {message['MessageId']} failed: {failure.get('Code')}: "
                        f"{failure.get('Message', '')}; left in the DLQ"
                    )
                    if fifo:  # later messages of its group must not overtake it
                        raise OpsError(report.notes[-1])
                    continue
                sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
                report.moved += 1
                report.messages.append(
                    {"message_id": message["MessageId"], "group_id": entry.get("MessageGroupId")}
                )
                log(f"moved {message['MessageId']} -> {source_url}")
                if rate:
                    # Stay at or under `rate` messages per second overall.
                    ahead = report.moved / rate - (time.monotonic() - started)
                    if ahead > 0:
                        sleep(ahead)
    finally:
        _release(sqs, dlq_url, held_back)
    return report


NATIVE_MOVE_CAVEAT = (
    "the native move task gives every message a new SentTimestamp: a copy SQS dead-lettered "
    "itself carries no first-seen time, so a consumer whose claims expire (a state-table "
    "claim) could apply its effect twice once the claim is gone; use it only for consumers "
    "whose claims live in the business item, or the manual move, which carries or "
    "establishes each message's first-seen time"
)


def redrive(
    sqs: Any,
    dlq_url: str,
    source_url: str,
    *,
    method: str = "manual",
    rate: float | None = None,
    limit: int | None = None,
    dedup_window: str = "wait",
    dry_run: bool = False,
    wait: bool = True,
    probe: Any | None = None,
    log: Callable[[str], None] = lambda _line: None,
) -> RedriveReport:
    """The manual move (receive / send / delete), which carries each message's first-seen
    time or establishes it (``bare_first_seen_ms``), or refuses the message; ``native``:
    StartMessageMoveTask, which carries message attributes but establishes nothing for a copy
    SQS dead-lettered itself (``NATIVE_MOVE_CAVEAT``), and which the component's DLQ policy
    denies unless the consumer opted out (``allow_native_dlq_redrive``). ``auto`` (the default
    before) is the manual move: the native one is never chosen for the operator.

    probe: the client used for the StartMessageMoveTask attempt (see native_move).
    """
    if method not in ("auto", "native", "manual"):
        raise OpsError(f"--method must be manual, native or auto, got {method!r}")
    if dry_run:
        return manual_redrive(sqs, dlq_url, source_url, limit=limit, dry_run=True)
    if method == "native":
        if limit is not None:
            raise OpsError("--max cannot be combined with --method native (moves the whole DLQ)")
        dlq_arn, source_arn = queue_arn(sqs, dlq_url), queue_arn(sqs, source_url)
        try:
            started, handle, why = native_move(probe or sqs, dlq_arn, source_arn, rate)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if "AccessDenied" not in code:
                raise
            raise OpsError(
                f"StartMessageMoveTask on {dlq_arn} was denied ({code}): the component's DLQ "
                "policy denies the native move unless the consumer sets "
                "allow_native_dlq_redrive=True, because "
                f"{NATIVE_MOVE_CAVEAT}. Use --method manual"
            ) from None
        if not started:
            raise OpsError(why)
        log(f"note: {NATIVE_MOVE_CAVEAT}")
        report = RedriveReport(method="native", task_handle=handle, notes=[NATIVE_MOVE_CAVEAT])
        if wait:
            task = wait_native(sqs, dlq_arn)
            report.moved = int(task.get("ApproximateNumberOfMessagesMoved", 0))
            report.notes.append(f"move task status {task.get('Status', 'unknown')}")
        return report
    report = manual_redrive(
        sqs, dlq_url, source_url, rate=rate, limit=limit, dedup_window=dedup_window, log=log
    )
    if method == "auto":
        report.notes.insert(
            0, "--method auto is the manual move (the native one is never chosen for you)"
        )
    return report


def purge(sqs: Any, url: str) -> None:
    try:
        sqs.purge_queue(QueueUrl=url)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "").endswith("PurgeQueueInProgress"):
            raise OpsError(
                f"{url}: a purge is already in progress (SQS allows one per 60 s)"
            ) from None
        raise


_FIRST_MESSAGE_RE = re.compile(r"first applied by message ([^;\s]+)")


def conflict_summary(message: PeekedMessage, claim: Mapping[str, Any] | None = None) -> str | None:
    """For a ``conflicting_duplicate`` copy: "conflict: event id X first applied by message M1;
    this copy M2 differs; the first effect stands" (M1 from the claim when given, else from
    the reason); None for any other copy."""
    reasons = message.reasons()
    if reasons.get("failure_kind") != runtime_env.CONFLICTING_DUPLICATE:
        return None
    first = None
    for name in ("message_id", runtime_env.ITEM_CLAIM_MESSAGE_ID):
        value = (claim or {}).get(name)
        if isinstance(value, Mapping) and value.get("S"):
            first = str(value["S"])
    if first is None:
        found = _FIRST_MESSAGE_RE.search(reasons.get("failure_reason") or "")
        first = found.group(1) if found else "unknown"
    copy = reasons.get("original_message_id") or message.message_id
    return (
        f"conflict: event id {reasons.get('event_id') or 'unknown'} first applied by message "
        f"{first}; this copy {copy} differs; the first effect stands"
    )


# --- explain: what happened to each DLQ message's event ---------------------------------------
@dataclass
class Explanation:
    message_id: str
    reasonless: bool
    """No reason attributes: moved by SQS's redrive policy, not quarantined by the runtime."""
    failure_kind: str | None
    event_id: str | None
    first_seen_ms: int | None
    claim: str
    """``absent``, ``pending``, ``sent``, ``another event``, or ``unknown`` (with why)."""
    write_applied: bool | None
    """Whether the event's business write was applied (None: cannot tell)."""
    notification_owed: bool | None
    advice: str
    claim_key: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "reasonless": self.reasonless,
            "failure_kind": self.failure_kind,
            "event_id": self.event_id,
            "first_seen_ms": self.first_seen_ms,
            "claim": self.claim,
            "claim_key": self.claim_key,
            "write_applied": self.write_applied,
            "notification_owed": self.notification_owed,
            "advice": self.advice,
        }


def load_consumer(spec: str) -> Any:
    """``module:ATTRIBUTE`` (``handlers.orders:ORDERS``): the consumer whose declarations say
    where its event id comes from and where its claims live."""
    from idempotent_messaging.runtime import Consumer

    module, _, attribute = spec.partition(":")
    if not module or not attribute:
        raise OpsError(f"--consumer-code {spec!r}: expected module:ATTRIBUTE")
    try:
        consumer = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise OpsError(f"--consumer-code {spec!r}: {type(exc).__name__}: {exc}") from None
    if not isinstance(consumer, Consumer):
        raise OpsError(f"--consumer-code {spec!r} is a {type(consumer).__name__}, not a Consumer")
    return consumer


def _lambda_record(message: PeekedMessage) -> dict[str, Any]:
    """The DLQ message as the consumer's ``EventIdFrom*`` reads a record."""
    return {
        "messageId": message.message_id,
        "body": message.body,
        "attributes": message.attributes,
        "messageAttributes": {
            name: {"stringValue": value.get("StringValue"), "dataType": value.get("DataType")}
            for name, value in message.message_attributes.items()
        },
    }


def _event_id(message: PeekedMessage, consumer: Any | None) -> tuple[str | None, Any, str]:
    """(event id or None, the decoded body or None, why not)."""
    try:
        body: Any = json.loads(message.body)
    except ValueError:
        body = None
    if consumer is not None:
        from idempotent_messaging.runtime.errors import PoisonMessage

        try:
            return consumer.event_id.extract(_lambda_record(message), body), body, ""
        except PoisonMessage as exc:
            return None, body, exc.reason
    attribute = message.message_attributes.get("event_id", {}).get("StringValue")
    if attribute:
        return str(attribute), body, ""
    if isinstance(body, Mapping) and isinstance(body.get(runtime_env.EVENT_ID_KEY), str):
        return str(body[runtime_env.EVENT_ID_KEY]), body, ""
    return None, body, "no event id found (pass --consumer-code to read it as the consumer does)"


def _claim_key(
    dynamodb: Any, table: str, event_id: str, body: Any, consumer: Any | None
) -> dict[str, Any]:
    """The key of the event's claim in ``table``: derived from the event id by the consumer's
    ``SingleItemEffect``, else the state-table layout the table's schema shows."""
    # SingleItemEffect: the claim is in the business item the event id derives; any other
    # declaration (DomainKeyedCreate, none) keeps it in the state table.
    if consumer is not None and isinstance(consumer.effect, SingleItemEffect):
        assert consumer.effect.key_of_event is not None  # SingleItemEffect requires it
        derived = consumer.effect.key_of_event(event_id)
        key: dict[str, Any] = consumer.effect.derived_key(derived)
        return key
    schema = dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]
    names = [part["AttributeName"] for part in schema]
    if len(names) == 1:
        return {names[0]: {"S": event_id}}
    if consumer is None or consumer.tenant is None:
        raise OpsError(
            f"{table} is keyed by {names}: pass --consumer-code so the tenant and namespace of "
            "each event can be derived"
        )
    from idempotent_messaging.runtime.claims import state_key

    tenant = consumer.tenant(body)
    return state_key(
        tenant_layout=True, event_id=event_id, namespace=consumer.namespace, tenant=tenant
    ).key


def _verdict(
    item: Mapping[str, Any] | None,
    event_id: str,
    receipts: Mapping[str, frozenset[str]] | None = None,
) -> tuple[str, bool | None, bool | None]:
    """(claim, write applied, notification owed) from the item found at the claim's key and
    the receipt it names (a ``pending`` claim its receipt lists is ``sent``)."""
    if not item:
        return "absent", False, False
    if runtime_env.ITEM_CLAIM_STATUS in item or runtime_env.ITEM_CLAIM_EVENT_ID in item:
        if item.get(runtime_env.ITEM_CLAIM_EVENT_ID, {}).get("S") != event_id:
            return "another event", False, False
        status = item.get(runtime_env.ITEM_CLAIM_STATUS, {}).get("S")
    else:
        status = item.get("status", {}).get("S")
    if status == runtime_env.STATUS_PENDING and receipts is not None:
        status = published_status(item, receipts)
    if status == runtime_env.STATUS_SENT:
        return "sent", True, False
    if status == runtime_env.STATUS_PENDING:
        return "pending", True, True
    if "status" not in item and runtime_env.ITEM_CLAIM_STATUS not in item:
        # An item at the event's key holding no claim at all (written by someone else).
        return "another event", False, False
    return f"unknown (status {status!r})", None, None


_ADVICE = {
    "absent": "the business write was NOT applied (no claim): a redrive applies it once",
    "pending": (
        "the business write WAS applied and its notification is OWED (never published, or "
        "published and not marked): a redrive publishes it (the redelivery meets the pending "
        "claim and publishes only), or `ops owed --republish` if the claim stores it"
    ),
    "sent": (
        "the business write WAS applied and the notification sent: nothing is owed; a redrive "
        "is skipped as a duplicate, so the copy can be deleted"
    ),
    "another event": (
        "the item at this event's key holds another event's effect (or none of ours): this "
        "event's write was NOT applied and a redrive is quarantined as semantic; decide by hand"
    ),
}


def explain_message(
    message: PeekedMessage,
    dynamodb: Any,
    table: str,
    *,
    consumer: Any | None = None,
    state_table: str | None = None,
) -> Explanation:
    """What one DLQ message's claim says about its event (the publication receipt it names
    read from ``state_table``, default ``table``, when the claim is pending)."""
    reasons = message.reasons()
    first_seen = reasons.get(runtime_env.FIRST_SEEN_ATTRIBUTE) or message.attributes.get(
        "SentTimestamp"
    )
    event_id, body, why = _event_id(message, consumer)
    base: dict[str, Any] = {
        "message_id": message.message_id,
        "reasonless": message.reasonless,
        "failure_kind": reasons.get("failure_kind"),
        "event_id": event_id,
        "first_seen_ms": int(first_seen) if first_seen and first_seen.isdigit() else None,
    }
    if event_id is None:
        return Explanation(
            **base,
            claim="unknown",
            write_applied=False if not message.reasonless else None,
            notification_owed=None,
            advice=f"no event id, so no claim to look up ({why}); fix the message or drop it",
        )
    try:
        key = _claim_key(dynamodb, table, event_id, body, consumer)
    except OpsError:
        raise
    except Exception as exc:  # the consumer's derivation refused this message
        return Explanation(
            **base,
            claim="unknown",
            write_applied=None,
            notification_owed=None,
            advice=f"its claim key cannot be derived ({type(exc).__name__}); nothing was looked up",
        )
    item = dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
    receipts = None
    receipt = receipt_of(dict(item)) if item else None
    if receipt:
        in_item = runtime_env.ITEM_CLAIM_STATUS in item if item else False
        try:
            receipts = read_receipts(
                dynamodb, state_table if in_item else (state_table or table), [receipt]
            )
        except ReceiptsUnknown as exc:
            raise OpsError(str(exc)) from None
    claim, applied, owed = _verdict(item, event_id, receipts)
    advice = _ADVICE.get(claim, "the claim's status is not one the runtime writes: look at it")
    if (
        claim == "pending"
        and consumer is not None
        and isinstance(consumer.effect, DomainKeyedCreate)
    ):
        # Its row is written after the claim: a death may have come between the two.
        applied = None
        advice = (
            "the event is claimed and its notification OWED; its row (DomainKeyedCreate, "
            "written after the claim) may not be written yet: a redrive completes the row or "
            "verifies it by its key and the event id it records, then publishes"
        )
    if message.reasonless:
        advice = (
            "SQS moved this copy with no reason (a process death or timeout on its last "
            f"receive, or a failed quarantine): {advice}"
        )
    if reasons.get("failure_kind") == runtime_env.CONFLICTING_DUPLICATE:
        advice = (
            f"{conflict_summary(message, item) or 'conflict'}. Do not redrive it: it would be "
            "refused again; ask the producer which content is right (a correction is a new "
            f"event id). The first copy's claim: {advice}"
        )
    if reasons.get("failure_kind") == "beyond_dedup_horizon":
        advice = (
            "refused as older than its claim can be: a redrive is refused again; "
            f"if applied by hand, know that {advice}"
        )
    return Explanation(
        **base,
        claim=claim,
        write_applied=applied,
        notification_owed=owed,
        advice=advice,
        claim_key={name: next(iter(value.values())) for name, value in key.items()},
    )


def explain(
    sqs: Any,
    dynamodb: Any,
    dlq_url: str,
    table: str,
    *,
    consumer: Any | None = None,
    limit: int = 10,
    state_table: str | None = None,
) -> list[Explanation]:
    """Peek up to ``limit`` DLQ messages (consuming none) and explain each from its claim."""
    return [
        explain_message(message, dynamodb, table, consumer=consumer, state_table=state_table)
        for message in peek(sqs, dlq_url, limit)
    ]
