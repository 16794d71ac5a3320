"""Event ids (producer-assigned, never the SQS messageId) and state-table keys."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.errors import PoisonKind, PoisonMessage

MAX_PARTITION_KEY_BYTES = 2048
"""DynamoDB: a partition key value is at most 2,048 bytes (UTF-8)."""
MAX_SORT_KEY_BYTES = 1024
"""DynamoDB: a sort key value is at most 1,024 bytes (UTF-8)."""


class EventIdSource(Protocol):
    """Where a message's event id comes from."""

    def extract(self, record: Mapping[str, Any], message: Any) -> str: ...


@dataclass(frozen=True)
class EventIdFromBody:
    """A field of the decoded JSON body; ``path`` is dotted (``"meta.id"``)."""

    path: str = env.EVENT_ID_KEY

    def extract(self, record: Mapping[str, Any], message: Any) -> str:
        value: Any = message
        for part in self.path.split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise PoisonMessage(PoisonKind.MISSING_EVENT_ID, f"body has no field {self.path!r}")
            value = value[part]
        return validate_event_id(value, f"body field {self.path!r}")


@dataclass(frozen=True)
class EventIdFromAttribute:
    """An SQS message attribute (String type) set by the producer."""

    name: str

    def extract(self, record: Mapping[str, Any], message: Any) -> str:
        attributes = record.get("messageAttributes") or {}
        attribute = attributes.get(self.name)
        if not isinstance(attribute, Mapping) or attribute.get("stringValue") is None:
            raise PoisonMessage(
                PoisonKind.MISSING_EVENT_ID, f"message attribute {self.name!r} is missing"
            )
        return validate_event_id(attribute["stringValue"], f"message attribute {self.name!r}")


@dataclass(frozen=True)
class EventIdFromContentHash:
    """SHA-256 of the raw body, for producers that assign no id.

    Identical bodies are ONE event (two distinct events must differ in content) and a re-send
    with a changed timestamp is a NEW event: prefer a producer id whenever one exists.
    """

    def extract(self, record: Mapping[str, Any], message: Any) -> str:
        body = record.get("body") or ""
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


def utf8_length(value: str) -> int | None:
    """Length in UTF-8 bytes, or None when the text cannot be encoded (a lone surrogate)."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def validate_event_id(value: Any, where: str) -> str:
    """An event id is a non-empty string of printable characters that UTF-8 can encode.

    Its length is checked where it becomes a key (``state_key``), in bytes as DynamoDB counts.
    """
    if not isinstance(value, str):
        raise PoisonMessage(
            PoisonKind.INVALID_EVENT_ID, f"{where} is a {type(value).__name__}, not a string"
        )
    if not value or not value.strip():
        raise PoisonMessage(PoisonKind.INVALID_EVENT_ID, f"{where} is empty")
    if utf8_length(value) is None:
        raise PoisonMessage(PoisonKind.INVALID_EVENT_ID, f"{where} is not valid Unicode text")
    if not value.isprintable():
        raise PoisonMessage(PoisonKind.INVALID_EVENT_ID, f"{where} contains control characters")
    return value


def _check_key_bytes(value: str, what: str, limit: int) -> None:
    size = utf8_length(value)
    if size is None:
        raise PoisonMessage(PoisonKind.INVALID_EVENT_ID, f"{what} is not valid Unicode text")
    if size > limit:
        raise PoisonMessage(
            PoisonKind.INVALID_EVENT_ID,
            f"{what} is {size} bytes in UTF-8; DynamoDB allows at most {limit}",
        )


@dataclass(frozen=True)
class StateKey:
    """Primary key of an event's claim in the state table (low-level attribute values)."""

    key: dict[str, dict[str, str]]
    label: str
    """Stable, unique text form used to spot two records of one event in a batch."""

    @property
    def condition(self) -> str:
        """``attribute_not_exists`` over every key attribute: the claim guard."""
        return " AND ".join(f"attribute_not_exists({name})" for name in sorted(self.key))


def state_key(
    *, tenant_layout: bool, event_id: str, namespace: str, tenant: str | None
) -> StateKey:
    """Event-id layout: ``{event_id}``; tenant layout:
    ``{pk: tenant, sk: "<namespace>#<event id>"}``.

    Raises PoisonMessage (invalid event id) when a key value exceeds DynamoDB's limits in
    UTF-8 bytes, so no request is ever sent that DynamoDB would reject for it.
    """
    if not tenant_layout:
        _check_key_bytes(event_id, "event id (partition key)", MAX_PARTITION_KEY_BYTES)
        return StateKey(key={env.EVENT_ID_KEY: {"S": event_id}}, label=event_id)
    if tenant is None:
        raise ValueError("the tenant layout needs a tenant id")
    sort_key = f"{namespace}#{event_id}"
    _check_key_bytes(tenant, "tenant id (partition key)", MAX_PARTITION_KEY_BYTES)
    _check_key_bytes(sort_key, f"sort key '{namespace}#<event id>'", MAX_SORT_KEY_BYTES)
    return StateKey(
        key={env.TENANT_PARTITION_KEY: {"S": tenant}, env.TENANT_SORT_KEY: {"S": sort_key}},
        label=f"{tenant}\x00{sort_key}",
    )


def validate_tenant(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PoisonMessage(PoisonKind.SCHEMA, "tenant id is missing or not a non-empty string")
    if utf8_length(value) is None or not value.isprintable():
        raise PoisonMessage(PoisonKind.SCHEMA, "tenant id is not printable Unicode text")
    return value
