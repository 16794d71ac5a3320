"""DLQ adapter: quarantine poison messages at once, with the reason as message attributes.

The original body is kept unchanged so a redrive (DLQ -> source) after the fix replays it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from idempotent_messaging.runtime.settings import is_fifo

SEND_BATCH_MAX_ENTRIES = 10
# 256 KiB is the long-standing batch payload limit; staying under it works with every SQS
# endpoint (newer SQS accepts 1 MiB).
SEND_BATCH_MAX_BYTES = 256 * 1024
MAX_ATTRIBUTES = 10  # SQS message attribute limit
MAX_REASON_LENGTH = 1_000

ATTR_FAILURE_CLASS = "failure_class"
ATTR_FAILURE_KIND = "failure_kind"
ATTR_FAILURE_REASON = "failure_reason"
ATTR_ORIGINAL_MESSAGE_ID = "original_message_id"
ATTR_RECEIVE_COUNT = "receive_count"
ATTR_EVENT_ID = "event_id"
ATTR_DROPPED = "dropped_attributes"
"""Names of the producer's attributes that did not fit in SQS's 10 (comma-separated)."""
RESERVED_ATTRIBUTES = frozenset(
    {
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

    def size(self) -> int:
        return len(self.body.encode("utf-8")) + len(self.reason) + 512


class Quarantine:
    def __init__(self, client: Any, dlq_url: str) -> None:
        self._client = client
        self._dlq_url = dlq_url
        self._fifo = is_fifo(dlq_url)

    def send_batch(self, entries: Sequence[QuarantineEntry]) -> dict[str, str | None]:
        """One SendMessageBatch: ``{entry_id: error or None}``."""
        request = []
        for entry in entries:
            one: dict[str, Any] = {
                "Id": entry.entry_id,
                "MessageBody": entry.body,
                "MessageAttributes": _attributes(entry),
            }
            if self._fifo:
                # Keep the group so a redrive preserves its order; the original messageId makes
                # a re-quarantine after a crash a no-op within the 5-minute dedup window.
                one["MessageGroupId"] = entry.group_id or entry.event_id or entry.message_id
                one["MessageDeduplicationId"] = entry.message_id[:128]
            request.append(one)
        response = self._client.send_message_batch(QueueUrl=self._dlq_url, Entries=request)
        results: dict[str, str | None] = {ok["Id"]: None for ok in response.get("Successful", [])}
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


def _attributes(entry: QuarantineEntry) -> dict[str, dict[str, Any]]:
    """At most 10 attributes (the SQS limit), in order of what a redrive needs:
    the event-id source attribute, then ours, then the producer's others while they fit;
    the names of those that did not fit are listed in ``dropped_attributes``."""
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
    others = [
        (name, _copyable(value))
        for name, value in sorted(entry.original_attributes.items())
        if name not in attributes and name not in RESERVED_ATTRIBUTES
    ]
    dropped = [name for name, value in others if value is None]
    room = MAX_ATTRIBUTES - len(attributes)
    kept = [(name, value) for name, value in others if value is not None]
    if len(kept) > room or dropped:
        room -= 1  # one slot lists what was dropped
    for name, copied in kept[: max(room, 0)]:
        assert copied is not None
        attributes[name] = copied
    dropped += [name for name, _ in kept[max(room, 0) :]]
    if dropped:
        attributes[ATTR_DROPPED] = {"DataType": "String", "StringValue": ",".join(dropped)[:1000]}
    return attributes


def chunk_quarantine(entries: Sequence[QuarantineEntry]) -> list[list[QuarantineEntry]]:
    chunks: list[list[QuarantineEntry]] = []
    current: list[QuarantineEntry] = []
    size = 0
    for entry in entries:
        if current and (
            len(current) >= SEND_BATCH_MAX_ENTRIES or size + entry.size() > SEND_BATCH_MAX_BYTES
        ):
            chunks.append(current)
            current, size = [], 0
        current.append(entry)
        size += entry.size()
    if current:
        chunks.append(current)
    return chunks
