"""Plausible values typed by the provider SDK's own classes: what the cloud would compute.

A provider SDK declares every resource output and every data-source result as a typed
property (``@pulumi.getter(name="executionArn") def execution_arn(self) ->
pulumi.Output[str]``; ``certificate_authority -> Output['outputs.ClusterCertificateAuthority']``).
Reading those declarations gives, for any resource type token or invoke token, the wire names
and types of what a real deployment returns, so programs that do ``api.execution_arn + "/*"``
or ``cluster.certificate_authority.data`` or ``cert.domain_validation_options[0]`` run offline
with values of the right shape, without a hand list per resource type.

The strings are recognisable placeholders shaped by the property's name (an ``...Arn`` is an
ARN in the resource's region and account, an ``...Endpoint``/``...Url`` an https URL, an
``...Id`` a prefixed id); lists have one element so that indexing works; numbers are 1 and
booleans False. A user pins real values with an answers file (see ``policy.offline.answers``).
"""

from __future__ import annotations

import base64
import builtins
import collections.abc
import functools
import hashlib
import importlib
import keyword
import re
import sys
import typing
from dataclasses import dataclass
from typing import Any

_MAX_DEPTH = 4


@dataclass(frozen=True)
class Context:
    """What a plausible value may depend on: where the resource lives and what it is called."""

    service: str  # the token's module, e.g. "apigateway"
    name: str  # the resource's physical (or logical) name
    region: str
    account_id: str
    kind: str = ""  # the resource kind in ARNs, e.g. "graphqlapi"


def _python_package(provider: str) -> str:
    return "pulumi_" + provider.replace("-", "_")


def _import(module: str) -> Any | None:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def _module_for(token: str) -> tuple[Any | None, str]:
    """`aws:apigateway/restApi:RestApi` -> (pulumi_aws.apigateway, "RestApi")."""
    parts = token.split(":")
    if len(parts) != 3:
        return None, ""
    provider, module_path, member = parts
    module = module_path.split("/")[0]
    if keyword.iskeyword(module):
        module += "_"  # the SDK's Python module for `lambda` is `lambda_`
    package = _python_package(provider)
    return _import(package if module in ("index", "") else f"{package}.{module}"), member


@functools.cache
def resource_class(token: str) -> type | None:
    module, member = _module_for(token)
    cls = getattr(module, member, None) if module is not None else None
    return cls if isinstance(cls, type) else None


@functools.cache
def invoke_result_class(token: str) -> type | None:
    """`aws:ssm/getParameter:getParameter` -> pulumi_aws.ssm.GetParameterResult."""
    module, member = _module_for(token)
    if module is None or not member:
        return None
    cls = getattr(module, member[0].upper() + member[1:] + "Result", None)
    return cls if isinstance(cls, type) else None


@dataclass(frozen=True)
class Prop:
    type: Any  # Output[...] and Optional[...] unwrapped; generics as (origin, args)
    doc: str  # the SDK's description: names map keys and encodings the type cannot
    python_name: str = ""


@functools.cache
def typed_properties(cls: type) -> dict[str, Prop]:
    """Wire name -> declared type and description of a class's `pulumi.getter`s."""
    namespace = vars(sys.modules[cls.__module__])
    found: dict[str, Prop] = {}
    for klass in reversed(cls.__mro__):
        for python_name, value in vars(klass).items():
            if not isinstance(value, builtins.property) or value.fget is None:
                continue
            wire = getattr(value.fget, "_pulumi_name", None)
            if wire is None:
                continue
            found[wire] = Prop(
                _resolve(value.fget.__annotations__.get("return", Any), namespace),
                value.__doc__ or value.fget.__doc__ or "",
                python_name,
            )
    return found


@functools.cache
def input_names(token: str) -> frozenset[str]:
    """Wire names the resource accepts as inputs (its `<Name>Args` class)."""
    cls = resource_class(token)
    if cls is None:
        return frozenset()
    args_cls = getattr(sys.modules[cls.__module__], cls.__name__ + "Args", None)
    return frozenset(typed_properties(args_cls)) if isinstance(args_cls, type) else frozenset()


def _resolve(annotation: Any, namespace: dict[str, Any]) -> Any:
    if isinstance(annotation, str):
        annotation = typing.ForwardRef(annotation)
    if isinstance(annotation, typing.ForwardRef):
        try:
            return _resolve(eval(annotation.__forward_arg__, namespace), namespace)
        except Exception:  # an unresolvable annotation: any value will do
            return Any
    origin = typing.get_origin(annotation)
    if origin is None:
        return annotation
    args = tuple(_resolve(a, namespace) for a in typing.get_args(annotation))
    if getattr(origin, "__name__", "") == "Output" or origin is typing.Union:
        non_none = [a for a in args if a is not type(None)]
        return non_none[0] if non_none else Any
    return (origin, args)


