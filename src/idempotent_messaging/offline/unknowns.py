"""Values only the cloud knows: typed placeholders that stay unknown from the invoke to the pack.

During ``pulumi preview`` a data source runs for real (the engine asks AWS); offline it cannot,
so the value of an SSM parameter, the id of a looked-up VPC or the AMI ``get_ami`` would pick are
genuinely unknown. The offline engine never invents them for the pack, and never lets them crash
a program that uses them:

- An invoke result field the mocks cannot know (``offline.mocks`` decides which) reaches the
  program as a typed placeholder: ``UnknownStr`` / ``UnknownInt`` / ``UnknownFloat`` /
  ``UnknownBool``. They subclass ``str`` / ``int`` / ``float`` (so the provider SDK's result
  classes accept them and ``int(value)``, ``range(count)``, ``ipaddress.ip_network(cidr)`` or a
  base64 decode run) and ``pulumi.output.Unknown``, so the SDK itself treats them as the
  engine's unknowns: a resource input holding one is sent as the unknown sentinel, and an
  ``Output`` holding one is unknown (its ``apply`` callbacks do not run, as in a preview).
- What a program derives from one stays unknown: arithmetic and ``round``/``abs``/``divmod``/
  ``math.ceil``; ``int()``, ``float()``, ``min()`` and ``max()`` in the program's own modules
  (its ``__main__`` and the modules of its directory run with ``TRACKING_BUILTINS``); ``str()``,
  string concatenation, ``%``, ``.format``, ``.split`` and case changes; ``json.dumps``. An
  f-string or ``join`` that embeds one gets the unknown sentinel in its text (placeholder
  strings that no parser needs carry it), and the recorder reads any string holding the
  sentinel as unknown.
- What is lost, and said so: a conversion outside the program's own modules (an installed
  library calling ``int()`` on one) gives the placeholder number, with a note on stderr naming
  the line; a value the program parses out of a placeholder's text (``json.loads``, the subnets
  of a CIDR) is the placeholder's. Pin real values with ``--answers`` (``offline.answers``):
  answered fields are plain values and are judged.

``engine_patches()`` installs what makes the SDK hand these to the program (for the run only).
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import importlib.abc
import importlib.machinery
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pulumi
import pulumi.runtime
from google.protobuf import json_format, struct_pb2
from pulumi.output import Unknown
from pulumi.runtime import rpc

from ..rules.values import UNKNOWN_STRING_SENTINEL
from . import typed
from .errors import ProgramError

SENTINEL = UNKNOWN_STRING_SENTINEL

# Where provenance was lost in this run: (file, line, what, origin); the runner reports them.
LOST: contextvars.ContextVar[list[tuple[str | None, int | None, str, str]] | None] = (
    contextvars.ContextVar("offline_unknowns_lost", default=None)
)
# The invoke fields handed to the program as unknowns in this run ("token.field").
HANDED: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "offline_unknowns_handed", default=None
)


class UnsupportedError(ProgramError):
    """The program uses something the offline engine cannot stand in for (an invoke no
    installed provider SDK declares a result type for): no verdict, and the message names it
    and what to do. `feature` names it (e.g. the invoke token)."""

    def __init__(self, feature: str, message: str) -> None:
        super().__init__(message)
        self.feature = feature


class Unknowable(Unknown):
    """A value only the cloud knows; ``origin`` names the invoke and field it came from."""

    origin: str

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # the value is set by __new__
        pass


def _lost(value: Unknowable, what: str) -> None:
    """Record that `what` turned an unknown into a plain value, at the caller's line."""
    found = LOST.get()
    if found is None:
        return
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back  # type: ignore[assignment]
    file, line = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else (None, None)
    found.append((file, line, what, value.origin))


def derive(value: Any, origin: str) -> Any:
    """`value` as an unknown of its own type (tuples and lists element-wise)."""
    if isinstance(value, Unknowable):
        return value
    if isinstance(value, bool):
        return UnknownBool(value, origin)
    if isinstance(value, int):
        return UnknownInt(value, origin)
    if isinstance(value, float):
        return UnknownFloat(value, origin)
    if isinstance(value, str):
        return UnknownStr(value, origin)
    if isinstance(value, tuple):
        return tuple(derive(v, origin) for v in value)
    if isinstance(value, list):
        return [derive(v, origin) for v in value]
    return value


def origin_of(value: Any, depth: int = 0) -> str | None:
    """The origin of the first unknown inside `value` (dicts, lists, tuples), else None."""
    if isinstance(value, Unknowable):
        return value.origin
    if depth > 20:
        return None
    if isinstance(value, dict):
        items: Any = list(value.keys()) + list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    else:
        return None
    for item in items:
        found = origin_of(item, depth + 1)
        if found is not None:
            return found
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, UnknownStr):
        return str.__str__(value)
    if isinstance(value, UnknownBool):
        return int.__add__(value, 0)
    if isinstance(value, UnknownInt):
        return int.__add__(value, 0)
    if isinstance(value, UnknownFloat):
        return float.__add__(value, 0.0)
    return value


