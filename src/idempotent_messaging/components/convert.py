"""The one converter from a mapping to a component's args: ``args_from_mapping``.

Two callers hand a component its args as a mapping instead of the frozen args dataclass:
- a stack file: the object of one instance (``consumers.orders`` in ``Pulumi.<stage>.yaml``),
  camelCase keys, JSON values (``idempotent_messaging.stage``);
- the component provider host (``pulumi.provider.experimental``), when a program in another
  Pulumi language declares a component: Python field names, numbers as floats (protobuf
  Struct has one number type), nested dicts for nested args (``BusinessTableArgs``), Outputs
  where another resource's value flows in.

Either key style is accepted (``functionTimeoutSeconds`` or ``function_timeout_seconds``).
Every value is checked against its field's type hint and normalised (integral floats to
int, lists to tuples, nested mappings to their dataclass), so a mistake fails before any
resource with an ArgumentError whose path is the camelCase key path both callers spell
(``consumers.orders.businessTable.hashKey=None: is required by BusinessTableArgs``).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

import pulumi

from .errors import ArgumentError, camel, fail

T = TypeVar("T")

REMOVED_FIELDS: Mapping[tuple[str, str], str] = {
    ("IdempotentQueueConsumerArgs", "idempotency_strategy"): (
        "was removed in 0.2.0: the transactional strategy is the only one; delete the key"
    ),
}
"""(args class, field) -> why a field a stack file or a program may still name is gone."""

_NOT_PLAIN = (
    "must be a plain value (it decides which resources exist), not an output of another resource"
)


def args_from_mapping(
    args_type: type[T],
    values: Mapping[str, Any],
    path: str = "",
    *,
    defaults: Mapping[str, Any] | None = None,
) -> T:
    """``args_type`` (a frozen args dataclass) built from ``values``, keyed by its fields in
    camelCase or snake_case; ``defaults`` (same keys) fill the fields ``values`` leaves out,
    before the dataclass's own defaults. ``path`` is where ``values`` sits (``consumers.orders``;
    "" at the top): every error names its key below it. Unknown keys, a key given twice (in both
    styles), a value of the wrong type and a missing required field are ArgumentErrors."""
    if not (dataclasses.is_dataclass(args_type) and isinstance(args_type, type)):
        raise TypeError(f"{args_type!r} is not a dataclass")
    if not isinstance(values, Mapping):
        raise fail(path or "args", values, f"must be an object of {args_type.__name__} fields")
    fields = _fields(args_type)
    kwargs = {
        **_kwargs(args_type, fields, defaults or {}, path),
        **_kwargs(args_type, fields, values, path),
    }
    for name, spec in fields.items():
        required = (
            spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
        )
        if required and name not in kwargs:
            raise fail(_key_path(path, name), None, f"is required by {args_type.__name__}")
    return args_type(**kwargs)


def component_args(args_type: type[T], args: Any) -> T:
    """A component's args: the dataclass as given (Python programs), or built from the mapping
    of schema inputs the component provider host passes (other Pulumi languages)."""
    if isinstance(args, Mapping):
        args = args_from_mapping(args_type, args)
    if not isinstance(args, args_type):
        raise fail("args", type(args).__name__, f"must be {args_type.__name__}")
    return args


def _fields(args_type: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(args_type)}


def _key_path(path: str, name: str) -> str:
    return f"{path}.{camel(name)}" if path else camel(name)


def _kwargs(
    args_type: type,
    fields: Mapping[str, dataclasses.Field[Any]],
    values: Mapping[str, Any],
    path: str,
) -> dict[str, Any]:
    """``values`` as checked keyword arguments of ``args_type`` (snake_case keys)."""
    by_key = {**{camel(name): name for name in fields}, **{name: name for name in fields}}
    hints = _hints(args_type)
    kwargs: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for key, value in values.items():
        name = by_key.get(key) if isinstance(key, str) else None
        key_path = f"{path}.{key}" if path else str(key)
        removed = _removed(args_type, key)
        if removed is not None:
            raise fail(key_path, value, removed)
        if name is None:
            camel_style = isinstance(key, str) and "_" not in key
            known = sorted(camel(n) if camel_style else n for n in fields)
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; its fields: {known}"
            raise fail(key_path, value, f"is not a field of {args_type.__name__}{hint}")
        if name in given_as:
            raise fail(
                key_path, value, f"is given twice (as {given_as[name]!r} and {key!r}); keep one"
            )
        given_as[name] = key
        kwargs[name] = _convert(_key_path(path, name), value, hints[name])
    return kwargs


def _removed(args_type: type, key: object) -> str | None:
    for (owner, name), why in REMOVED_FIELDS.items():
        if owner == args_type.__name__ and key in (name, camel(name)):
            return why
    return None


def _hints(args_type: type) -> dict[str, Any]:
    # pulumi.Input refers to ``Output[T]`` by a forward reference that only resolves in the
    # namespace of pulumi's output module.
    return typing.get_type_hints(args_type, localns=dict(vars(pulumi.output)))


def _takes_outputs(member: Any) -> bool:
    """A union member that is (or stands for) ``pulumi.Output``: the field is an Input."""
    if typing.get_origin(member) is pulumi.Output:
        return True
    return isinstance(member, typing.ForwardRef) and member.__forward_arg__.startswith("Output")


def _convert(path: str, value: Any, hint: Any) -> Any:
    """One value checked (and normalised) against a field's type hint; ``path`` is its key
    path, e.g. ``alarmEmails[1]`` or ``environment.MY_SETTING`` (mapping keys are kept)."""
    origin = typing.get_origin(hint)
    members = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in members:
            return None
        if isinstance(value, pulumi.Output):
            if any(_takes_outputs(m) for m in members):
                return value
            raise fail(path, value, _NOT_PLAIN)
        usable = [
            m
            for m in members
            if m is not type(None)
            and not _takes_outputs(m)
            and typing.get_origin(m) is not collections.abc.Awaitable
        ]
        errors: list[ArgumentError] = []
        for member in usable:
            try:
                return _convert(path, value, member)
            except ArgumentError as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
        raise fail(path, value, f"has no type a value can be checked against in {hint}")
    if isinstance(value, pulumi.Output):
        raise fail(path, value, _NOT_PLAIN)
    if hint is bool:
        if not isinstance(value, bool):
            raise fail(path, value, "must be true or false")
        return value
    if hint is int:
        # Numbers cross the provider boundary as floats (protobuf Struct has one number type).
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(path, value, "must be an integer")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise fail(path, value, "must be a string")
        return value
    if isinstance(hint, type) and issubclass(hint, pulumi.Archive):
        if not isinstance(value, pulumi.Archive):
            raise fail(
                path,
                value,
                "must be a pulumi archive (an AssetArchive or a FileArchive), a value built in "
                "code: it cannot be set from config",
            )
        return value
    if origin in (collections.abc.Sequence, list, tuple):
        if not isinstance(value, list | tuple):
            raise fail(path, value, "must be a list")
        return tuple(_convert(f"{path}[{i}]", v, members[0]) for i, v in enumerate(value))
    if origin in (collections.abc.Mapping, dict):
        if not isinstance(value, Mapping):
            raise fail(path, value, "must be an object")
        return {str(k): _convert(f"{path}.{k}", v, members[1]) for k, v in value.items()}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if isinstance(value, hint):
            return value
        if not isinstance(value, Mapping):
            raise fail(path, value, f"must be an object of {hint.__name__} fields")
        return args_from_mapping(hint, value, path)
    raise fail(path, value, f"has a type no mapping value is converted to: {hint}")
