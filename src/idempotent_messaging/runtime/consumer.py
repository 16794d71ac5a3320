"""``Consumer``: what a consumer declares, how each of its records is decoded and checked
before any AWS call, and its entry points.

``handle`` builds settings and clients from the environment of the invocation; ``process``
takes them explicitly; both choose the claim placement the consumer declared
(``claims.placement``) and run the batch (``batch.BatchRun``). ``decode`` is pure: JSON, the
event id (``EventIdFrom*``), the key, ``writes()`` checked against DynamoDB's value limits,
``notification()``; anything that can never succeed is ``PoisonMessage``.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import functools
import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.batch import BatchRun, DecodedMessage
from idempotent_messaging.runtime.claims import (
    ALLOWED_ITEM_KINDS,
    TRANSACT_MAX_ITEMS,
    DomainKeyedCreate,
    SingleItemEffect,
    TransactItem,
    placement,
    state_key,
)
from idempotent_messaging.runtime.errors import (
    CONFIGURATION_FAILURE_CLASS,
    ConfigurationError,
    PluginError,
    PoisonKind,
    PoisonMessage,
    SchemaError,
)
from idempotent_messaging.runtime.notify import Notification, checked_notification
from idempotent_messaging.runtime.observability import (
    Outcome,
    logger,
    record_outcome,
    refresh_from_env,
)
from idempotent_messaging.runtime.settings import Runtime, Settings

DEFAULT_MAX_BODY_BYTES = 256 * 1024
"""Bodies above this are poison: the notification (SNS: 256 KiB) and the business row
(DynamoDB: 400 KB) could never hold them."""


# --- event ids: producer-assigned, never the SQS messageId --------------------------------------
class EventIdSource(Protocol):
    """Where a message's event id comes from."""

    def extract(self, record: Mapping[str, Any], message: Any) -> str: ...


@dataclass(frozen=True)
class EventIdFromBody:
    """A field of the decoded JSON body; ``path`` is dotted (``"meta.id"``)."""

    path: str = env.EVENT_ID_KEY

    def extract(self, record: Mapping[str, Any], message: Any) -> str:
        value: Any = message
        for depth, part in enumerate(self.path.split(".")):
            if isinstance(value, str) and depth:
                # A JSON document inside a string (SNS's "Message" without raw delivery): a
                # path cannot reach inside it.
                within = ".".join(self.path.split(".")[:depth])
                raise PoisonMessage(
                    PoisonKind.MISSING_EVENT_ID,
                    f"body field {within!r} is a string, not an object: the path {self.path!r} "
                    "cannot reach inside it (an SNS envelope? declare envelope=SnsEnvelope())",
                )
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


# --- envelopes AWS producers wrap a payload in ----------------------------------------------------
SNS_ENVELOPE_MESSAGE = "Message"
"""Where SNS puts the published payload in its envelope: a JSON STRING, not an object."""
EVENTBRIDGE_FIELDS = frozenset(
    {"version", "id", "detail-type", "source", "account", "time", "region", "resources"}
    | {"detail", "replay-name"}
)
"""The top-level fields of every EventBridge event (EventBridge user guide, "AWS service event
metadata" / "Event structure")."""


class Envelope(Protocol):
    """How a body wraps the producer's payload; ``Consumer(envelope=...)`` declares it."""

    def unwrap(self, record: Mapping[str, Any], message: Any) -> tuple[Mapping[str, Any], Any]:
        """(the record as the event id / time sources see it, the payload plug-ins see)."""
        ...

    def check_path(self, path: str, what: str) -> None:
        """Raise ValueError when ``path`` (dotted) cannot name a field of the payload."""
        ...


