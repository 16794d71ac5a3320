"""Idempotent consumer runtime: database exactly-once, notification at-least-once.

Public API (stable; see docs/runtime.md for the full contract)::

    from idempotent_messaging.runtime import (
        Consumer, WriteContext, Notification, SchemaError, lambda_handler,
        EventIdFromBody, EventIdFromAttribute, EventIdFromContentHash,
    )

    def writes(message, ctx: WriteContext) -> list[dict]:
        # DynamoDB TransactWriteItems elements, low-level client format:
        # {"Put": {...}} | {"Update": {...}} | {"ConditionCheck": {...}}
        # ctx: event_id, message_id, business_table (env BUSINESS_TABLE), tenant, now (epoch s)
        # raise SchemaError("reason without message content") for a malformed message
        ...

    def notification(message, event_id: str) -> Notification | None:
        return Notification(message="...", subject=None, attributes={"k": "v"})

    CONSUMER = Consumer(
        writes=writes,
        notification=notification,          # or None: claim is written directly as "sent"
        event_id=EventIdFromBody("event_id"),  # | EventIdFromAttribute(name)
                                               # | EventIdFromContentHash()
        namespace="charge",                 # tenant layout: sk = "<namespace>#<event id>"
        tenant=lambda message: message["tenant_id"],  # required when STATE_KEY_LAYOUT=tenant
        requires_business_table=True,       # refuse to run without BUSINESS_TABLE
        effect=SingleItemEffect.keyed_by_event_id("event_id"),  # optional: the effect is
                                            # ONE item whose key derives from the event id
                                            # (or SingleItemEffect(key=(...), key_of_event=f));
                                            # the claim lives in it; or
                                            # DomainKeyedCreate(key=("order_id",)): ONE create
                                            # keyed by a business key, claim then row
        event_time=EventTimeFromBody("occurred_at"),  # optional: the event's own time
    )

    handler = lambda_handler(CONSUMER)  # Powertools Logger (context keys) + Metrics flush
    # == CONSUMER.handle(event, context) -> {"batchItemFailures": [...]}; context may be None

``handle`` reads Settings (runtime/env.py names) and builds boto3 clients at
invocation time, cached by region/endpoint, so env changes between invocations take effect.
``Consumer.process(event, context, Runtime(settings, dynamodb, sns, sqs))`` takes them
explicitly (tests). One message's path, module by module, is drawn in docs/runtime.md.
"""

from __future__ import annotations

from idempotent_messaging.runtime.claims import DomainKeyedCreate, KeyIsEventId, SingleItemEffect
from idempotent_messaging.runtime.consumer import (
    Consumer,
    EventBridgeEnvelope,
    EventIdFromAttribute,
    EventIdFromBody,
    EventIdFromContentHash,
    EventTimeFromAttribute,
    EventTimeFromBody,
    Fingerprint,
    SnsEnvelope,
    WriteContext,
)
from idempotent_messaging.runtime.entry import lambda_handler
from idempotent_messaging.runtime.errors import (
    ConfigurationError,
    FailureClass,
    PoisonKind,
    PoisonMessage,
    SchemaError,
)
from idempotent_messaging.runtime.notify import Notification
from idempotent_messaging.runtime.observability import Outcome, logger, metrics
from idempotent_messaging.runtime.settings import Runtime, Settings

__all__ = [
    "ConfigurationError",
    "Consumer",
    "DomainKeyedCreate",
    "EventBridgeEnvelope",
    "EventIdFromAttribute",
    "EventIdFromBody",
    "EventIdFromContentHash",
    "EventTimeFromAttribute",
    "EventTimeFromBody",
    "FailureClass",
    "Fingerprint",
    "KeyIsEventId",
    "Notification",
    "Outcome",
    "PoisonKind",
    "PoisonMessage",
    "Runtime",
    "SchemaError",
    "Settings",
    "SingleItemEffect",
    "SnsEnvelope",
    "WriteContext",
    "lambda_handler",
    "logger",
    "metrics",
]
