"""DLQ adapter: quarantine poison messages at once, with the reason as message attributes.

The original body is kept unchanged so a redrive (DLQ -> source) after the fix replays it.

Copies are sized as SQS counts them (SQS API reference, SendMessageBatch and
MessageAttributeValue): a message is its body plus, per attribute, the name, the data type and
the value, in UTF-8 bytes (binary values as sent); one message is at most the DLQ's
``MaximumMessageSize`` (``DLQ_MAX_MESSAGE_BYTES``, set by the component) and one
SendMessageBatch at most 10 entries and 1 MiB in all. A copy that does not fit drops the least
needed attributes first (listed in ``dropped_attributes``); one whose body leaves no room even
for the reason is never sent: it is reported failed with that reason (logged under its message
id) and SQS's redrive policy moves it unchanged.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.settings import is_fifo

SEND_BATCH_MAX_ENTRIES = 10
SEND_BATCH_MAX_BYTES = 1_048_576
"""SendMessageBatch: the entries' sizes (bodies + attributes) add up to at most 1 MiB. A batch is
also kept within the DLQ's own MaximumMessageSize, which every SQS endpoint accepts (the
pre-2025 limit was 256 KiB for both)."""
MIN_MESSAGE_BYTES = 1_024
MAX_MESSAGE_BYTES = 1_048_576
"""A queue's MaximumMessageSize lies in 1,024 .. 1,048,576 bytes."""
UNKNOWN_DLQ_BATCH_BYTES = 262_144
"""Without ``DLQ_MAX_MESSAGE_BYTES`` the DLQ's maximum is unknown: 256 KiB (the provider's
default for a new queue, and SQS's before 2025) or 1 MiB (SQS's default since). A copy is then
fitted to 1 MiB but every batch is kept within 256 KiB, so a copy above the real maximum
travels alone: its refusal fails that record only (kept in SQS, the reason logged)."""
MAX_ATTRIBUTES = 10  # SQS message attribute limit
MAX_REASON_LENGTH = 1_000
MIN_REASON_BYTES = 64
"""A reason cut shorter than this no longer explains anything: the copy does not fit."""

ATTR_FAILURE_CLASS = "failure_class"
ATTR_FAILURE_KIND = "failure_kind"
ATTR_FAILURE_REASON = "failure_reason"
ATTR_ORIGINAL_MESSAGE_ID = "original_message_id"
ATTR_RECEIVE_COUNT = "receive_count"
ATTR_EVENT_ID = "event_id"
ATTR_DROPPED = "dropped_attributes"
"""Names of the producer's attributes that did not fit in SQS's 10 (comma-separated)."""
ATTR_FIRST_SEEN = env.FIRST_SEEN_ATTRIBUTE
"""The event's first-seen time (epoch ms, Number), carried through quarantine and redrive."""
RESERVED_ATTRIBUTES = frozenset(
    {
        ATTR_FIRST_SEEN,
        ATTR_FAILURE_CLASS,
        ATTR_FAILURE_KIND,
        ATTR_FAILURE_REASON,
        ATTR_ORIGINAL_MESSAGE_ID,
        ATTR_RECEIVE_COUNT,
        ATTR_EVENT_ID,
        ATTR_DROPPED,
    }
)


@dataclass(frozen=True)
class QuarantineEntry:
    entry_id: str
    body: str
    failure_class: str
    kind: str
    reason: str
    message_id: str
    receive_count: int
    event_id: str | None
    group_id: str | None
    original_attributes: Mapping[str, Any]
    """The record's ``messageAttributes`` (Lambda event format), copied when they fit."""
    event_id_attribute: str | None = None
    """The attribute the event id comes from (``EventIdFromAttribute``): always kept, so a
    redrive extracts the same id."""
    first_seen_ms: int | None = None
    """The earliest time the event was seen (epoch ms): carried as ``ATTR_FIRST_SEEN``."""

    def size(self, max_message_bytes: int | None = None) -> int:
        """Bytes of its DLQ copy as SQS counts them (body + fitted attributes); above
        ``max_message_bytes`` when the copy cannot fit at all."""
        try:
            return message_size(self.body, _attributes(self, max_message_bytes))
        except CopyTooLarge as exc:
            return exc.size


