"""Component args from a mapping: how a program in another Pulumi language reaches a component.

The component provider host (``pulumi.provider.experimental``) maps the schema's camelCase
inputs to Python names and calls ``Component(name, inputs, opts)`` with ``inputs`` a dict
(nested dicts for ``BusinessTableArgs``), not the args dataclass. ``args_from_inputs`` checks
every value against the dataclass field's type and builds the dataclass; ``schema_names``
re-raises a component's argument errors under the schema's (camelCase) input names, so a
TypeScript or YAML program is told ``functionTimeoutSeconds=0: ...`` in its own terms.
"""

import collections.abc
import dataclasses
import types
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import pulumi
from pulumi.provider.experimental.util import camel_case

from .validation import InvalidArgument, fail

T = TypeVar("T")


def schema_name(python_path: str) -> str:
    """``business_table.hash_key`` -> ``businessTable.hashKey``: the analyzer's camel case
    (pulumi.provider.experimental.util.camel_case), applied part by part."""
    return ".".join(camel_case(part) for part in python_path.split("."))


@contextmanager
def schema_names(active: bool) -> Iterator[None]:
    """While active, re-raise an InvalidArgument under the schema's name of its field."""
    try:
        yield
    except InvalidArgument as exc:
        if not active:
            raise
        raise InvalidArgument(schema_name(exc.field), exc.value, exc.rule) from exc


def args_from_inputs(args_type: type, inputs: Mapping[str, Any], path: str = "") -> Any:
    """``args_type`` (a dataclass) built from a mapping of its Python field names, each value
    checked against the field's type. Errors name the schema path (``businessTable.hashKey``);
    ``path`` is the schema path of ``inputs`` itself ("" at the top)."""
    if not isinstance(inputs, Mapping):
        raise fail(path or "args", inputs, f"must be an object of {args_type.__name__} inputs")
    hints = typing.get_type_hints(args_type, localns=dict(vars(pulumi.output)))
    fields = {f.name: f for f in dataclasses.fields(args_type)}

    def field_path(name: str) -> str:
        return f"{path}.{camel_case(name)}" if path else camel_case(name)

    kwargs: dict[str, Any] = {}
    for key, value in inputs.items():
        if key not in fields:
            raise fail(field_path(key), value, f"is not an input of {args_type.__name__}")
        kwargs[key] = _convert(field_path(key), value, hints[key])
    for name, spec in fields.items():
        no_default = (
            spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
        )
        if name not in kwargs and no_default:
            raise fail(field_path(name), None, f"is required by {args_type.__name__}")
    return args_type(**kwargs)


def component_args(args_type: type[T], args: Any) -> T:
    """The component's args dataclass: given as such (Python programs), or built from the dict
    of schema inputs the component provider host passes (other Pulumi languages)."""
    if isinstance(args, Mapping):
        args = args_from_inputs(args_type, args)
    if not isinstance(args, args_type):
        raise fail("args", type(args).__name__, f"must be {args_type.__name__}")
    return args


def _convert(path: str, value: Any, hint: Any) -> Any:
    """One value checked (and normalised) against a field's type hint; ``path`` is its schema
    path, e.g. ``alarmEmails[1]`` or ``environment.MY_SETTING`` (mapping keys are kept)."""
    origin = typing.get_origin(hint)
    members = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in members:
            return None
        if isinstance(value, pulumi.Output):
            if any(typing.get_origin(m) is pulumi.Output for m in members) or any(
                isinstance(m, typing.ForwardRef) and m.__forward_arg__.startswith("Output")
                for m in members
            ):
                return value
            raise fail(
                path,
                value,
                "must be a plain value (it decides which resources exist), not an output of "
                "another resource",
            )
        usable = [
            m
            for m in members
            if m is not type(None)
            and typing.get_origin(m) not in (pulumi.Output, collections.abc.Awaitable)
            and not isinstance(m, typing.ForwardRef)
        ]
        errors: list[InvalidArgument] = []
        for member in usable:
            try:
                return _convert(path, value, member)
            except InvalidArgument as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
        raise fail(path, value, f"has no usable type in {hint}")
    if isinstance(value, pulumi.Output):
        raise fail(
            path,
            value,
            "must be a plain value (it decides which resources exist), not an output of "
            "another resource",
        )
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
            raise fail(path, value, "must be an archive (an asset archive)")
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
        return args_from_inputs(hint, value, path)
    raise fail(path, value, f"has a type the provider cannot build: {hint}")
