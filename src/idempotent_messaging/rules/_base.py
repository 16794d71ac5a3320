"""What a rule is: its check and, beside it, its name, description, level, remediation, schema,
the AWS rule it enforces, the AWS defaults it applies to absent properties, and what it does
NOT cover (each boundary named with the test that shows it).

A rule module declares rules with the `stack_rule` / `resource_rule` decorators; `policy.pack`
finds every `Rule` in the modules of `policy.rules` and turns it into a pulumi-policy policy.
So a new rule is one module (or one function in the module of its concern) plus its test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Finding = tuple[str, str]  # (urn the violation is attached to, message)
# A remediation: (resource type, the resource's inputs as the engine hands them to a policy
# pack (unknown values as the engine's sentinels, secrets wrapped), config) -> the resource's
# new inputs, or None when this rule has nothing it may change on it.
Remedy = Callable[[str, dict[str, Any], Mapping[str, Any]], dict[str, Any] | None]


@dataclass(frozen=True)
class GraphFix:
    """One input a stack rule's fix sets on one resource, computed from the whole graph."""

    urn: str
    property: str  # a top-level wire property of the resource: `visibilityTimeoutSeconds`
    value: Any


# A fix that needs more than the resource it changes (a queue's visibility timeout from the
# timeout of the function a mapping links to it): (graph, config) -> the inputs to set. The
# engine remediates one resource at its registration, before the resources that link it to
# anything else exist, so only the offline check (which sees the whole graph) can apply it.
GraphRemedy = Callable[..., list[GraphFix]]
StackCheck = Callable[..., list[Finding]]  # (graph, config) -> findings
ResourceCheck = Callable[..., list[str]]  # (type, props, name, config) -> messages
Level = Literal["mandatory", "advisory"]

MANDATORY: Level = "mandatory"
ADVISORY: Level = "advisory"


BOUNDARY_TESTS = "tests/policy/test_rule_boundaries.py"


@dataclass(frozen=True)
class Boundary:
    """A case the rule does NOT cover, said in one sentence, and the test of `BOUNDARY_TESTS`
    (a function name) that shows the rule staying silent there."""

    text: str
    test: str


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    level: Level
    remediation: str
    kind: Literal["stack", "resource"]
    check: Callable[..., list[Any]]
    config_schema: Mapping[str, Mapping[str, Any]] | None = None
    # The AWS rule the check enforces, with the document (and section) that states it.
    enforces: str = ""
    # The AWS defaults the check applies to an absent property (an absent property is never a
    # missing setting by itself: AWS applies its default, and the check judges that value).
    defaults: str = ""
    # What the rule does NOT cover, each with the test that shows the boundary.
    boundaries: tuple[Boundary, ...] = ()
    # The fix the pack applies itself when the rule's enforcement level is `remediate` (one
    # resource's inputs, as CrossGuard remediates), and what it sets, for the catalogue; a rule
    # without `remedy` may still say in `remedies` why it cannot remediate.
    remedy: Remedy | None = None
    remedies: str = ""
    # The fix only the offline check can apply (`GraphRemedy`); `pulumi up` cannot.
    graph_remedy: GraphRemedy | None = None

    def __call__(self, *args: Any) -> list[Any]:
        return self.check(*args)


def number(default: float, minimum: float = 0) -> dict[str, Any]:
    """Config schema of a numeric threshold."""
    return {"type": "number", "default": default, "minimum": minimum}


def strings(default: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Config schema of a list of strings."""
    return {"type": "array", "items": {"type": "string"}, "default": list(default)}


def stack_rule(
    name: str,
    description: str,
    level: Level,
    remediation: str,
    schema: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    enforces: str = "",
    defaults: str = "",
    boundaries: tuple[Boundary, ...] = (),
    remedy: Remedy | None = None,
    remedies: str = "",
    graph_remedy: GraphRemedy | None = None,
) -> Callable[[StackCheck], Rule]:
    """Declare a stack rule: `check(graph, config) -> [(urn, message)]`."""

    def wrap(check: StackCheck) -> Rule:
        return Rule(
            name,
            description,
            level,
            remediation,
            "stack",
            check,
            schema,
            enforces=enforces,
            defaults=defaults,
            boundaries=boundaries,
            remedy=remedy,
            remedies=remedies,
            graph_remedy=graph_remedy,
        )

    return wrap


def resource_rule(
    name: str,
    description: str,
    level: Level,
    remediation: str,
    schema: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    enforces: str = "",
    defaults: str = "",
    boundaries: tuple[Boundary, ...] = (),
    remedy: Remedy | None = None,
    remedies: str = "",
) -> Callable[[ResourceCheck], Rule]:
    """Declare a resource rule: `check(resource_type, props, name, config) -> [message]`."""

    def wrap(check: ResourceCheck) -> Rule:
        return Rule(
            name,
            description,
            level,
            remediation,
            "resource",
            check,
            schema,
            enforces=enforces,
            defaults=defaults,
            boundaries=boundaries,
            remedy=remedy,
            remedies=remedies,
        )

    return wrap