class CopyTooLarge(ValueError):
    """Not even the body with the reason fits the DLQ's MaximumMessageSize."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"DLQ copy cannot fit: body and reason take at least {size} bytes, the DLQ's "
            f"MaximumMessageSize is {limit} ({env.DLQ_MAX_MESSAGE_BYTES}); not sent, left in "
            "the source queue (its redrive policy moves it unchanged)"
        )
        self.size = size
        self.limit = limit


def dlq_max_message_bytes(environ: Mapping[str, str] | None = None) -> int | None:
    """The DLQ's MaximumMessageSize from ``DLQ_MAX_MESSAGE_BYTES`` (the component sets it),
    within SQS's 1,024 .. 1,048,576; None when unset or unreadable (quarantine never fails on
    its own setting; see ``UNKNOWN_DLQ_BATCH_BYTES``)."""
    raw = (os.environ if environ is None else environ).get(env.DLQ_MAX_MESSAGE_BYTES)
    try:
        value = int(raw or "")
    except ValueError:
        return None
    return min(max(value, MIN_MESSAGE_BYTES), MAX_MESSAGE_BYTES)


def dlq_limits(max_message_bytes: int | None = None) -> tuple[int, int]:
    """(bytes one copy may take, bytes one SendMessageBatch may take) for the DLQ whose
    MaximumMessageSize is ``max_message_bytes`` (default: ``dlq_max_message_bytes()``)."""
    known = max_message_bytes or dlq_max_message_bytes()
    if known is None:
        return MAX_MESSAGE_BYTES, UNKNOWN_DLQ_BATCH_BYTES
    return known, min(SEND_BATCH_MAX_BYTES, known)


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def attribute_size(name: str, value: Mapping[str, Any]) -> int:
    """Bytes SQS counts for one message attribute: name, data type and value."""
    size = _utf8(name) + _utf8(str(value.get("DataType", "")))
    if value.get("StringValue") is not None:
        size += _utf8(str(value["StringValue"]))
    if value.get("BinaryValue") is not None:
        size += len(value["BinaryValue"])
    return size


def message_size(body: str, attributes: Mapping[str, Mapping[str, Any]]) -> int:
    """Bytes SQS counts for one message: the body plus every attribute."""
    return _utf8(body) + sum(attribute_size(n, v) for n, v in attributes.items())


def fitted_message(
    entry: QuarantineEntry, max_message_bytes: int | None = None
) -> dict[str, Any] | None:
    """``{"MessageBody", "MessageAttributes"}`` of the DLQ copy, None when it cannot fit."""
    try:
        return {
            "MessageBody": entry.body,
            "MessageAttributes": _attributes(entry, max_message_bytes),
        }
    except CopyTooLarge:
        return None


class Quarantine:
    def __init__(self, client: Any, dlq_url: str, max_message_bytes: int | None = None) -> None:
        self._client = client
        self._dlq_url = dlq_url
        self._fifo = is_fifo(dlq_url)
        self._limit, _ = dlq_limits(max_message_bytes)

    def send_batch(self, entries: Sequence[QuarantineEntry]) -> dict[str, str | None]:
        """One SendMessageBatch: ``{entry_id: error or None}``. A copy that cannot fit the DLQ
        is not sent: its error says why (the caller reports it failed and logs it)."""
        request = []
        results: dict[str, str | None] = {}
        for entry in entries:
            try:
                attributes = _attributes(entry, self._limit)
            except CopyTooLarge as exc:
                results[entry.entry_id] = str(exc)
                continue
            one: dict[str, Any] = {
                "Id": entry.entry_id,
                "MessageBody": entry.body,
                "MessageAttributes": attributes,
            }
            if self._fifo:
                # Keep the group so a redrive preserves its order; the original messageId makes
                # a re-quarantine after a crash a no-op within the 5-minute dedup window.
                one["MessageGroupId"] = entry.group_id or entry.event_id or entry.message_id
                one["MessageDeduplicationId"] = entry.message_id[:128]
            request.append(one)
        if not request:
            return results
        response = self._client.send_message_batch(QueueUrl=self._dlq_url, Entries=request)
        results.update({ok["Id"]: None for ok in response.get("Successful", [])})
        for bad in response.get("Failed", []):
            results[bad["Id"]] = f"{bad.get('Code')}: {bad.get('Message', '')}"
        for entry in entries:
            results.setdefault(entry.entry_id, "no answer for this entry")
        return results


def can_carry(body: str) -> bool:
    """SQS carries Unicode text only: a body UTF-8 cannot encode (a lone surrogate) could
    never be copied to the DLQ."""
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _copyable(value: Any) -> dict[str, Any] | None:
    """An SQS SendMessage attribute from a Lambda-format one (Lambda base64-encodes binary)."""
    if not isinstance(value, Mapping):
        return None
    data_type = str(value.get("dataType") or "String")
    if data_type.startswith("Binary"):
        try:
            return {"DataType": data_type, "BinaryValue": base64.b64decode(value["binaryValue"])}
        except (KeyError, TypeError, ValueError):
            return None
    if value.get("stringValue") is None:
        return None
    return {"DataType": data_type, "StringValue": str(value["stringValue"])}


def _attributes(
    entry: QuarantineEntry, max_message_bytes: int | None = None
) -> dict[str, dict[str, Any]]:
    """At most 10 attributes (the SQS limit) that fit with the body in ``max_message_bytes``
    (default: ``dlq_limits()``) as SQS counts them, in order of what a redrive
    needs: the reason (class, kind, reason, original message id; the reason text is shortened
    if it must), the event-id source attribute, our others, then the producer's while they
    fit; the names of those that did not fit are listed in ``dropped_attributes``. Raises
    ``CopyTooLarge`` when not even the reason fits."""
    attributes: dict[str, dict[str, Any]] = {}
    source = entry.event_id_attribute
    if source and source in entry.original_attributes:
        copied = _copyable(entry.original_attributes[source])
        if copied is not None:
            attributes[source] = copied
    ours = {
        ATTR_FAILURE_CLASS: entry.failure_class,
        ATTR_FAILURE_KIND: entry.kind,
        ATTR_FAILURE_REASON: entry.reason[:MAX_REASON_LENGTH] or "unknown",
        ATTR_ORIGINAL_MESSAGE_ID: entry.message_id,
        ATTR_RECEIVE_COUNT: str(entry.receive_count),
    }
    if entry.event_id:
        ours[ATTR_EVENT_ID] = entry.event_id
    for name, text in ours.items():
        attributes.setdefault(name, {"DataType": "String", "StringValue": text})
    if entry.first_seen_ms is not None:
        first_seen = str(entry.first_seen_ms)
        attributes[ATTR_FIRST_SEEN] = {"DataType": "Number", "StringValue": first_seen}
    others = [
        (name, _copyable(value))
        for name, value in sorted(entry.original_attributes.items())
        if name not in attributes and name not in RESERVED_ATTRIBUTES
    ]
    limit, _ = dlq_limits(max_message_bytes)
    return _fit(entry.body, attributes, others, limit)


ESSENTIAL_ATTRIBUTES = (
    ATTR_FAILURE_CLASS,
    ATTR_FAILURE_KIND,
    ATTR_FAILURE_REASON,
    ATTR_ORIGINAL_MESSAGE_ID,
)
"""What a copy carries or is not sent: why it is there, and which message it was."""
_DROPPED_VALUE_CHARS = 1_000
_DROPPED_RESERVE = attribute_size(
    ATTR_DROPPED, {"DataType": "String", "StringValue": "x" * _DROPPED_VALUE_CHARS}
)


def _cut(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, never inside a character."""
    return text.encode("utf-8")[: max(max_bytes, 0)].decode("utf-8", "ignore")


