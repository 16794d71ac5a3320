"""Typed stage config: the settings that differ between stages, read once from Pulumi config.

Stack-wide settings are flat keys (``logLevel``, ``tracing``, ...). Per-component settings
are ONE object per component instance, keyed by the instance name, under ``consumers`` (one
IdempotentQueueConsumer each) and ``fanouts`` (one MonthlyFanout each). An instance's object
takes any field of the component's args dataclass whose value config can hold, in camelCase
(``functionTimeoutSeconds`` is ``function_timeout_seconds``): the args dataclass is the schema
(``args_from_mapping`` converts the object), so a new consumer or a new setting needs no
config code here.

Errors name the full key path, the form ``pulumi config set --path`` takes:
``consumers.orders.functionTimeoutSeconds=0: must be between 1 and 900 seconds``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import pulumi

from idempotent_messaging.components.errors import ArgumentError, camel, reported_under

CONSUMERS_KEY = "consumers"
FANOUTS_KEY = "fanouts"


@dataclass(frozen=True, kw_only=True)
class StageConfig:
    """Stage settings; field ``x_y`` is config key ``xY`` of the idempotent-messaging project."""

    log_level: str = "INFO"
    log_retention_days: int = 30
    alarm_emails: tuple[str, ...] = ()
    tracing: bool = False
    protect_data: bool = True
    """Default true: every consumer's and fan-out's queues and tables are protected (Pulumi
    protect + retain_on_delete, DynamoDB deletion protection); a stage of disposable data sets
    ``protectData: false``. An instance's own ``protectData`` wins (docs/deploy-safety.md)."""
    consumers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Consumer name -> its config object (camelCase keys, not yet checked against the args)."""
    fanouts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Fan-out name -> its config object."""

    @staticmethod
    def config_key(field_name: str) -> str:
        """``log_retention_days`` -> ``logRetentionDays``."""
        return camel(field_name)

    @classmethod
    def from_pulumi_config(cls, config: pulumi.Config) -> StageConfig:
        """Read every field from config; absent keys keep the defaults above."""
        values: dict[str, Any] = {}
        if (level := config.get("logLevel")) is not None:
            values["log_level"] = level
        if (days := config.get_int("logRetentionDays")) is not None:
            values["log_retention_days"] = days
        if (tracing := config.get_bool("tracing")) is not None:
            values["tracing"] = tracing
        if (protect := config.get_bool("protectData")) is not None:
            values["protect_data"] = protect
        emails = _object(config, "alarmEmails")
        if emails is not None:
            if not isinstance(emails, list) or not all(isinstance(e, str) for e in emails):
                raise ArgumentError("alarmEmails", emails, "must be a list of email addresses")
            values["alarm_emails"] = tuple(emails)
        for key in (CONSUMERS_KEY, FANOUTS_KEY):
            instances = _object(config, key)
            if instances is None:
                continue
            if not isinstance(instances, dict):
                raise ArgumentError(key, instances, "must be an object: instance name -> settings")
            for name, settings in instances.items():
                if not isinstance(settings, dict):
                    raise ArgumentError(
                        f"{key}.{name}", settings, "must be an object of settings ({} for none)"
                    )
            values[key] = instances
        return cls(**values)


def _object(config: pulumi.Config, key: str) -> Any:
    """A structured value (the CLI hands objects and arrays to programs JSON-encoded)."""
    raw = config.get(key)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise ArgumentError(key, raw, "is not a structured value (object or list)") from None


def config_path(path: str) -> AbstractContextManager[None]:
    """Re-raise a component's argument error under the config key path that set it:
    ``function_timeout_seconds=0: ...`` becomes ``consumers.orders.functionTimeoutSeconds=0: ...``
    within ``config_path("consumers.orders")``."""
    return reported_under(path)
