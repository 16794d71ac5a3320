"""What a rule is: its check and, beside it, its name, description, level, remediation, schema.

A rule module declares rules with the `stack_rule` / `resource_rule` decorators; `policy.pack`
finds every `Rule` in the modules of `policy.rules` and turns it into a pulumi-policy policy.
So a new rule is one module (or one function in the module of its concern) plus its test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Finding = tuple[str, str]  # (urn the violation is attached to, message)
StackCheck = Callable[..., list[Finding]]  # (graph, config) -> findings
ResourceCheck = Callable[..., list[str]]  # (type, props, name, config) -> messages
Level = Literal["mandatory", "advisory"]

MANDATORY: Level = "mandatory"
ADVISORY: Level = "advisory"


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    level: Level
    remediation: str
    kind: Literal["stack", "resource"]
    check: Callable[..., list[Any]]
    config_schema: Mapping[str, Mapping[str, Any]] | None = None

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
) -> Callable[[StackCheck], Rule]:
    """Declare a stack rule: `check(graph, config) -> [(urn, message)]`."""

    def wrap(check: StackCheck) -> Rule:
        return Rule(name, description, level, remediation, "stack", check, schema)

    return wrap


def resource_rule(
    name: str,
    description: str,
    level: Level,
    remediation: str,
    schema: Mapping[str, Mapping[str, Any]] | None = None,
) -> Callable[[ResourceCheck], Rule]:
    """Declare a resource rule: `check(resource_type, props, name, config) -> [message]`."""

    def wrap(check: ResourceCheck) -> Rule:
        return Rule(name, description, level, remediation, "resource", check, schema)

    return wrap
