"""What one invocation runs with: ``Settings`` read from the environment the component sets,
``Runtime`` (the settings plus the boto3 clients), and ``is_fifo``, the one FIFO test."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.clients import clients_from_env
from idempotent_messaging.runtime.errors import ConfigurationError

FIFO_SUFFIX = ".fifo"


def is_fifo(name_url_or_arn: str) -> bool:
    """SQS and SNS require a FIFO queue's or topic's name to end in ``.fifo`` (and refuse the
    suffix on standard ones), so the name, URL or ARN alone tells the kind."""
    return name_url_or_arn.endswith(FIFO_SUFFIX)


_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no", ""}


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything the runtime reads from the environment, validated once per invocation."""

    state_table: str
    """State (claim) table name; required."""
    key_layout: str = env.LAYOUT_EVENT_ID
    """``event_id`` (pk = event id) or ``tenant`` (pk = tenant id, sk = namespace#event id)."""
    ttl_attribute: str = env.DEFAULT_TTL_ATTRIBUTE
    claim_ttl_seconds: int = env.DEFAULT_CLAIM_TTL_SECONDS
    """90 days by default; never shorter than source + DLQ retention (see docs/runtime.md)."""
    business_table: str | None = None
    topic_arn: str | None = None
    dlq_url: str
    """Quarantine target; required: nothing is ever dropped."""
    source_fifo: bool = False
    source_retention_seconds: int | None = None
    dlq_retention_seconds: int | None = None
    remaining_time_guard_ms: int = env.DEFAULT_REMAINING_TIME_GUARD_MS
    max_receive_count: int | None = None
    """The source queue's maxReceiveCount; None = unknown (no last-receive quarantine)."""
    fingerprint_fields: tuple[str, ...] | None = None
    """``FINGERPRINT_FIELDS`` (a JSON array of JMESPath expressions); None: unset, the
    consumer's own ``Consumer(fingerprint=...)`` applies."""

    def __post_init__(self) -> None:
        if not self.state_table:
            raise ConfigurationError(f"{env.STATE_TABLE} must not be empty")
        if not self.dlq_url:
            raise ConfigurationError(f"{env.DLQ_URL} must not be empty")
        if self.key_layout not in (env.LAYOUT_EVENT_ID, env.LAYOUT_TENANT):
            raise ConfigurationError(
                f"{env.STATE_KEY_LAYOUT}={self.key_layout!r} is invalid; "
                f"use {env.LAYOUT_EVENT_ID!r} or {env.LAYOUT_TENANT!r}"
            )
        if self.claim_ttl_seconds <= 0:
            raise ConfigurationError(
                f"{env.CLAIM_TTL_SECONDS}={self.claim_ttl_seconds} must be > 0"
            )
        if self.max_receive_count is not None and self.max_receive_count < 1:
            raise ConfigurationError(
                f"{env.MAX_RECEIVE_COUNT}={self.max_receive_count} must be >= 1"
            )
        if self.remaining_time_guard_ms < 0:
            raise ConfigurationError(
                f"{env.REMAINING_TIME_GUARD_MS}={self.remaining_time_guard_ms} must be >= 0"
            )
        retention = [
            v for v in (self.source_retention_seconds, self.dlq_retention_seconds) if v is not None
        ]
        if retention and self.claim_ttl_seconds < sum(retention):
            # An expired claim lets a late redelivery (or a redrive from the DLQ) claim the
            # event again and write the business row twice.
            raise ConfigurationError(
                f"{env.CLAIM_TTL_SECONDS}={self.claim_ttl_seconds} is shorter than "
                f"{env.SOURCE_RETENTION_SECONDS} + {env.DLQ_RETENTION_SECONDS} = "
                f"{sum(retention)}; a message still deliverable after its claim expired "
                "would be written twice; raise the claim TTL"
            )

    @property
    def tenant_layout(self) -> bool:
        return self.key_layout == env.LAYOUT_TENANT

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build from ``environ`` (default ``os.environ``); errors name the variable."""
        e = os.environ if environ is None else environ
        _refuse_strategy(e)
        return cls(
            state_table=_required(e, env.STATE_TABLE),
            key_layout=e.get(env.STATE_KEY_LAYOUT) or env.LAYOUT_EVENT_ID,
            ttl_attribute=e.get(env.STATE_TTL_ATTRIBUTE) or env.DEFAULT_TTL_ATTRIBUTE,
            claim_ttl_seconds=_int(e, env.CLAIM_TTL_SECONDS, env.DEFAULT_CLAIM_TTL_SECONDS),
            business_table=e.get(env.BUSINESS_TABLE) or None,
            topic_arn=e.get(env.NOTIFICATION_TOPIC_ARN) or None,
            dlq_url=_required(e, env.DLQ_URL),
            source_fifo=_bool(e, env.SOURCE_QUEUE_FIFO),
            source_retention_seconds=_optional_int(e, env.SOURCE_RETENTION_SECONDS),
            dlq_retention_seconds=_optional_int(e, env.DLQ_RETENTION_SECONDS),
            remaining_time_guard_ms=_int(
                e, env.REMAINING_TIME_GUARD_MS, env.DEFAULT_REMAINING_TIME_GUARD_MS
            ),
            max_receive_count=_optional_int(e, env.MAX_RECEIVE_COUNT),
            fingerprint_fields=_fingerprint_fields(e),
        )


def _refuse_strategy(e: Mapping[str, str]) -> None:
    """``IDEMPOTENCY_STRATEGY`` is no longer set: the runtime has one way to claim (the claim
    commits with the business write). The stale value older deployments set is accepted and
    ignored; anything else was set by hand for a behaviour that does not exist: refused."""
    value = e.get(env.IDEMPOTENCY_STRATEGY)
    if value and value != env.STALE_IDEMPOTENCY_STRATEGY:
        raise ConfigurationError(
            f"{env.IDEMPOTENCY_STRATEGY}={value!r} is refused: the variable is no longer read "
            "(the claim always commits with the business write); unset it, or leave the "
            f"stale value {env.STALE_IDEMPOTENCY_STRATEGY!r} older deployments set"
        )


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


def _required(e: Mapping[str, str], name: str) -> str:
    value = e.get(name)
    if not value:
        raise ConfigurationError(f"environment variable {name} is missing or empty")
    return value


def _optional_int(e: Mapping[str, str], name: str) -> int | None:
    raw = e.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"environment variable {name}={raw!r} is not an integer") from None
    if value < 0:
        raise ConfigurationError(f"environment variable {name}={raw!r} must be >= 0")
    return value


def _int(e: Mapping[str, str], name: str, default: int) -> int:
    value = _optional_int(e, name)
    return default if value is None else value


def _fingerprint_fields(e: Mapping[str, str]) -> tuple[str, ...] | None:
    raw = e.get(env.FINGERPRINT_FIELDS)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigurationError(
            f"environment variable {env.FINGERPRINT_FIELDS}={raw!r} is not a JSON array of "
            'JMESPath expressions (e.g. ["order.order_id","order.amount"])'
        )
    return tuple(value)


def _bool(e: Mapping[str, str], name: str) -> bool:
    raw = (e.get(name) or "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigurationError(f"environment variable {name}={raw!r} is not 'true' or 'false'")
