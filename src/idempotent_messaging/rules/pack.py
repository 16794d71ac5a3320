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
import traceback
from contextvars import ContextVar
from typing import Any

from pulumi.runtime import proto
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
from . import waivers
from ._base import Remedy, ResourceCheck, Rule, StackCheck
from .graph import Graph, node_from_policy_resource, protect_of
from .values import editable, plain, raw_props

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


# Set by the offline check while it analyzes: a rule that raises then raises through to its
# analyzer, which fails closed itself (exit 2 for a mandatory rule, `rule_errors` for an
# advisory one). Per context, so a check on one thread never changes the pack's behaviour on
# another.
RAISE_RULE_FAILURES: ContextVar[bool] = ContextVar("raise_rule_failures", default=False)


def _rule_failed(what: str, exc: Exception) -> None:
    # stderr: the CLI shows a policy pack's stderr, and stdout carries the gRPC port.
    print(f"policy {what} could not run: {type(exc).__name__}: {exc}", file=sys.stderr)


def _check_failed(
    name: str, what: str, exc: Exception, report: ReportViolation, urn: str | None
) -> None:
    """A rule's check raised: never a silent pass. The failure is reported as the rule's own
    violation, at the rule's level (a mandatory rule blocks, as it would on the finding it
    could not rule out), with the stack trace on stderr for the bug report; the other rules
    still run. pulumi-policy would instead fail the whole `Analyze` call on the exception."""
    if RAISE_RULE_FAILURES.get():
        raise exc
    _rule_failed(what, exc)
    print("".join(traceback.format_exception(exc)).rstrip(), file=sys.stderr)
    report(
        f"rule {name} could not decide{f' on {urn}' if urn else ''}: {type(exc).__name__}: "
        f"{exc}. This is a bug of the policy pack (its stack trace is on the pack's stderr): "
        f"please report it. Until it is fixed the rule cannot pass this stack; to proceed, "
        f"lower it in the policy config, e.g. {json.dumps({name: 'advisory'})}.",
        urn,
    )


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
                    protect_of(r),
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