@dataclass(frozen=True)
class SnsEnvelope:
    """The body is SNS's JSON envelope: an SQS queue subscribed to a topic WITHOUT raw message
    delivery (SNS developer guide, "Amazon SNS raw message delivery"; the envelope's fields:
    ``Type``, ``MessageId``, ``TopicArn``, ``Subject``, ``Message``, ``Timestamp``,
    ``Signature*``, ``UnsubscribeURL``, ``MessageAttributes``). The payload is the JSON STRING
    in ``Message``: it is decoded (floats as ``Decimal``) and becomes what ``writes``,
    ``notification``, ``event_id``/``event_time`` paths and the fingerprint see, and what
    ``EventIdFromContentHash`` hashes. The envelope's ``MessageAttributes`` become the record's
    message attributes (``EventIdFromAttribute``). Why not the envelope itself: SNS gives every
    publish a new ``MessageId``, ``Timestamp`` and signature, so a producer's re-send would be
    another body (a conflict under the default fingerprint, a new event under a content hash).
    A body that is not a ``Notification`` envelope (a ``SubscriptionConfirmation``, which SNS
    sends to a queue of another account, or a raw-delivery body) is ``schema`` poison."""

    def unwrap(self, record: Mapping[str, Any], message: Any) -> tuple[Mapping[str, Any], Any]:
        if not isinstance(message, Mapping) or message.get("Type") != "Notification":
            kind = message.get("Type") if isinstance(message, Mapping) else None
            raise SchemaError(
                f"body is not an SNS Notification envelope (Type {kind!r}); the consumer "
                "declares envelope=SnsEnvelope() (a subscription without raw message delivery)"
            )
        payload = message.get(SNS_ENVELOPE_MESSAGE)
        if not isinstance(payload, str):
            raise SchemaError("SNS envelope has no Message string")
        try:
            decoded = json.loads(payload, parse_float=Decimal)
        except json.JSONDecodeError as exc:
            raise PoisonMessage(
                PoisonKind.NOT_JSON,
                f"SNS envelope's Message is not JSON ({exc.msg} at position {exc.pos})",
            ) from None
        except (RecursionError, ValueError):
            raise PoisonMessage(PoisonKind.NOT_JSON, "SNS envelope's Message is not JSON") from None
        attributes = {
            name: {"stringValue": str(value["Value"]), "dataType": str(value.get("Type", ""))}
            for name, value in (message.get("MessageAttributes") or {}).items()
            if isinstance(value, Mapping) and "Value" in value
        }
        return {**record, "body": payload, "messageAttributes": attributes}, decoded

    def check_path(self, path: str, what: str) -> None:
        if path.split(".")[0] == SNS_ENVELOPE_MESSAGE:
            raise ValueError(
                f"{what}={path!r}: with envelope=SnsEnvelope() paths name fields of the "
                f"payload, which is already the decoded {SNS_ENVELOPE_MESSAGE!r}; drop the "
                f"{SNS_ENVELOPE_MESSAGE!r} prefix"
            )


@dataclass(frozen=True)
class EventBridgeEnvelope:
    """The body is an EventBridge event: a rule's SQS target without an input transformer
    (EventBridge user guide, "Event structure": ``version``, ``id``, ``detail-type``,
    ``source``, ``account``, ``time``, ``region``, ``resources``, ``detail``). ``detail`` is
    a JSON object, so nothing is unwrapped: paths name the event's fields as AWS documents
    them (``detail.order_id``, ``id``), and plug-ins see the whole event (``detail-type``
    included).

    * **The event id.** ``id`` is generated by EventBridge for every ``PutEvents`` entry: it
      identifies EventBridge's own redeliveries of one event (a target may receive an event
      more than once), not a producer's re-send, which gets a new ``id``. For events a
      producer may re-send, name its own id in ``detail`` (``EventIdFromBody("detail.
      event_id")``); for AWS service events (``aws.*`` sources, which nobody re-sends),
      ``EventIdFromBody("id")``.
    * **The fingerprint** defaults to ``source``, ``detail-type`` and ``detail``: ``id`` and
      ``time`` change with every ``PutEvents``, so the whole body would make every re-send a
      conflict. A consumer's own ``fingerprint=`` (or the component's ``fingerprint_fields``)
      still overrides it.

    A body that is not an EventBridge event (no ``detail-type``, ``source`` or ``detail``) is
    ``schema`` poison."""

    fingerprint: Fingerprint | None = None
    """Default None: ``Fingerprint(fields=("source", '"detail-type"', "detail"))``."""

    def unwrap(self, record: Mapping[str, Any], message: Any) -> tuple[Mapping[str, Any], Any]:
        if not isinstance(message, Mapping) or not {"detail-type", "source", "detail"} <= set(
            message
        ):
            raise SchemaError(
                "body is not an EventBridge event (detail-type, source and detail); the "
                "consumer declares envelope=EventBridgeEnvelope()"
            )
        return record, message

    def check_path(self, path: str, what: str) -> None:
        head = path.split(".")[0]
        if head not in EVENTBRIDGE_FIELDS:
            raise ValueError(
                f"{what}={path!r}: {head!r} is no field of an EventBridge event "
                f"({', '.join(sorted(EVENTBRIDGE_FIELDS))}); the producer's fields are under "
                "'detail' (e.g. 'detail.event_id'), EventBridge's event id is 'id'"
            )

    def default_fingerprint(self) -> Fingerprint:
        return self.fingerprint or Fingerprint(fields=("source", '"detail-type"', "detail"))


