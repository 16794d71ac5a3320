"""SNS adapter: PublishBatch, called OUTSIDE the transaction (SNS cannot join it)."""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from idempotent_messaging.runtime.errors import (
    FailureClass,
    PoisonKind,
    PoisonMessage,
    SchemaError,
    classify_entry,
)
from idempotent_messaging.runtime.settings import is_fifo

PUBLISH_BATCH_MAX_ENTRIES = 10
PUBLISH_BATCH_MAX_BYTES = 256 * 1024  # total payload of one PublishBatch (and one message)


@dataclass(frozen=True)
class Notification:
    """What a consumer wants published once its business writes are committed.

    ``message`` is the SNS Message; ``attributes`` become String message attributes (at most
    10); ``subject`` is optional. Delivery is at-least-once: subscribers may see it twice.
    """

    message: str
    subject: str | None = None
    attributes: Mapping[str, str] = field(default_factory=dict)

    def size(self) -> int:
        size = len(self.message.encode("utf-8")) + len((self.subject or "").encode("utf-8"))
        for name, value in self.attributes.items():
            size += len(name.encode("utf-8")) + len(value.encode("utf-8")) + len("String")
        return size


def checked_notification(notification: Any) -> Notification:
    """What ``notification()`` returned, if SNS can carry it: a ``Notification`` of Unicode
    strings (else schema poison) no larger than one PublishBatch (else oversize poison)."""
    if not isinstance(notification, Notification):
        raise SchemaError(
            f"notification() returned a {type(notification).__name__}, not a Notification"
        )
    texts = [notification.message, notification.subject or ""]
    for name, value in dict(notification.attributes).items():
        texts.extend((name, value))
    if not all(isinstance(t, str) and _encodable(t) for t in texts):
        raise SchemaError("notification() returned text that is not valid Unicode strings")
    if notification.size() > PUBLISH_BATCH_MAX_BYTES:
        raise PoisonMessage(
            PoisonKind.OVERSIZE,
            f"notification is {notification.size()} bytes (max {PUBLISH_BATCH_MAX_BYTES})",
        )
    return notification


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class PublishEntry:
    entry_id: str
    notification: Notification
    event_id: str
    group_id: str | None


@dataclass(frozen=True)
class PublishResult:
    message_id: str | None = None
    error: str | None = None
    sender_fault: bool = False
    failure_class: FailureClass | None = None
    """A failed entry's class, by its CODE (``errors.classify_entry``), as the same code on
    the whole call: ``KMSThrottling`` is a sender fault and transient."""


class Notifier:
    def __init__(self, client: Any, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn
        self._fifo = is_fifo(topic_arn)

    def publish_batch(self, entries: Sequence[PublishEntry]) -> dict[str, PublishResult]:
        """One PublishBatch (caller keeps it <= 10 entries and <= 256 KiB)."""
        request = []
        for entry in entries:
            one: dict[str, Any] = {"Id": entry.entry_id, "Message": entry.notification.message}
            if entry.notification.subject:
                one["Subject"] = entry.notification.subject
            if entry.notification.attributes:
                one["MessageAttributes"] = {
                    name: {"DataType": "String", "StringValue": value}
                    for name, value in entry.notification.attributes.items()
                }
            if self._fifo:
                one["MessageGroupId"] = notification_group_id(entry.event_id, entry.group_id)
                one["MessageDeduplicationId"] = dedup_id(entry.event_id)
            request.append(one)
        response = self._client.publish_batch(
            TopicArn=self._topic_arn, PublishBatchRequestEntries=request
        )
        results = {
            ok["Id"]: PublishResult(message_id=ok.get("MessageId"))
            for ok in response.get("Successful", [])
        }
        for bad in response.get("Failed", []):
            results[bad["Id"]] = PublishResult(
                error=f"{bad.get('Code')}: {bad.get('Message', '')}",
                sender_fault=bool(bad.get("SenderFault")),
                failure_class=classify_entry("sns", str(bad.get("Code") or "")),
            )
        return results


# SNS PublishBatchRequestEntry (and SQS SendMessage, whose rule is the same): MessageGroupId
# and MessageDeduplicationId hold at most 128 alphanumeric characters (a-z, A-Z, 0-9) and
# punctuation (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~).
FIFO_ID_MAX_CHARS = 128
FIFO_ID_CHARACTERS = frozenset(string.ascii_letters + string.digits + string.punctuation)
HASHED_GROUP_PREFIX = "sha256:"


def is_valid_fifo_id(value: str) -> bool:
    """Whether SNS (and SQS) accept ``value`` as a MessageGroupId / MessageDeduplicationId."""
    return 0 < len(value) <= FIFO_ID_MAX_CHARS and set(value) <= FIFO_ID_CHARACTERS


def notification_group_id(event_id: str, source_group_id: str | None) -> str:
    """The MessageGroupId of an event's notification on a FIFO topic: its ordering unit.

    * From a FIFO source queue: the record's own SQS MessageGroupId. It IS the consumer's
      ordering unit (the runtime publishes a group's records in order) and SQS held it to the
      same rule SNS applies, so it is always valid.
    * From a standard source (no order to keep): the event itself. Its id when SNS accepts
      it as is, else ``sha256:`` + the SHA-256 (hex) of its UTF-8 bytes: 71 valid characters,
      stable, so every re-publication of one event lands in one group. A 129-character or a
      non-ASCII event id (``注文-0001``) is still notified.
    """
    if source_group_id and is_valid_fifo_id(source_group_id):
        return source_group_id
    if is_valid_fifo_id(event_id):
        return event_id
    return HASHED_GROUP_PREFIX + dedup_id(event_id)


def dedup_id(event_id: str) -> str:
    """The MessageDeduplicationId of an event's notification on a FIFO topic, as sent: the
    SHA-256 (64 hex digits) of the event id's UTF-8 bytes, so a re-publication within SNS's
    5-minute deduplication interval is not delivered twice."""
    return hashlib.sha256(event_id.encode("utf-8")).hexdigest()


def chunk_entries(
    entries: Sequence[PublishEntry], *, one_per_group: bool = False
) -> list[list[PublishEntry]]:
    """Split into PublishBatch calls of <= 10 entries and <= 256 KiB each, keeping order.

    ``one_per_group`` (FIFO): a chunk holds at most one entry per message group. PublishBatch
    reports success per entry, so with two entries of one group in a call the later one can
    succeed while the earlier one fails; one per call lets the caller stop the group at the
    first failure before anything later of it is published.
    """
    chunks: list[list[PublishEntry]] = []
    current: list[PublishEntry] = []
    groups: set[str] = set()
    size = 0
    for entry in entries:
        entry_size = entry.notification.size()
        group_taken = one_per_group and entry.group_id is not None and entry.group_id in groups
        if current and (
            group_taken
            or len(current) >= PUBLISH_BATCH_MAX_ENTRIES
            or size + entry_size > PUBLISH_BATCH_MAX_BYTES
        ):
            chunks.append(current)
            current, size, groups = [], 0, set()
        current.append(entry)
        if entry.group_id is not None:
            groups.add(entry.group_id)
        size += entry_size
    if current:
        chunks.append(current)
    return chunks