def computed_outputs(token: str, ctx: Context, given: dict[str, Any]) -> dict[str, Any]:
    """Plausible values for the outputs a resource computes (never for its input properties:
    an input left unset means the provider default, which a placeholder must not replace)."""
    cls = resource_class(token)
    if cls is None:
        return {}
    inputs = input_names(token)
    return {
        wire: plausible(prop, wire, ctx, 0)
        for wire, prop in typed_properties(cls).items()
        if wire not in inputs and wire not in given and wire not in ("id", "urn")
    }


# Outputs key naming the placeholders given for unset inputs: the program sees them (so
# `instance.private_ip` has a value at `up`), the recorder removes them (so the pack still
# reads an unset input as "the AWS default").
PLACEHOLDERS_KEY = "__offlinePlaceholders"
_NOT_PLACEHELD = frozenset({"id", "urn", "region", "tags", "tagsAll"})


def unset_input_placeholders(token: str, ctx: Context, given: dict[str, Any]) -> dict[str, Any]:
    """Plausible values for the inputs the program left unset (the provider or AWS would
    report a default or a computed value for most of them)."""
    cls = resource_class(token)
    if cls is None:
        return {}
    inputs = input_names(token)
    return {
        wire: plausible(prop, wire, ctx, 0)
        for wire, prop in typed_properties(cls).items()
        if wire in inputs and wire not in given and wire not in _NOT_PLACEHELD
    }


def invoke_result(token: str, ctx: Context, args: dict[str, Any]) -> dict[str, Any] | None:
    """Every field of the data source's result type: arguments the result repeats, coerced to
    the result's types; the rest plausible. None when the result type is not known."""
    cls = invoke_result_class(token)
    if cls is None:
        return None
    result: dict[str, Any] = {}
    for wire, prop in typed_properties(cls).items():
        if wire in args and args[wire] is not None:
            result[wire] = coerce(args[wire], prop.type)
        else:
            result[wire] = plausible(prop, wire, ctx, 0)
    return result


def coerce(value: Any, typ: Any) -> Any:
    """An argument (or a pinned answer) as the provider returns it, typed as the result class
    declares: mocks see every number as a float, YAML answers may give `3` for a string or
    `"true"` for a boolean, and the SDK's result classes refuse a value of another type."""
    if isinstance(typ, tuple):
        origin, args = typ
        if origin in (list, collections.abc.Sequence, collections.abc.MutableSequence) and (
            isinstance(value, list)
        ):
            return [coerce(v, args[0] if args else Any) for v in value]
        if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping) and (
            isinstance(value, dict)
        ):
            return {k: coerce(v, args[1] if len(args) > 1 else Any) for k, v in value.items()}
        return value
    if isinstance(typ, type) and hasattr(typ, "_pulumi_output_type") and isinstance(value, dict):
        props = typed_properties(typ)
        return {k: coerce(v, props[k].type) if k in props else v for k, v in value.items()}
    if typ is bool and isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if typ is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if typ is int and isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if typ is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value) if float(value).is_integer() else value)
    if typ is str and isinstance(value, bool):
        return "true" if value else "false"
    return value


def _short_hash(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:8]