def _fit(
    body: str,
    wanted: Mapping[str, dict[str, Any]],
    others: Sequence[tuple[str, dict[str, Any] | None]],
    limit: int,
) -> dict[str, dict[str, Any]]:
    """The attributes of ``wanted`` (ours and the event-id source, in order of need) then
    ``others`` (the producer's; None = not copyable) that fit: the essential ones always (or
    CopyTooLarge), the rest in order while they fit in bytes and in SQS's 10, general over
    whatever attributes ``wanted`` holds."""
    essential = {name: wanted[name] for name in ESSENTIAL_ATTRIBUTES if name in wanted}
    room = limit - _utf8(body) - sum(attribute_size(n, v) for n, v in essential.items())
    spare = 0  # bytes the reason could give up
    if ATTR_FAILURE_REASON in essential:
        reason = str(essential[ATTR_FAILURE_REASON]["StringValue"])
        spare = max(_utf8(reason) - MIN_REASON_BYTES, 0)
        if room < 0 and spare >= -room:
            short = _cut(reason, _utf8(reason) + room)
            room += _utf8(reason) - _utf8(short)
            essential[ATTR_FAILURE_REASON] = {"DataType": "String", "StringValue": short}
    if room < 0:
        raise CopyTooLarge(limit - room - spare, limit)  # the least it could take
    optional = [(n, v) for n, v in wanted.items() if n not in essential] + list(others)

    def place(reserve: int, slots: int) -> tuple[dict[str, dict[str, Any]], list[str], int]:
        chosen: dict[str, dict[str, Any]] = {}
        dropped: list[str] = []
        left = room - reserve
        for name, value in optional:
            size = attribute_size(name, value) if value is not None else 0
            if (
                value is None
                or len(essential) + len(chosen) + slots >= MAX_ATTRIBUTES
                or size > left
            ):
                dropped.append(name)
                continue
            chosen[name] = value
            left -= size
        return chosen, dropped, left + reserve

    chosen, dropped, left = place(0, 0)
    if dropped:  # one slot, and the room, to list what was dropped
        chosen, dropped, left = place(min(_DROPPED_RESERVE, room), 1)
        overhead = attribute_size(ATTR_DROPPED, {"DataType": "String"})
        listing = _cut(",".join(dropped)[:_DROPPED_VALUE_CHARS], left - overhead)
        if listing and len(essential) + len(chosen) < MAX_ATTRIBUTES:
            chosen[ATTR_DROPPED] = {"DataType": "String", "StringValue": listing}
    return {**essential, **chosen}


def chunk_quarantine(
    entries: Sequence[QuarantineEntry], max_message_bytes: int | None = None
) -> list[list[QuarantineEntry]]:
    """SendMessageBatch calls of <= 10 entries whose copies, as SQS counts them, add up to at
    most 1 MiB and the DLQ's MaximumMessageSize; a copy that cannot fit goes alone (it is
    answered without a call, never taking its neighbours down)."""
    limit, batch_limit = dlq_limits(max_message_bytes)
    chunks: list[list[QuarantineEntry]] = []
    current: list[QuarantineEntry] = []
    size = 0
    for entry in entries:
        entry_size = entry.size(limit)
        if entry_size > limit:  # alone, in order (a FIFO DLQ keeps group order)
            if current:
                chunks.append(current)
                current, size = [], 0
            chunks.append([entry])
            continue
        if current and (len(current) >= SEND_BATCH_MAX_ENTRIES or size + entry_size > batch_limit):
            chunks.append(current)
            current, size = [], 0
        current.append(entry)
        size += entry_size
    if current:
        chunks.append(current)
    return chunks