class UnknownStr(str, Unknowable):
    """A string only the cloud knows. Its text is a placeholder: shaped like the field (a CIDR,
    base64, JSON) where programs parse it, else carrying the unknown sentinel."""

    def __new__(cls, content: str, origin: str = "") -> UnknownStr:
        self = super().__new__(cls, content)
        self.origin = origin
        return self

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        return (str.__str__(self), self.origin)

    def _same(self, value: Any) -> Any:
        return derive(value, self.origin)

    def __str__(self) -> str:
        return self

    def __format__(self, spec: str) -> str:
        return self._same(str.__format__(self, spec))

    def __add__(self, other: Any) -> Any:
        if not isinstance(other, str):
            return NotImplemented
        return self._same(str.__str__(self) + _plain(other))

    def __radd__(self, other: Any) -> Any:
        if not isinstance(other, str):
            return NotImplemented
        return self._same(_plain(other) + str.__str__(self))

    def __mul__(self, n: Any) -> Any:
        return self._same(str.__str__(self) * _plain(n))

    __rmul__ = __mul__

    def __mod__(self, args: Any) -> Any:
        return self._same(str.__str__(self) % args)

    def __rmod__(self, template: Any) -> Any:
        if not isinstance(template, str):
            return NotImplemented
        return self._same(_plain(template) % str.__str__(self))

    def __getitem__(self, key: Any) -> Any:
        return self._same(str.__getitem__(self, key))

    def __int__(self) -> int:
        _lost(self, "int()")
        return _placeholder_number(self, int)

    def __float__(self) -> float:
        _lost(self, "float()")
        return _placeholder_number(self, float)


def _str_method(name: str) -> Callable[..., Any]:
    base = getattr(str, name)

    def method(self: UnknownStr, *args: Any, **kwargs: Any) -> Any:
        return self._same(base(self, *args, **kwargs))

    method.__name__ = name
    return method


for _name in (
    "format",
    "join",
    "replace",
    "lower",
    "upper",
    "casefold",
    "capitalize",
    "title",
    "swapcase",
    "strip",
    "lstrip",
    "rstrip",
    "removeprefix",
    "removesuffix",
    "split",
    "rsplit",
    "splitlines",
    "partition",
    "rpartition",
    "zfill",
    "ljust",
    "rjust",
    "center",
    "expandtabs",
):
    setattr(UnknownStr, _name, _str_method(_name))


def _placeholder_number(value: UnknownStr, kind: type) -> Any:
    try:
        return kind(str.__str__(value))
    except ValueError:
        return kind(1)


class _UnknownNumber(Unknowable):
    """Arithmetic keeps the unknown; text made from one carries the sentinel."""

    def __str__(self) -> str:
        return UnknownStr(SENTINEL, self.origin)

    def __format__(self, spec: str) -> str:
        return UnknownStr(SENTINEL, self.origin)

    def __int__(self) -> int:
        _lost(self, "int()")
        return int(_plain(self))

    def __float__(self) -> float:
        _lost(self, "float()")
        return float(_plain(self))


def _binary(fn: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[..., Any]:
    def method(self: Any, other: Any) -> Any:
        if not isinstance(other, (int, float)):
            return NotImplemented
        a, b = _plain(self), _plain(other)
        return derive(fn(b, a) if reflected else fn(a, b), self.origin)

    return method


def _unary(fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Any, *args: Any) -> Any:
        return derive(fn(_plain(self), *args), self.origin)

    return method


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "pow": lambda a, b: a**b,
    "divmod": divmod,
}
_INT_ONLY: dict[str, Callable[[Any, Any], Any]] = {
    "lshift": lambda a, b: a << b,
    "rshift": lambda a, b: a >> b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}
_UNARY: dict[str, Callable[..., Any]] = {
    "__neg__": lambda a: -a,
    "__pos__": lambda a: +a,
    "__abs__": abs,
    "__round__": round,
    "__trunc__": math.trunc,
    "__floor__": math.floor,
    "__ceil__": math.ceil,
}


class UnknownInt(int, _UnknownNumber):
    """An integer only the cloud knows (its value, 1 unless given, is a placeholder)."""

    def __new__(cls, value: int = 1, origin: str = "") -> UnknownInt:
        self = super().__new__(cls, value)
        self.origin = origin
        return self

    def __getnewargs__(self) -> tuple[int, str]:  # type: ignore[override]
        return (int.__add__(self, 0), self.origin)


