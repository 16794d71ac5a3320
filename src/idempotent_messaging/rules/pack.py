"""The policy pack's contents: every rule found in `idempotent_messaging.rules`, as pulumi-policy
policies.

Each rule carries its own name, description, enforcement level, remediation and config schema
beside its check (see `rules._base`); this module only collects them. The pack directory's
`policy/__main__.py`
hands `POLICIES` to `PolicyPack` (which starts a gRPC server and blocks); everything else,
including the offline checker, imports this module.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from .. import __version__
from .. import rules as rules_package
from ._base import ResourceCheck, Rule, StackCheck
from .graph import Graph, node_from_policy_resource
from .values import plain, raw_props

PACK_NAME = "idempotent-messaging"
PACK_VERSION = __version__
PACK_DESCRIPTION = (
    "Correct-by-default SQS -> Lambda pipelines: visibility vs function timeout, redrive and "
    "DLQs, partial batch responses, DLQ alarms, idempotency-table TTL, async failure paths, "
    "resource policies, runtimes."
)

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY
_LEVELS = {"mandatory": MANDATORY, "advisory": ADVISORY}


def _rule_failed(what: str, exc: Exception) -> None:
    # stderr: the CLI shows a policy pack's stderr, and stdout carries the gRPC port.
    print(f"policy {what} could not run: {type(exc).__name__}: {exc}", file=sys.stderr)


class _GraphCache:
    """The graph of the stack being checked, built once for all stack rules of one check.

    pulumi-policy hands every stack policy its own freshly deserialized resources, so the
    graph is keyed by the resources' content: the rules of one check share one graph (and its
    lazily built indexes), while a different stack, even with the same URNs, gets its own.
    """

    def __init__(self) -> None:
        self._key: str | None = None
        self._graph: Graph | None = None
        self.builds = 0  # how many graphs were built (tests assert one per check)

    def get(self, resources: Any) -> Graph:
        resources = list(resources)
        key = json.dumps(
            [
                (
                    r.urn,
                    r.resource_type,
                    raw_props(r.props),
                    {k: [d.urn for d in v] for k, v in r.property_dependencies.items()},
                    [d.urn for d in r.dependencies],
                    r.parent.urn if r.parent is not None else None,
                )
                for r in resources
            ],
            default=_content,
            sort_keys=True,
        )
        if key != self._key or self._graph is None:
            self._graph = Graph(node_from_policy_resource(r) for r in resources)
            self._key = key
            self.builds += 1
        return self._graph


def _content(value: Any) -> Any:
    """A JSON-able view of a non-JSON property value (assets, archives, the unknown marker)
    by content, never by identity: the same stack must give the same key."""
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return {"__type__": type(value).__name__, **fields}
    return f"{type(value).__name__}:{value!r}"


GRAPHS = _GraphCache()


def _stack(
    name: str,
    description: str,
    rule: StackCheck,
    level: EnforcementLevel,
    remediation: str,
    schema: Any = None,
) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        try:
            graph = GRAPHS.get(args.resources)
            findings = rule(graph, args.get_config() or {})
        except Exception as exc:  # a rule bug must not abort the other rules
            _rule_failed(name, exc)
            return
        for urn, message in findings:
            report(message, urn)

    return StackValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=PolicyConfigSchema(dict(schema)) if schema else None,
        remediation_steps=remediation,
    )


def _resource(
    name: str,
    description: str,
    rule: ResourceCheck,
    level: EnforcementLevel,
    remediation: str,
    schema: Any = None,
) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        try:
            props = plain(args.props)
            messages = rule(args.resource_type, props, args.name, args.get_config() or {})
        except Exception as exc:  # a rule bug must not abort the other rules
            _rule_failed(f"{name} on {args.urn}", exc)
            return
        for message in messages:
            report(message, None)

    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=PolicyConfigSchema(dict(schema)) if schema else None,
        remediation_steps=remediation,
    )


_NOT_RULES = frozenset({"pack", "graph", "values"})
"""The package's modules that hold no rules: this collector, the resource graph, value helpers."""


def discover_rules() -> list[Rule]:
    """Every `Rule` declared in a rule module of this package, sorted by name (names are unique)."""
    found: dict[str, Rule] = {}
    for info in pkgutil.iter_modules(rules_package.__path__):
        if info.name.startswith("_") or info.name in _NOT_RULES:
            continue
        module = importlib.import_module(f"{rules_package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Rule):
                other = found.setdefault(value.name, value)
                if other is not value:
                    raise ValueError(f"two rules are named {value.name!r}")
    return [found[name] for name in sorted(found)]


def to_policy(rule: Rule) -> Policy:
    build = _stack if rule.kind == "stack" else _resource
    return build(
        rule.name,
        rule.description,
        rule.check,
        _LEVELS[rule.level],
        rule.remediation,
        rule.config_schema,
    )


RULES: list[Rule] = discover_rules()
POLICIES: list[Policy] = [to_policy(r) for r in RULES]
POLICY_NAMES: list[str] = [p.name for p in POLICIES]
