"""The opening every component's constructor shares, before its first child resource.

``open_component``: the args as given (the dataclass) or built from the schema inputs of
another Pulumi language (a mapping, convert.py); the physical name; the component's own
checks, before any resource exists; then the component's registration under its type token,
aliased to the token it had before the component package so existing stacks keep their
resources.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import pulumi

from .convert import component_args
from .errors import reported_under

COMPONENT_TAG_KEY = "idempotent-messaging:component"
"""Tag on every taggable child: the name of the component instance that created it."""


class ComponentArgs(Protocol):
    """What the opening reads of a component's args dataclass."""

    @property
    def physical_name(self) -> str | None: ...

    @property
    def tags(self) -> Mapping[str, str]: ...


A = TypeVar("A", bound=ComponentArgs)
C = TypeVar("C")


@dataclass(frozen=True)
class Opened(Generic[A, C]):
    """What a component's constructor continues with."""

    args: A
    """The args dataclass (built from the inputs when a mapping was given)."""
    physical: str
    """``args.physical_name`` or ``<name>-<stack>``: the prefix of every physical name."""
    checked: C
    """What the component's ``check`` returned (e.g. the consumer's visibility timeout)."""
    tags: dict[str, str]
    """The component tag (COMPONENT_TAG_KEY: name) and ``args.tags``, for every child."""
    child: pulumi.ResourceOptions
    """``parent=component``: the options of a child with no options of its own."""


def open_component(
    component: pulumi.ComponentResource,
    name: str,
    args: Any,
    opts: pulumi.ResourceOptions | None,
    *,
    args_type: type[A],
    type_token: str,
    former_type_token: str,
    check: Callable[[A, str], C],
) -> Opened[A, C]:
    """Build (or take) the args, run ``check(args, physical)`` and register ``component``.

    ``check`` raises an ArgumentError for a bad argument, before any resource exists; when the
    component provider host passed the inputs as a mapping, the error names the input as the
    other language spells it (camelCase)."""
    from_inputs = isinstance(args, Mapping)
    typed = component_args(args_type, args)
    with reported_under(active=from_inputs):
        physical = typed.physical_name or f"{name}-{pulumi.get_stack()}"
        checked = check(typed, physical)
    pulumi.ComponentResource.__init__(
        component,
        type_token,
        name,
        None,
        pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=former_type_token)])
        ),
    )
    return Opened(
        args=typed,
        physical=physical,
        checked=checked,
        tags={COMPONENT_TAG_KEY: name, **dict(typed.tags)},
        child=pulumi.ResourceOptions(parent=component),
    )