def check_paths_without_envelope(path: str, what: str) -> None:
    """A path that names a field inside SNS's ``Message`` (a JSON string) can never match:
    refused at construction, naming the declaration that unwraps it."""
    parts = path.split(".")
    if parts[0] == SNS_ENVELOPE_MESSAGE and len(parts) > 1:
        raise ValueError(
            f"{what}={path!r}: SNS puts the payload in {SNS_ENVELOPE_MESSAGE!r} as a JSON "
            "STRING (a subscription without raw message delivery), and a path cannot reach "
            "inside a string; declare envelope=SnsEnvelope() and name the field within the "
            f"payload ({'.'.join(parts[1:])!r}), or enable raw message delivery"
        )


# --- the content fingerprint: a re-sent event id with other content is a conflict ------------
@dataclass(frozen=True)
class Fingerprint:
    """Which content identifies an event: its claim keeps a short hash of it, and a later copy
    of the same event id whose hash differs is a conflict (``conflicting_duplicate``), never a
    silent duplicate.

    ``fields``: JMESPath expressions over the decoded body (``"order.order_id"``,
    ``"amount"``, as Powertools' ``payload_validation_jmespath``); empty (the default): the
    WHOLE decoded body. The content is canonical JSON (keys sorted, no whitespace, numbers by
    value: ``1``, ``1.0`` and ``1.00`` are one number), so a producer that re-serialises the
    same event is not in conflict. The stored value is ``<definition>:<hash>``: the first 3
    bytes of SHA-256 over the field list, then the first 16 bytes of SHA-256 over the content,
    both base64url (27 characters); a claim stored under another definition compares as a
    duplicate, as do claims written before fingerprints existed.
    """

    fields: tuple[str, ...] = ()
    _compiled: tuple[Any, ...] = field(init=False, repr=False, compare=False, default=())
    _tag: str = field(init=False, repr=False, compare=False, default="")

    def __post_init__(self) -> None:
        import jmespath  # botocore's dependency: in every Lambda bundle

        object.__setattr__(self, "fields", tuple(self.fields))
        try:
            compiled = tuple(jmespath.compile(f) for f in self.fields)
        except Exception as exc:
            raise ValueError(f"Fingerprint(fields={list(self.fields)!r}): {exc}") from None
        object.__setattr__(self, "_compiled", compiled)
        tag = hashlib.sha256(json.dumps(list(self.fields)).encode()).digest()[:3]
        object.__setattr__(self, "_tag", base64.urlsafe_b64encode(tag).decode())

    def of(self, message: Any, body: str) -> str:
        """``<definition>:<hash>`` of the declared content of one decoded message."""
        try:
            content: Any = message
            if self.fields:
                content = [c.search(message) for c in self._compiled]
            text = json.dumps(_canonical(content), sort_keys=True, separators=(",", ":"))
        except RecursionError:
            text = "raw:" + body  # nested too deep to canonicalise: the body as sent
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]
        return f"{self._tag}:{base64.urlsafe_b64encode(digest).decode().rstrip('=')}"


def _canonical(value: Any) -> Any:
    """Numbers by value (int, Decimal, float alike), containers recursively."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | Decimal):
        number = Decimal(value)
        return {"#n": str(number.normalize()) if number.is_finite() else str(number)}
    if isinstance(value, float):
        return {"#n": repr(value)}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return str(value)


@functools.lru_cache(maxsize=16)
def _fingerprint_of_fields(fields: tuple[str, ...]) -> Fingerprint:
    return Fingerprint(fields)


# --- the event's own time: a producer re-send is a new SQS message, the event is not ----------
class EventTimeSource(Protocol):
    """Where the producer puts the event's own time (its first-seen time, in epoch ms)."""

    def extract(self, record: Mapping[str, Any], message: Any) -> int: ...


def _event_time_ms(value: Any, where: str) -> int:
    """Epoch seconds (a JSON number) or ISO 8601 text with a UTC offset -> epoch ms."""
    if isinstance(value, bool):
        value = None
    if isinstance(value, int | Decimal):
        try:
            return int(Decimal(value) * 1000)
        except (InvalidOperation, ValueError, OverflowError):
            pass
    elif isinstance(value, str):
        try:
            parsed = datetime.datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return int(parsed.timestamp() * 1000)
    raise SchemaError(f"{where} is not epoch seconds nor ISO 8601 text with a UTC offset")