class UnknownFloat(float, _UnknownNumber):
    """A number only the cloud knows (its value is a placeholder)."""

    def __new__(cls, value: float = 1.0, origin: str = "") -> UnknownFloat:
        self = super().__new__(cls, value)
        self.origin = origin
        return self

    def __getnewargs__(self) -> tuple[float, str]:  # type: ignore[override]
        return (float.__add__(self, 0.0), self.origin)


class UnknownBool(int, _UnknownNumber):
    """A boolean only the cloud knows. `bool` cannot be subclassed: this is a falsy int, which
    the SDK's result classes accept (they check the type of truthy values only)."""

    def __new__(cls, value: Any = False, origin: str = "") -> UnknownBool:
        self = super().__new__(cls, 1 if value else 0)
        self.origin = origin
        return self

    def __getnewargs__(self) -> tuple[int, str]:  # type: ignore[override]
        return (int.__add__(self, 0), self.origin)

    def __repr__(self) -> str:
        return "True" if int.__bool__(self) else "False"


for _cls in (UnknownInt, UnknownFloat, UnknownBool):
    for _op, _fn in _BINARY.items():
        setattr(_cls, f"__{_op}__", _binary(_fn))
        setattr(_cls, f"__r{_op}__", _binary(_fn, reflected=True))
    if _cls is not UnknownFloat:
        for _op, _fn in _INT_ONLY.items():
            setattr(_cls, f"__{_op}__", _binary(_fn))
            setattr(_cls, f"__r{_op}__", _binary(_fn, reflected=True))
    for _dunder, _fn in _UNARY.items():
        setattr(_cls, _dunder, _unary(_fn))


# --- the program's own builtins -------------------------------------------------------------


class _TrackingType:
    """Stands for `int` / `float` in the program's own modules: calling it on an unknown gives
    an unknown; everything else (isinstance, subclassing, `int.from_bytes`, `int | None`) is
    the builtin's. Only `type(x) is int` tells them apart."""

    def __init__(self, base: type, unknown: type) -> None:
        self._base, self._unknown = base, unknown

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], Unknowable):
            value = args[0]
            plain = _plain(value)
            try:
                number = self._base(plain, *args[1:], **kwargs)
            except (TypeError, ValueError):
                number = self._base(1)
            return self._unknown(number, value.origin)
        return self._base(*args, **kwargs)

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, self._base)

    def __subclasscheck__(self, cls: Any) -> bool:
        return issubclass(cls, self._base)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type]:
        return (self._base,)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

    def __eq__(self, other: object) -> bool:
        return other is self or other is self._base

    def __hash__(self) -> int:
        return hash(self._base)

    def __or__(self, other: Any) -> Any:
        return self._base | other

    def __ror__(self, other: Any) -> Any:
        return other | self._base

    def __repr__(self) -> str:
        return repr(self._base)


def _tracking_extreme(base: Callable[..., Any]) -> Callable[..., Any]:
    def extreme(*args: Any, **kwargs: Any) -> Any:
        items = list(args[0]) if len(args) == 1 else list(args)
        origin = next((v.origin for v in items if isinstance(v, Unknowable)), None)
        result = base(items, **kwargs) if len(args) == 1 else base(*items, **kwargs)
        return derive(result, origin) if origin is not None else result

    extreme.__name__ = base.__name__
    extreme.__doc__ = base.__doc__
    return extreme


TRACKING_BUILTINS: dict[str, Any] = {
    **vars(builtins),
    "int": _TrackingType(int, UnknownInt),
    "float": _TrackingType(float, UnknownFloat),
    "min": _tracking_extreme(min),
    "max": _tracking_extreme(max),
}


class _TrackingLoader(importlib.machinery.SourceFileLoader):
    def exec_module(self, module: Any) -> None:
        module.__dict__["__builtins__"] = TRACKING_BUILTINS
        super().exec_module(module)


class _TrackingFinder(importlib.abc.MetaPathFinder):
    """Imports the program's own modules (files under its directory, outside any virtualenv)
    with `TRACKING_BUILTINS`."""

    def __init__(self, root: Path) -> None:
        self.root = str(root.resolve()) + os.sep

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = getattr(spec, "origin", None) or ""
        if (
            spec is None
            or not origin.startswith(self.root)
            or "site-packages" in origin
            or not isinstance(spec.loader, importlib.machinery.SourceFileLoader)
        ):
            return None
        spec.loader = _TrackingLoader(spec.loader.name, spec.loader.path)
        return spec


@contextlib.contextmanager
def tracking_imports(root: Path) -> Iterator[None]:
    finder = _TrackingFinder(root)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


# --- what makes the SDK hand them to the program ----------------------------------------------


