"""Typed stage config: what differs between stages, read once from Pulumi config.

Stack-wide settings are flat keys (``logLevel``, ``tracing``, ...). Per-component settings
are ONE object per component instance, keyed by the instance name, under ``consumers`` (one
IdempotentQueueConsumer each) and ``fanouts`` (one MonthlyFanout each). An instance's object
takes any field of the component's args dataclass whose value config can hold, in camelCase
(``functionTimeoutSeconds`` is ``function_timeout_seconds``): the args dataclass is the schema,
so a new consumer or a new setting needs no config code here.

Errors name the full key path, the form ``pulumi config set --path`` takes:
``consumers.orders.functionTimeoutSeconds=0: must be between 1 and 900 seconds``.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import json
import types
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pulumi

from .validation import InvalidArgument

CONSUMERS_KEY = "consumers"
FANOUTS_KEY = "fanouts"


class ConfigError(ValueError):
    """A stage config value that is malformed; the message starts with its key path."""

    def __init__(self, path: str, value: Any, rule: str) -> None:
        super().__init__(f"{path}={value!r}: {rule}")
        self.path = path


def camel(snake: str) -> str:
    """``function_timeout_seconds`` -> ``functionTimeoutSeconds`` (dotted paths part by part)."""

    def one(name: str) -> str:
        head, *rest = name.split("_")
        return head + "".join(part.capitalize() for part in rest)

    return ".".join(one(part) for part in snake.split("."))


@dataclass(frozen=True, kw_only=True)
class StageConfig:
    """Stage settings; field ``x_y`` is config key ``xY`` of the idempotent-messaging project."""

    log_level: str = "INFO"
    log_retention_days: int = 30
    alarm_emails: tuple[str, ...] = ()
    tracing: bool = False
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
        emails = _object(config, "alarmEmails")
        if emails is not None:
            if not isinstance(emails, list) or not all(isinstance(e, str) for e in emails):
                raise ConfigError("alarmEmails", emails, "must be a list of email addresses")
            values["alarm_emails"] = tuple(emails)
        for key in (CONSUMERS_KEY, FANOUTS_KEY):
            instances = _object(config, key)
            if instances is None:
                continue
            if not isinstance(instances, dict):
                raise ConfigError(key, instances, "must be an object: instance name -> settings")
            for name, settings in instances.items():
                if not isinstance(settings, dict):
                    raise ConfigError(
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
        raise ConfigError(key, raw, "is not a structured value (object or list)") from None


# --- Component args from a config object -------------------------------------------------------

_NOT_CONFIGURABLE = object()


def settings_to_kwargs(path: str, settings: Mapping[str, Any], args_type: type) -> dict[str, Any]:
    """Config object (camelCase keys) -> keyword arguments of ``args_type``, each value checked
    against the field's type. Unknown keys and fields config cannot hold are refused."""
    hints = _hints(args_type)
    by_key = {camel(f.name): f for f in dataclasses.fields(args_type)}
    kwargs: dict[str, Any] = {}
    for key, value in settings.items():
        key_path = f"{path}.{key}"
        spec = by_key.get(key)
        if spec is None:
            known = sorted(k for k, f in by_key.items() if _configurable(hints[f.name]))
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known settings: {known}"
            raise ConfigError(key_path, value, f"is not a setting of {args_type.__name__}{hint}")
        converted = _convert(key_path, value, hints[spec.name])
        if converted is _NOT_CONFIGURABLE:
            raise ConfigError(
                key_path, value, "cannot be set from config (it takes a value built in code)"
            )
        kwargs[spec.name] = converted
    return kwargs


def build_args(path: str, args_type: type, kwargs: Mapping[str, Any]) -> Any:
    """``args_type(**kwargs)``, a missing required field reported under ``path``."""
    missing = [
        f.name
        for f in dataclasses.fields(args_type)
        if f.name not in kwargs
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(
            f"{path}.{camel(missing[0])}", None, f"is required by {args_type.__name__}"
        )
    return args_type(**kwargs)


@contextmanager
def config_path(path: str) -> Iterator[None]:
    """Re-raise a component's argument error under the config key path that set it."""
    try:
        yield
    except InvalidArgument as exc:
        raise ConfigError(f"{path}.{camel(exc.field)}", exc.value, exc.rule) from exc


def _configurable(hint: Any) -> bool:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_plain_type(m) for m in typing.get_args(hint) if m is not type(None))
    return _plain_type(hint)


def _convert(path: str, value: Any, hint: Any) -> Any:
    """Check (and normalise) one config value against a type hint of an args field."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        members = typing.get_args(hint)
        if value is None and type(None) in members:
            return None
        usable = [m for m in members if m is not type(None) and _plain_type(m)]
        if not usable:
            return _NOT_CONFIGURABLE
        errors: list[ConfigError] = []
        for member in usable:
            try:
                return _convert(path, value, member)
            except ConfigError as exc:
                errors.append(exc)
        raise errors[0]
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, value, "must be true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, value, "must be an integer")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(path, value, "must be a string")
        return value
    if origin in (collections.abc.Sequence, list, tuple):
        (item,) = typing.get_args(hint)[:1]
        if not isinstance(value, list):
            raise ConfigError(path, value, "must be a list")
        return tuple(_convert(f"{path}[{i}]", v, item) for i, v in enumerate(value))
    if origin in (collections.abc.Mapping, dict):
        _, item = typing.get_args(hint)
        if not isinstance(value, dict):
            raise ConfigError(path, value, "must be an object")
        return {str(k): _convert(f"{path}.{k}", v, item) for k, v in value.items()}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            raise ConfigError(path, value, "must be an object")
        return build_args(path, hint, settings_to_kwargs(path, value, hint))
    return _NOT_CONFIGURABLE


def _plain_type(hint: Any) -> bool:
    """Types config can hold: scalars, lists, objects and dataclasses of them (an Input's
    Awaitable/Output members and Archives are not)."""
    origin = typing.get_origin(hint)
    if hint in (bool, int, str):
        return True
    if origin in (collections.abc.Sequence, collections.abc.Mapping, list, tuple, dict):
        return True
    return dataclasses.is_dataclass(hint) and isinstance(hint, type)


def _hints(args_type: type) -> dict[str, Any]:
    # pulumi.Input refers to ``Output[T]`` by a forward reference that only resolves in the
    # namespace of pulumi's output module.
    return typing.get_type_hints(args_type, localns=dict(vars(pulumi.output)))
