"""The consumer contract: plug-in types, per-record decoding, the settings a consumer needs.

Nothing here makes an AWS call or knows a batch algorithm: the strategies
(``idempotent_messaging.runtime.strategies``) run decoded records through DynamoDB, SNS and SQS, and
``idempotent_messaging.runtime.consumer.Consumer`` picks one for each invocation.
"""

from __future__ import annotations

import decimal
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.clients import clients_from_env
from idempotent_messaging.runtime.errors import (
    ConfigurationError,
    PoisonKind,
    PoisonMessage,
    SchemaError,
)
from idempotent_messaging.runtime.keys import (
    EventIdFromBody,
    EventIdSource,
    StateKey,
    state_key,
    utf8_length,
    validate_tenant,
)
from idempotent_messaging.runtime.limits import check_transact_item
from idempotent_messaging.runtime.notify import PUBLISH_BATCH_MAX_BYTES, Notification
from idempotent_messaging.runtime.settings import POWERTOOLS_WITHDRAWN, Settings
from idempotent_messaging.runtime.store import ALLOWED_ITEM_KINDS, TRANSACT_MAX_ITEMS, TransactItem

DEFAULT_MAX_BODY_BYTES = 256 * 1024
"""Bodies above this are poison: the notification (SNS: 256 KiB) and the business row
(DynamoDB: 400 KB) could never hold them."""


@dataclass(frozen=True)
class SingleItemEffect:
    """A consumer's declaration: "my business effect is ONE item whose key derives from the
    event" (one order row per order, one ledger row per tenant/employee/month).

    Then ``writes`` returns exactly one ``Put`` on ``BUSINESS_TABLE`` holding the ``key``
    attributes, and the runtime keeps the claim IN that item (``claim_event_id``,
    ``claim_status`` ``pending``/``sent``, ...), guarded by the item's own condition
    (``attribute_not_exists`` over ``key``, and the Put's own condition if any): one
    transactional write instead of two. A redelivery finds the item: its ``claim_event_id`` is
    this event (a duplicate: ``sent`` -> skip, ``pending`` -> publish, then mark) or another
    event (a semantic failure: the item already holds another event's effect). The claim lives
    as long as the item: no TTL. Never guessed: a consumer without this declaration keeps the
    separate claim item.
    """

    key: tuple[str, ...]
    """The business table's key attribute names (partition key, then sort key if any)."""

    def __post_init__(self) -> None:
        if not 1 <= len(self.key) <= 2 or not all(isinstance(k, str) and k for k in self.key):
            raise ValueError(
                f"SingleItemEffect(key={self.key!r}): name the table's partition key and, if it "
                "has one, its sort key"
            )
        reserved = set(self.key) & set(env.ITEM_CLAIM_ATTRIBUTES)
        if reserved:
            raise ValueError(f"SingleItemEffect(key={self.key!r}): {sorted(reserved)} reserved")

    def check(self, items: Sequence[TransactItem], business_table: str | None) -> None:
        """SchemaError unless ``items`` is exactly one Put on ``business_table`` with the key."""
        if len(items) != 1 or "Put" not in items[0]:
            raise SchemaError(
                f"writes() returned {len(items)} items; a single-item consumer returns one Put"
            )
        put = items[0]["Put"]
        if put.get("TableName") != business_table:
            raise SchemaError("writes() Put of a single-item consumer must target BUSINESS_TABLE")
        item = put.get("Item") or {}
        missing = [name for name in self.key if name not in item]
        if missing:
            raise SchemaError(f"writes() Put lacks the key attributes {missing}")
        reserved = sorted(set(item) & set(env.ITEM_CLAIM_ATTRIBUTES))
        if reserved:
            raise SchemaError(f"writes() Put sets the runtime's claim attributes {reserved}")


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


@dataclass(frozen=True)
class Runtime:
    """Settings and clients for one invocation (inject it in tests; ``from_env`` in Lambda)."""

    settings: Settings
    dynamodb: Any
    sns: Any
    sqs: Any

    @classmethod
    def from_env(cls) -> Runtime:
        clients = clients_from_env()
        return cls(Settings.from_env(), clients.dynamodb, clients.sns, clients.sqs)


class ConsumerContract:
    """What a consumer author declares: the plug-ins, how records decode, what settings it needs.

    ``idempotent_messaging.runtime.Consumer`` adds the entry points (``handle``/``process``)
    that run a batch through the strategy the settings choose.

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
        effect: ``SingleItemEffect(key=(...))`` declares that the business effect is ONE item
            of ``BUSINESS_TABLE`` whose key derives from the event: the claim then lives in
            that item (see ``SingleItemEffect``). Omitted: a separate claim item in the state
            table, for effects of any shape.

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
        effect: SingleItemEffect | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not namespace or "#" in namespace:
            raise ValueError(f"namespace={namespace!r} must be non-empty and contain no '#'")
        self.writes = writes
        self.notification = notification
        self.event_id = event_id or EventIdFromBody()
        self.namespace = namespace
        self.tenant = tenant
        self.requires_business_table = requires_business_table
        self.max_body_bytes = max_body_bytes
        self.effect = effect
        self.clock = clock
        self.sleep = sleep

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
        if settings.strategy == env.STRATEGY_POWERTOOLS:
            raise ConfigurationError(POWERTOOLS_WITHDRAWN)

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
        if self.effect is not None:
            self.effect.check(items, settings.business_table)
        if 1 + len(items) > TRANSACT_MAX_ITEMS:
            raise PoisonMessage(
                PoisonKind.OVERSIZE,
                f"claim + {len(items)} writes exceed {TRANSACT_MAX_ITEMS} transaction items",
            )
        notification = None
        if self.notification is not None:
            notification = _plugin_call(self.notification, "notification", message, event_id)
            if notification is not None:
                notification = _checked_notification(notification)
        return DecodedMessage(event_id=event_id, key=key, items=items, notification=notification)


@dataclass(frozen=True)
class DecodedMessage:
    event_id: str
    key: StateKey
    items: list[TransactItem]
    notification: Notification | None


class PluginError(Exception):
    """Consumer code raised an exception the runtime cannot classify: the record is reported
    failed ALONE (possibly transient; SQS redelivers it, its redrive policy bounds it)."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(f"{name}() raised {type(error).__name__}")
        self.reason = f"{name}() raised {type(error).__name__}"
        self.event_id: str | None = None


def _checked_notification(notification: Any) -> Notification:
    if not isinstance(notification, Notification):
        raise SchemaError(
            f"notification() returned a {type(notification).__name__}, not a Notification"
        )
    texts = [notification.message, notification.subject or ""]
    for name, value in dict(notification.attributes).items():
        texts.extend((name, value))
    if not all(isinstance(t, str) and utf8_length(t) is not None for t in texts):
        raise SchemaError("notification() returned text that is not valid Unicode strings")
    if notification.size() > PUBLISH_BATCH_MAX_BYTES:
        raise PoisonMessage(
            PoisonKind.OVERSIZE,
            f"notification is {notification.size()} bytes (max {PUBLISH_BATCH_MAX_BYTES})",
        )
    return notification


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