def _sentinelized(value: Any) -> Any:
    if isinstance(value, Unknowable):
        return SENTINEL
    if isinstance(value, dict):
        return {_sentinelized(k): _sentinelized(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_sentinelized(v) for v in value]
    return value


def _wrap(value: Any, kinds: Any, origin: str) -> Any:
    """The deserialized wire `value` of an unknown field as typed unknowns (`kinds` mirrors its
    shape: "str", "int", "float", "bool", "unknown", [item kinds], {key: kinds})."""
    if isinstance(kinds, list):
        items = value if isinstance(value, list) else []
        return [_wrap(v, kinds[0] if kinds else "str", origin) for v in items]
    if isinstance(kinds, dict):
        mapping = value if isinstance(value, dict) else {}
        return {k: _wrap(v, kinds.get(k), f"{origin}.{k}") for k, v in mapping.items()}
    if kinds == "unknown":
        return Unknown()
    if value is None:
        return None
    if kinds == "bool":
        return UnknownBool(False, origin)
    if kinds == "int":
        return UnknownInt(int(value) if isinstance(value, (int, float)) else 1, origin)
    if kinds == "float":
        return UnknownFloat(float(value) if isinstance(value, (int, float)) else 1.0, origin)
    if kinds == "str" or isinstance(value, str):
        return UnknownStr(str(value), origin)
    return value


def _deserialize_with_unknowns(original: Callable[..., Any]) -> Callable[..., Any]:
    def deserialize_properties(props_struct: Any, *args: Any, **kwargs: Any) -> Any:
        fields = getattr(props_struct, "fields", None)
        if fields is None or typed.UNKNOWN_FIELDS_KEY not in fields:
            return original(props_struct, *args, **kwargs)
        spec = json_format.MessageToDict(props_struct[typed.UNKNOWN_FIELDS_KEY])
        token, kinds = str(spec.get("token", "")), dict(spec.get("fields") or {})
        rest = struct_pb2.Struct()
        rest.CopyFrom(props_struct)
        del rest[typed.UNKNOWN_FIELDS_KEY]
        raw: dict[str, Any] = {}
        for name in kinds:
            if name in rest.fields:
                raw[name] = json_format.MessageToDict(rest.fields[name])
                del rest[name]
            else:
                raw[name] = None
        output = original(rest, *args, **kwargs)
        if isinstance(output, dict):
            handed = HANDED.get()
            for name, shape in kinds.items():
                output[name] = _wrap(raw[name], shape, f"{token}.{name}")
                if handed is not None:
                    handed.add(f"{token}.{name}")
        return output

    return deserialize_properties


_PLAIN_INVOKE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "offline_plain_invoke", default=False
)


def _plain_invoke(original: Callable[..., Any]) -> Callable[..., Any]:
    def invoke(*args: Any, **kwargs: Any) -> Any:
        token = _PLAIN_INVOKE.set(True)
        try:
            return original(*args, **kwargs)
        finally:
            _PLAIN_INVOKE.reset(token)

    return invoke


def _contains_unknowns(original: Callable[..., bool]) -> Callable[..., bool]:
    def struct_contains_unknowns(props_struct: Any) -> bool:
        # A plain (non-Output) invoke over an unknown is sent to the mocks, which answer with
        # a typed, wholly unknown result: the SDK would otherwise hand the generated code None
        # (`pulumi.get(None, ...)` fails). An Output-returning invoke keeps the SDK's own
        # behaviour (its Output is unknown).
        if _PLAIN_INVOKE.get():
            return False
        return original(props_struct)

    return struct_contains_unknowns


def _tracking_dumps(original: Callable[..., str]) -> Callable[..., str]:
    def dumps(obj: Any, *args: Any, **kwargs: Any) -> str:
        origin = origin_of(obj)
        if origin is None:
            return original(obj, *args, **kwargs)
        return UnknownStr(original(_sentinelized(obj), *args, **kwargs), origin)

    return dumps


@contextlib.contextmanager
def engine_patches() -> Iterator[None]:
    """For one program run: invoke results carry typed unknowns, plain invokes over unknowns
    are answered (unknown), `json.dumps` of an unknown is unknown."""
    with (
        mock.patch.object(
            rpc, "deserialize_properties", _deserialize_with_unknowns(rpc.deserialize_properties)
        ),
        mock.patch.object(
            rpc, "struct_contains_unknowns", _contains_unknowns(rpc.struct_contains_unknowns)
        ),
        mock.patch.object(pulumi.runtime, "invoke", _plain_invoke(pulumi.runtime.invoke)),
        mock.patch.object(json, "dumps", _tracking_dumps(json.dumps)),
    ):
        yield


def is_offline_unknown(value: Any) -> bool:
    return isinstance(value, Unknowable)