@dataclass(frozen=True)
class EventTimeFromBody:
    """The event's time as a field of the decoded JSON body (dotted ``path``): epoch seconds,
    or ISO 8601 text with a UTC offset. Declared, it is part of the contract: missing or
    unreadable is ``schema`` poison."""

    path: str

    def extract(self, record: Mapping[str, Any], message: Any) -> int:
        value: Any = message
        for part in self.path.split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise SchemaError(f"body has no event time field {self.path!r}")
            value = value[part]
        return _event_time_ms(value, f"event time field {self.path!r}")


@dataclass(frozen=True)
class EventTimeFromAttribute:
    """The event's time as an SQS message attribute (String or Number): epoch seconds, or ISO
    8601 text with a UTC offset."""

    name: str

    def extract(self, record: Mapping[str, Any], message: Any) -> int:
        attribute = (record.get("messageAttributes") or {}).get(self.name)
        text = attribute.get("stringValue") if isinstance(attribute, Mapping) else None
        if not isinstance(text, str):
            raise SchemaError(f"message attribute {self.name!r} (event time) is missing")
        value: Any = text
        with contextlib.suppress(InvalidOperation):
            value = Decimal(text)
        return _event_time_ms(value, f"message attribute {self.name!r} (event time)")


def utf8_length(value: str) -> int | None:
    """Length in UTF-8 bytes, or None when the text cannot be encoded (a lone surrogate)."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def validate_event_id(value: Any, where: str) -> str:
    """An event id is a non-empty string of printable characters that UTF-8 can encode.

    Its length is checked where it becomes a key (``claims.state_key``), in bytes as DynamoDB
    counts.
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