def _words(wire: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", wire)] or [wire]


_MAP_KEY = re.compile(r'\w+\["([A-Za-z0-9_.-]+)"\]')
_BASE64_PAIR = re.compile(r"base64.*`\w+:\w+`", re.S)


# Struct key of an invoke result listing the fields the offline engine cannot know, with their
# shapes (``offline.unknowns`` turns them into typed unknowns on the program's side).
UNKNOWN_FIELDS_KEY = "__offlineUnknown"
_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # Pulumi's unknown string


def kinds_of(value: Any) -> Any:
    """The shape of a plausible value, as ``offline.unknowns`` rebuilds it: "str", "int",
    "float", "bool", [item shape], {key: shape}."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, list):
        return [kinds_of(value[0])] if value else ["str"]
    if isinstance(value, dict):
        return {k: kinds_of(v) for k, v in value.items()}
    return "str"


def _parsed_string(wire: str, doc: str) -> bool:
    """Strings programs parse (decode base64, carve a CIDR, load JSON, compare dates) keep a
    well-formed placeholder text even when unknown."""
    if "base64" in doc:
        return True
    words = _words(wire)
    last = words[-1]
    return (
        "cidr" in words
        or last in ("ip", "ips", "data", "certificate", "body", "json", "document", "policy")
        or words[-2:] == ["ip", "address"]
        or last in ("date", "time", "timestamp")
        or wire.endswith(("At", "Date"))
        or last in ("account", "owner")
        or words[-2:] in (["account", "id"], ["owner", "id"])
        or wire == "region"
        or last == "region"
    )


def unknown_string(wire: str, ctx: Context, doc: str = "") -> str:
    """The placeholder text of a string only the cloud knows: well-formed where programs parse
    it, else carrying the unknown sentinel (so text built from it is unknown too)."""
    if _parsed_string(wire, doc):
        return plausible_string(wire, ctx, doc)
    shaped = plausible_string(
        wire, Context(ctx.service, _SENTINEL, ctx.region, ctx.account_id, ctx.kind), doc
    )
    return shaped if _SENTINEL in shaped else _SENTINEL


def plausible_string(wire: str, ctx: Context, doc: str = "") -> str:
    if "base64" in doc:
        # The SDK says the value is base64 (of `user:password`, for registry tokens).
        text = "AWS:offline-placeholder" if _BASE64_PAIR.search(doc) else "offline-placeholder"
        return base64.b64encode(text.encode()).decode()
    words = _words(wire)
    last = words[-1]
    host = f"{ctx.name}.{ctx.service}.{ctx.region}.amazonaws.com"
    if "cidr" in words:
        # Programs carve subnets out of CIDRs with `ipaddress`: a valid block.
        return "2600:1f18:1234:5600::/56" if "ipv6" in words else "10.0.0.0/16"
    if last in ("ip", "ips") or words[-2:] == ["ip", "address"]:
        return "2600:1f18:1234:5601::10" if "ipv6" in words else "10.0.0.10"
    if wire == "region" or last == "region":
        return ctx.region
    if last == "arn" or last == "arns":
        kind = f"{ctx.kind}/" if ctx.kind else ""
        return f"arn:aws:{ctx.service}:{ctx.region}:{ctx.account_id}:{kind}{ctx.name}"
    if last in ("account", "owner") or words[-2:] in (["account", "id"], ["owner", "id"]):
        return ctx.account_id
    if last in ("url", "uri", "endpoint", "uris"):
        return f"https://{host}"
    if last in ("hostname", "address", "host") or words[-2:] in (
        ["dns", "name"],
        ["domain", "name"],
    ):
        return host
    if last in ("data", "certificate", "body"):
        return "b2ZmbGluZS1wbGFjZWhvbGRlcg=="  # base64 of "offline-placeholder"
    if last in ("json", "document", "policy"):
        return "{}"
    if words in (["value"], ["insecure", "value"]) or last == "version":
        # Numeric: versions are numbers, and `int(...)` over a parameter's value must work.
        return "1"
    if last in ("date", "time", "timestamp") or wire.endswith(("At", "Date")):
        return "2024-01-01T00:00:00Z"
    if last == "id":
        prefix = "-".join(words[:-1]) or ctx.service
        return f"{prefix}-{_short_hash(ctx.name, wire)}"
    return f"{ctx.name}-{'-'.join(words)}"


def invoke_placeholders(token: str, ctx: Context) -> dict[str, Any] | None:
    """Every field of the data source's result type as a placeholder for a value only the
    cloud knows (strings as `unknown_string`). None when the result type is not known."""
    cls = invoke_result_class(token)
    if cls is None:
        return None
    return {
        wire: plausible(prop, wire, ctx, 0, unknown=True)
        for wire, prop in typed_properties(cls).items()
    }


def plausible(prop: Prop, wire: str, ctx: Context, depth: int, unknown: bool = False) -> Any:
    if depth > _MAX_DEPTH:
        return None
    typ = prop.type
    if typ is str:
        if unknown:
            return unknown_string(wire, ctx, prop.doc)
        return plausible_string(wire, ctx, prop.doc)
    if typ is bool:
        return False
    if typ is int:
        return 1
    if typ is float:
        return 1.0
    if isinstance(typ, tuple):
        origin, args = typ
        if origin in (list, collections.abc.Sequence, collections.abc.MutableSequence):
            item = Prop(args[0] if args else Any, prop.doc)
            return [plausible(item, wire, ctx, depth + 1, unknown)]
        if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
            # Keys the SDK's description shows (`uris["GRAPHQL"]`): programs index by them.
            value = Prop(args[1] if len(args) > 1 else str, "")
            return {
                key: plausible(value, key, ctx, depth + 1, unknown)
                for key in dict.fromkeys(_MAP_KEY.findall(prop.doc))
            }
        return None
    if isinstance(typ, type) and hasattr(typ, "_pulumi_output_type"):
        return {
            sub: plausible(sub_prop, sub, ctx, depth + 1, unknown)
            for sub, sub_prop in typed_properties(typ).items()
        }
    if typ is Any or typ is dict:
        return {}
    return None


def coerce_result(token: str, result: dict[str, Any]) -> dict[str, Any]:
    """Result fields typed as the data source's result class declares them."""
    cls = invoke_result_class(token)
    if cls is None:
        return result
    props = typed_properties(cls)
    return {k: coerce(v, props[k].type) if k in props else v for k, v in result.items()}
