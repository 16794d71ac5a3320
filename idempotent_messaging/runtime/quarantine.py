"""DLQ adapter: quarantine poison messages at once, with the reason as message attributes.

The original body is kept unchanged so a redrive (DLQ -> source) after the fix replays it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
RESERVED_ATTRIBUTES = frozenset(
    {
        ATTR_FAILURE_CLASS,
        ATTR_FAILURE_KIND,
        ATTR_FAILURE_REASON,
        ATTR_ORIGINAL_MESSAGE_ID,
        ATTR_RECEIVE_COUNT,
        ATTR_EVENT_ID,
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

    def size(self) -> int:
        return len(self.body.encode("utf-8")) + len(self.reason) + 512


class Quarantine:
    def __init__(self, client: Any, dlq_url: str) -> None:
        self._client = client
        self._dlq_url = dlq_url
        self._fifo = dlq_url.endswith(".fifo")

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


def _attributes(entry: QuarantineEntry) -> dict[str, dict[str, str]]:
    ours = {
        ATTR_FAILURE_CLASS: entry.failure_class,
        ATTR_FAILURE_KIND: entry.kind,
        ATTR_FAILURE_REASON: entry.reason[:MAX_REASON_LENGTH] or "unknown",
        ATTR_ORIGINAL_MESSAGE_ID: entry.message_id,
        ATTR_RECEIVE_COUNT: str(entry.receive_count),
    }
    if entry.event_id:
        ours[ATTR_EVENT_ID] = entry.event_id
    attributes: dict[str, dict[str, str]] = {
        name: {"DataType": "String", "StringValue": value} for name, value in ours.items()
    }
    # Keep the producer's attributes (an attribute-borne event id must survive a redrive).
    for name, value in sorted(entry.original_attributes.items()):
        if len(attributes) >= MAX_ATTRIBUTES or name in RESERVED_ATTRIBUTES:
            continue
        data_type = str(value.get("dataType") or "String")
        if value.get("stringValue") is not None and not data_type.startswith("Binary"):
            attributes[name] = {"DataType": data_type, "StringValue": str(value["stringValue"])}
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