def validate_tenant(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PoisonMessage(PoisonKind.SCHEMA, "tenant id is missing or not a non-empty string")
    if utf8_length(value) is None or not value.isprintable():
        raise PoisonMessage(PoisonKind.SCHEMA, "tenant id is not printable Unicode text")
    return value


# --- DynamoDB's limits on attribute values, checked per write ----------------------------------
# moto accepts numbers and nesting that DynamoDB rejects with a ValidationException, and a
# ValidationException on a shared transaction cannot say which record caused it. So every
# business write is checked here, per record, and a value DynamoDB cannot hold makes THAT
# record poison with a reason naming the write, the attribute and the rule (never the value).
# Limits (DynamoDB developer guide, "Service, account, and table quotas" and "Data types"): a
# number has at most 38 significant digits; a non-zero magnitude lies in 1E-130 ..
# 9.9999999999999999999999999999999999999E+125; NaN and Infinity do not exist; nested
# attributes go at most 32 levels deep; strings are UTF-8 (a lone surrogate cannot be
# encoded); an item is at most 400 KB (attribute names + values, UTF-8).
MAX_NUMBER_DIGITS = 38
MIN_NUMBER_EXPONENT = -130  # smallest positive magnitude 1E-130
MAX_NUMBER_MAGNITUDE = Decimal("1E126")  # the largest is 9.99..9E+125 (38 nines)
MIN_NUMBER_MAGNITUDE = Decimal("1E-130")
MAX_NESTING_DEPTH = 32
MAX_ITEM_BYTES = 400 * 1024


def number_problem(text: Any) -> str | None:
    """Why DynamoDB would reject ``text`` as a number (None when it is fine)."""
    if not isinstance(text, str):
        return f"is a {type(text).__name__}, not a numeric string"
    try:
        value = Decimal(text.strip())
    except (InvalidOperation, ValueError):
        return "is not a number"
    if not value.is_finite():
        return "is NaN or Infinity, which DynamoDB numbers cannot be"
    if value.is_zero():
        return None
    # Exact arithmetic only: normalize() and abs() round to the context's 28 digits.
    digits = "".join(map(str, value.as_tuple().digits)).strip("0")
    if len(digits) > MAX_NUMBER_DIGITS:
        return f"has {len(digits)} significant digits (DynamoDB keeps at most {MAX_NUMBER_DIGITS})"
    magnitude = value.copy_abs()
    if magnitude >= MAX_NUMBER_MAGNITUDE or magnitude < MIN_NUMBER_MAGNITUDE:
        return "is outside DynamoDB's number range 1E-130 .. 9.9E+125"
    return None


def _text_bytes(text: Any) -> int | None:
    return utf8_length(text) if isinstance(text, str) else None


def attribute_problem(value: Any) -> tuple[str | None, int]:
    """(why DynamoDB would reject this AttributeValue or None, its size in bytes).

    Iterative, so a value nested thousands deep cannot exhaust the interpreter's stack.
    """
    size = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        # The top-level attribute is depth 1; 32 nested levels below it are allowed.
        if depth > MAX_NESTING_DEPTH + 1:
            return f"is nested deeper than DynamoDB's {MAX_NESTING_DEPTH} levels", size
        if not isinstance(current, Mapping) or len(current) != 1:
            return "is not a DynamoDB attribute value ({type: value})", size
        ((kind, inner),) = current.items()
        if kind == "S":
            n = _text_bytes(inner)
            if n is None:
                return "is a string that is not valid Unicode text", size
            size += n
        elif kind == "N":
            problem = number_problem(inner)
            if problem:
                return f"number {problem}", size
            size += 21
        elif kind in ("SS", "NS", "BS"):
            if not isinstance(inner, Sequence) or isinstance(inner, str | bytes) or not inner:
                return f"{kind} is not a non-empty list", size
            for element in inner:
                if kind == "NS":
                    problem = number_problem(element)
                    if problem:
                        return f"number in a set {problem}", size
                    size += 21
                elif kind == "SS":
                    n = _text_bytes(element)
                    if n is None:
                        return "is a string set holding invalid Unicode text", size
                    size += n
                else:
                    size += len(element) if isinstance(element, bytes | bytearray) else 0
        elif kind == "B":
            size += len(inner) if isinstance(inner, bytes | bytearray) else 0
        elif kind in ("BOOL", "NULL"):
            size += 1
        elif kind == "M":
            if not isinstance(inner, Mapping):
                return "M is not a map", size
            for name, element in inner.items():
                n = _text_bytes(name)
                if n is None:
                    return "has an attribute name that is not valid Unicode text", size
                if n == 0:
                    # DynamoDB refuses an empty attribute name at any depth ("Empty attribute
                    # name"); moto stores it and then cannot even scan the item back.
                    return "has an empty attribute name (a map key)", size
                size += n + 1
                stack.append((element, depth + 1))
        elif kind == "L":
            if not isinstance(inner, Sequence) or isinstance(inner, str | bytes):
                return "L is not a list", size
            for element in inner:
                size += 1
                stack.append((element, depth + 1))
        else:
            return f"has unknown type {kind!r}", size
    return None, size


def _values_of(kind: str, body: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(label, AttributeValue) pairs of one transaction item that DynamoDB will store/compare."""
    pairs: list[tuple[str, Any]] = []
    if kind == "Put":
        item = body.get("Item")
        if isinstance(item, Mapping):
            pairs.extend((f"attribute {name!r}", value) for name, value in item.items())
    key = body.get("Key")
    if isinstance(key, Mapping):
        pairs.extend((f"key {name!r}", value) for name, value in key.items())
    values = body.get("ExpressionAttributeValues")
    if isinstance(values, Mapping):
        pairs.extend((f"expression value {name!r}", value) for name, value in values.items())
    return pairs


def check_transact_item(position: int, item: Mapping[str, Any]) -> None:
    """Raise SchemaError when DynamoDB would reject ``item`` (the ``position``-th write)."""
    ((kind, body),) = item.items()
    if not isinstance(body, Mapping):
        raise SchemaError(f"writes() item {position} ({kind}) is not a mapping")
    total = 0
    item_attributes = body.get("Item") if kind == "Put" else None
    if isinstance(item_attributes, Mapping) and "" in item_attributes:
        raise SchemaError(f"writes() item {position} (Put) has an empty attribute name")
    for label, value in _values_of(kind, body):
        problem, size = attribute_problem(value)
        if problem:
            raise SchemaError(f"writes() item {position} ({kind}) {label} {problem}")
        total += size + len(label)
    if kind == "Put" and total > MAX_ITEM_BYTES:
        raise SchemaError(
            f"writes() item {position} (Put) is about {total} bytes; DynamoDB items are at "
            f"most {MAX_ITEM_BYTES}"
        )


# --- the consumer -------------------------------------------------------------------------------
@dataclass(frozen=True)
class WriteContext:
    """What ``writes`` may use besides the decoded message."""

    event_id: str
    message_id: str
    business_table: str | None
    """``BUSINESS_TABLE`` from the environment (None when unset)."""
    tenant: str | None
    now: int
    """Epoch seconds at which the batch started."""


WritesFn = Callable[[Any, WriteContext], Sequence[TransactItem]]
NotificationFn = Callable[[Any, str], Notification | None]
TenantFn = Callable[[Any], str]


class Consumer:
    """An idempotent SQS consumer: database exactly-once, notification at-least-once.

    Args:
        writes: ``writes(message, ctx) -> [TransactItem, ...]``: the business writes for one
            decoded message as DynamoDB transaction items in the low-level client format
            (``{"Put": {...}}``, ``{"Update": {...}}``, ``{"ConditionCheck": {...}}``). Their
            own conditions failing is a semantic failure: the message is quarantined and its
            claim is not written. Raise ``SchemaError(reason)`` (or KeyError/TypeError/
            ValueError) for a malformed message. Reasons must not quote message content.
        notification: ``notification(message, event_id) -> Notification | None``; None (the
            function or its result) means no notification: the claim is written as ``sent``.
        event_id: ``EventIdFromBody(path="event_id")``, ``EventIdFromAttribute(name)`` or
            ``EventIdFromContentHash()``.
        namespace: sort-key prefix in the tenant layout (``<namespace>#<event id>``).
        tenant: ``tenant(message) -> str``; required when ``STATE_KEY_LAYOUT=tenant``.
        requires_business_table: refuse to run when ``BUSINESS_TABLE`` is unset.
        effect: ``SingleItemEffect(key=(...), key_of_event=...)`` (or
            ``SingleItemEffect.keyed_by_event_id(attribute)``) declares that the business
            effect is ONE item of ``BUSINESS_TABLE`` whose key derives from the event id: the
            claim then lives in that item (``claims.ItemClaims``); a Put with another key is
            refused per record. ``DomainKeyedCreate(key=("order_id",))`` declares that it is
            ONE create of an item keyed by a business key from the message: the claim stays in
            the state table and the row, recording the event id, is written after it without
            a transaction on a standard queue (``claims.ClaimThenRow``). Omitted: a separate
            claim item in the state table committed with the writes in a transaction
            (``claims.StateTableClaims``), for effects of any shape and keys of its own.
        event_time: ``EventTimeFromBody(path)`` / ``EventTimeFromAttribute(name)`` when the
            contract carries the event's own time: a copy older than the claim's life (a
            producer re-send months later) is refused as ``beyond_dedup_horizon`` instead of
            being applied a second time after its claim expired.
        fingerprint: ``Fingerprint(fields=("order.order_id", ...))``: which content identifies
            the event (JMESPath over the decoded body); default ``Fingerprint()``, the whole
            decoded body (``EventBridgeEnvelope``: source, detail-type and detail).
            ``FINGERPRINT_FIELDS`` (set by the component) overrides it. A re-send of a claimed
            event id with another fingerprint is ``conflicting_duplicate``.
        envelope: ``SnsEnvelope()`` (a queue subscribed to a topic without raw message
            delivery: the payload is the JSON string in ``Message``, decoded and unwrapped) or
            ``EventBridgeEnvelope()`` (a rule's SQS target: paths name the event's fields,
            the fingerprint leaves out ``id`` and ``time``). Default None: the body is the
            payload. A path that names a field inside SNS's ``Message`` string without the
            declaration is refused here (``ValueError``), as it could never match.

    Messages are decoded as JSON with floats as ``Decimal`` (DynamoDB's number type).
    """

    def __init__(
        self,
        *,
        writes: WritesFn,
        notification: NotificationFn | None = None,
        event_id: EventIdSource | None = None,
        namespace: str = "event",
        tenant: TenantFn | None = None,
        requires_business_table: bool = False,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        effect: SingleItemEffect | DomainKeyedCreate | None = None,
        event_time: EventTimeSource | None = None,
        fingerprint: Fingerprint | None = None,
        envelope: Envelope | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not namespace or "#" in namespace:
            raise ValueError(f"namespace={namespace!r} must be non-empty and contain no '#'")
        _check_declared_paths(envelope, event_id, event_time, fingerprint)
        self.writes = writes
        self.notification = notification
        self.event_id = event_id or EventIdFromBody()
        self.namespace = namespace
        self.tenant = tenant
        self.requires_business_table = requires_business_table
        self.max_body_bytes = max_body_bytes
        self.effect = effect
        self.event_time = event_time
        self.envelope = envelope
        if fingerprint is None and isinstance(envelope, EventBridgeEnvelope):
            fingerprint = envelope.default_fingerprint()
        self.fingerprint = fingerprint or Fingerprint()
        self.clock = clock
        self.sleep = sleep

    # --- entry points ---------------------------------------------------------------------
    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        """Lambda entry: settings and clients come from the environment of THIS invocation."""
        refresh_from_env()
        try:
            runtime = Runtime.from_env()
        except ConfigurationError as exc:
            return _all_failed(event, str(exc))
        return self.process(event, context, runtime)

    def process(self, event: Mapping[str, Any], context: Any, runtime: Runtime) -> dict[str, Any]:
        """Process one SQS batch with explicit settings and clients."""
        settings = runtime.settings
        try:
            self.check(settings)
        except ConfigurationError as exc:
            return _all_failed(event, str(exc))
        source = self.event_id
        run = BatchRun(
            runtime,
            context,
            event,
            decode=lambda raw, now: self.decode(raw, settings, now),
            claims=placement(self.effect, runtime.dynamodb, settings),
            event_id_attribute=source.name if isinstance(source, EventIdFromAttribute) else None,
            now=int(self.clock()),
            sleep=self.sleep,
        )
        run.run()
        return run.response()

    def check(self, settings: Settings) -> None:
        """Raise ConfigurationError when this consumer cannot run with ``settings``."""
        if settings.tenant_layout and self.tenant is None:
            raise ConfigurationError(
                f"{env.STATE_KEY_LAYOUT}={env.LAYOUT_TENANT} needs a consumer built with tenant="
            )
        if self.notification is not None and not settings.topic_arn:
            raise ConfigurationError(
                f"{env.NOTIFICATION_TOPIC_ARN} is missing but this consumer sends notifications"
            )
        if (self.requires_business_table or self.effect) and not settings.business_table:
            raise ConfigurationError(f"{env.BUSINESS_TABLE} is missing or empty")
        if settings.fingerprint_fields is not None:
            try:
                _fingerprint_of_fields(settings.fingerprint_fields)
            except ValueError as exc:
                raise ConfigurationError(f"{env.FINGERPRINT_FIELDS}: {exc}") from None

    # --- pure per-record decoding ---------------------------------------------------------
    def decode(self, raw: Mapping[str, Any], settings: Settings, now: int) -> DecodedMessage:
        """Decode one record; raises PoisonMessage for anything that can never succeed and
        PluginError for an unexpected exception of consumer code (both carry the event id
        once it is known, so a DLQ copy keeps it)."""
        body = raw.get("body")
        if not isinstance(body, str):
            raise PoisonMessage(PoisonKind.NOT_JSON, "record has no text body")
        size = utf8_length(body)
        if size is None:
            raise PoisonMessage(PoisonKind.NOT_JSON, "body is not valid Unicode text")
        if size > self.max_body_bytes:
            raise PoisonMessage(
                PoisonKind.OVERSIZE, f"body is {size} bytes (max {self.max_body_bytes})"
            )
        try:
            message = json.loads(body, parse_float=Decimal)
        except json.JSONDecodeError as exc:
            # The decoder's message and position never quote the body itself.
            where = f" ({exc.msg} at position {exc.pos})"
            raise PoisonMessage(PoisonKind.NOT_JSON, f"body is not JSON{where}") from None
        except RecursionError:
            raise PoisonMessage(
                PoisonKind.NOT_JSON, "body is JSON nested deeper than the decoder allows"
            ) from None
        except ValueError:
            # e.g. an integer literal above Python's int-string conversion limit.
            raise PoisonMessage(PoisonKind.NOT_JSON, "body is not JSON") from None
        if self.envelope is not None:
            raw, message = self.envelope.unwrap(raw, message)
        event_id = self.event_id.extract(raw, message)
        try:
            return self._decode_rest(raw, message, event_id, settings, now)
        except (PoisonMessage, PluginError) as exc:
            exc.event_id = event_id
            raise

    def _decode_rest(
        self, raw: Mapping[str, Any], message: Any, event_id: str, settings: Settings, now: int
    ) -> DecodedMessage:
        tenant = None
        if settings.tenant_layout:
            assert self.tenant is not None  # checked by check()
            tenant = validate_tenant(_plugin_call(self.tenant, "tenant", message))
        key = state_key(
            tenant_layout=settings.tenant_layout,
            event_id=event_id,
            namespace=self.namespace,
            tenant=tenant,
        )
        if not isinstance(self.event_id, EventIdFromContentHash):
            # Content-hash ids ARE the body's hash: a conflict cannot occur, nothing to keep.
            definition = self.fingerprint
            if settings.fingerprint_fields is not None:
                definition = _fingerprint_of_fields(settings.fingerprint_fields)
            key = replace(key, fingerprint=definition.of(message, str(raw.get("body") or "")))
        ctx = WriteContext(
            event_id=event_id,
            message_id=str(raw.get("messageId", "")),
            business_table=settings.business_table,
            tenant=tenant,
            now=now,
        )
        items = list(_plugin_call(self.writes, "writes", message, ctx) or [])
        for position, item in enumerate(items):
            if (
                not isinstance(item, Mapping)
                or len(item) != 1
                or not set(item) <= ALLOWED_ITEM_KINDS
            ):
                raise SchemaError(
                    f"writes() item {position} is not one of {sorted(ALLOWED_ITEM_KINDS)}"
                )
            check_transact_item(position, item)
        if isinstance(self.effect, DomainKeyedCreate):
            self.effect.check(items, settings.business_table)
        elif self.effect is not None:
            assert self.effect.key_of_event is not None  # SingleItemEffect requires it
            derived = _plugin_call(self.effect.key_of_event, "key_of_event", event_id)
            self.effect.check(items, settings.business_table, self.effect.derived_key(derived))
        if 1 + len(items) > TRANSACT_MAX_ITEMS:
            raise PoisonMessage(
                PoisonKind.OVERSIZE,
                f"claim + {len(items)} writes exceed {TRANSACT_MAX_ITEMS} transaction items",
            )
        notification = None
        if self.notification is not None:
            notification = _plugin_call(self.notification, "notification", message, event_id)
            if notification is not None:
                notification = checked_notification(notification)
        event_time_ms = None
        if self.event_time is not None:
            event_time_ms = self.event_time.extract(raw, message)
        return DecodedMessage(
            event_id=event_id,
            key=key,
            items=items,
            notification=notification,
            event_time_ms=event_time_ms,
        )


def _check_declared_paths(
    envelope: Envelope | None,
    event_id: EventIdSource | None,
    event_time: EventTimeSource | None,
    fingerprint: Fingerprint | None,
) -> None:
    """Refuse, at construction, a declared path that can never name a field of the payload."""
    paths = []
    if isinstance(event_id, EventIdFromBody):
        paths.append((event_id.path, "EventIdFromBody"))
    if isinstance(event_time, EventTimeFromBody):
        paths.append((event_time.path, "EventTimeFromBody"))
    for path, what in paths:
        if envelope is None:
            check_paths_without_envelope(path, what)
        else:
            envelope.check_path(path, what)
    for field_ in fingerprint.fields if fingerprint else ():
        if isinstance(envelope, EventBridgeEnvelope):
            continue  # JMESPath quotes "detail-type": not a dotted path to check
        if envelope is None:
            check_paths_without_envelope(field_, "Fingerprint(fields)")
        else:
            envelope.check_path(field_, "Fingerprint(fields)")


def _all_failed(event: Mapping[str, Any], reason: str) -> dict[str, Any]:
    logger.error("configuration error: every record is reported failed", extra={"reason": reason})
    failures = []
    for raw in event.get("Records") or []:
        record_outcome(
            Outcome.FAILED,
            message_id=raw.get("messageId"),
            failure_class=CONFIGURATION_FAILURE_CLASS,
            reason=reason,
        )
        failures.append({"itemIdentifier": raw.get("messageId")})
    return {"batchItemFailures": failures}


# Consumer code raising these over a message means the message is malformed: the same message
# would raise again on every delivery.
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError, IndexError, LookupError)


def _plugin_call(fn: Callable[..., Any], name: str, *args: Any) -> Any:
    """Call consumer code; classify what it raises without ever quoting the message."""
    try:
        return fn(*args)
    except PoisonMessage:
        raise
    except RecursionError:
        raise SchemaError(f"{name}() could not handle the message: nested too deep") from None
    except decimal.DecimalException:
        # boto3's TypeSerializer traps Inexact/Rounded/Overflow/Underflow: DynamoDB's number
        # type cannot hold the value (more than 38 digits, or exponent out of range).
        raise SchemaError(
            f"{name}() met a number DynamoDB cannot hold (38 significant digits, "
            "1E-130 .. 9.9E+125)"
        ) from None
    except _MALFORMED as exc:
        # The exception text may quote the message: keep only its type.
        raise SchemaError(f"{name}() rejected the message ({type(exc).__name__})") from None
    except Exception as exc:
        raise PluginError(name, exc) from None