def _diagnostics_of(report: ReportViolation) -> Any | None:
    """The diagnostics list pulumi-policy's report callback appends to (the response it closes
    over), so that a waived finding's diagnostic can be lowered to advisory: the callback
    reports at the policy's configured level and takes no level of its own. None when this
    pulumi-policy's callback holds no such list (then a waiver cannot be honoured)."""
    for cell in getattr(report, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        diagnostics = getattr(value, "diagnostics", None)
        if diagnostics is not None and hasattr(diagnostics, "add"):  # a repeated proto field
            return diagnostics
    return None


def _report(
    report: ReportViolation,
    policy: str,
    urn: str,
    name: str,
    tags: Any,
    config: Any,
    message: str,
    attach_to: str | None,
) -> None:
    """Report one finding, honouring its waivers (see `waivers`): a waived finding is reported
    as advisory with its reason, never dropped; a refused waiver is said beside the finding."""
    try:
        decision = waivers.decide(policy, urn, name, tags, config)
    except Exception as exc:  # a waiver bug never drops a finding: it keeps its level
        _rule_failed(f"waivers of {policy} on {urn}", exc)
        report(f"{message} [waivers not applied: {type(exc).__name__}: {exc}]", attach_to)
        return
    text = decision.annotate(message)
    if decision.waiver is None:
        report(text, attach_to)
        return
    diagnostics = _diagnostics_of(report)
    if diagnostics is None:  # fail closed: the finding keeps its level, and says why
        why = "this pulumi-policy's report callback cannot lower a finding's level"
        report(decision.annotate(message, not_applied=why), attach_to)
        return
    report(text, attach_to)
    last = diagnostics[len(diagnostics) - 1]
    if last.message.endswith(text):
        last.enforcementLevel = proto.ADVISORY


def _remediation(name: str, remedy: Remedy) -> Any:
    """The pulumi-policy remediation of a rule: its remedy over an editable copy of the
    resource's inputs, never on a resource whose finding a waiver accepts (a waiver keeps the
    resource as the team declared it). None (no change) when the remedy has nothing to fix,
    and when it raises: a remediation bug never blocks a deploy, the rule still reports."""

    def remediate(args: ResourceValidationArgs) -> dict[str, Any] | None:
        try:
            props = editable(args.props)
            config = args.get_config() or {}
            tags = plain(props.get("tags"))
            if waivers.decide(name, args.urn, args.name, tags, config).waiver is not None:
                return None
            return remedy(args.resource_type, props, config)
        except Exception as exc:
            _rule_failed(f"remediation {name} on {args.urn}", exc)
            return None

    return remediate


class StackPolicyWithRemediation(StackValidationPolicy, ResourceValidationPolicy):
    """A stack rule whose fix is one resource's input change: validated over the stack's graph
    (`AnalyzeStack`), remediated resource by resource (`Remediate`), under one name and one
    enforcement level, as a team configures it.

    pulumi-policy 1.21 remediates only `ResourceValidationPolicy` instances and validates
    stacks only with `StackValidationPolicy` ones (its servicer checks `isinstance`), and its
    `Remediate` ignores any other; so this policy is both. Its resource phase (`Analyze`)
    validates nothing: the stack phase reports. The two base classes' `__init__` cannot both
    run (each passes its own positional arguments up the MRO), so this sets the private fields
    they would set; `tests/policy/test_remediation.py` drives the real servicer (and
    `test_pack_server.py` the pack's gRPC server) through all four calls to guard it.
    """

    def __init__(
        self,
        name: str,
        description: str,
        validate: Any,
        remediate: Any,
        enforcement_level: EnforcementLevel,
        config_schema: PolicyConfigSchema,
        remediation_steps: str,
    ) -> None:
        Policy.__init__(
            self,
            name,
            description,
            enforcement_level,
            config_schema,
            remediation_steps=remediation_steps,
        )
        self._StackValidationPolicy__validate = validate
        self._ResourceValidationPolicy__validate = None
        self._ResourceValidationPolicy__remediate = remediate

    def validate(self, args: Any, report_violation: ReportViolation) -> Any:
        if isinstance(args, StackValidationArgs):
            return StackValidationPolicy.validate(self, args, report_violation)
        return None  # the resource phase: the stack phase reports this rule's findings


def _stack(
    name: str,
    description: str,
    rule: StackCheck,
    level: EnforcementLevel,
    remediation: str,
    schema: Any = None,
    remedy: Remedy | None = None,
) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        try:
            graph = GRAPHS.get(args.resources)
            config = args.get_config() or {}
            findings = rule(graph, config)
        except Exception as exc:  # a rule bug must not abort the other rules, nor pass
            _check_failed(name, name, exc, report, None)
            return
        for urn, message in findings:
            node = graph.by_urn.get(urn)
            resource = node.name if node is not None else urn.rsplit("::", 1)[-1]
            tags = node.get("tags") if node is not None else None
            _report(report, name, urn, resource, tags, config, message, urn)

    if remedy is not None:
        return StackPolicyWithRemediation(
            name,
            description,
            validate,
            _remediation(name, remedy),
            level,
            _schema(schema),
            remediation,
        )
    return StackValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=_schema(schema),
        remediation_steps=remediation,
    )


def _resource(
    name: str,
    description: str,
    rule: ResourceCheck,
    level: EnforcementLevel,
    remediation: str,
    schema: Any = None,
    remedy: Remedy | None = None,
) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        try:
            props = plain(args.props)
            config = args.get_config() or {}
            messages = rule(args.resource_type, props, args.name, config)
        except Exception as exc:  # a rule bug must not abort the other rules, nor pass
            _check_failed(name, f"{name} on {args.urn}", exc, report, args.urn)
            return
        for message in messages:
            _report(report, name, args.urn, args.name, props.get("tags"), config, message, None)

    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=_schema(schema),
        remediation_steps=remediation,
        remediate=_remediation(name, remedy) if remedy is not None else None,
    )


def _schema(schema: Any) -> PolicyConfigSchema:
    """The rule's own config schema plus the `waivers` property every policy takes."""
    return PolicyConfigSchema(
        {**dict(schema or {}), waivers.CONFIG_PROPERTY: waivers.CONFIG_SCHEMA}
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
        rule.remedy,
    )


RULES: list[Rule] = discover_rules()
POLICIES: list[Policy] = [to_policy(r) for r in RULES]
POLICY_NAMES: list[str] = [p.name for p in POLICIES]
