"""The one error of a bad argument: ``ArgumentError``, whoever gave the value.

A component's validation, its code bundling, the converter from a mapping (convert.py) and the
stage config (``idempotent_messaging.stage``) all raise it, with the same three parts: where
the value sits (``path``), the value, and the rule it breaks (with the fix inside the rule).
Its message is ``<path>=<value!r>: <rule>``.

A Python program sees the args' own field names (``function_timeout_seconds=0: ...``). A stack
file and a program in another Pulumi language spell the same field in camelCase under their
own prefix: ``reported_under`` re-raises the error in those terms
(``consumers.orders.functionTimeoutSeconds=0: ...``, ``functionTimeoutSeconds=0: ...``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pulumi.provider.experimental.util import camel_case


class ArgumentError(ValueError):
    """A value that breaks a rule. ``path`` names where it sits: an args field
    (``business_table.hash_key``), an input of another language (``businessTable.hashKey``)
    or a stack-file key path (``consumers.orders.businessTable.hashKey``); ``value`` is the
    offending value and ``rule`` the rule it breaks, with the fix."""

    def __init__(self, path: str, value: Any, rule: str) -> None:
        super().__init__(f"{path}={value!r}: {rule}")
        self.path = path
        self.value = value
        self.rule = rule

    def under(self, prefix: str = "") -> ArgumentError:
        """The same error with its path in camelCase (as a stack file and the package schema
        spell it), below ``prefix`` (e.g. ``consumers.orders``; "" for none)."""
        path = camel(self.path)
        return ArgumentError(f"{prefix}.{path}" if prefix else path, self.value, self.rule)


def fail(path: str, value: Any, rule: str) -> ArgumentError:
    """The one error shape: path, offending value, rule (and the fix inside the rule)."""
    return ArgumentError(path, value, rule)


def camel(path: str) -> str:
    """``business_table.hash_key`` -> ``businessTable.hashKey``: the package schema's camel
    case (pulumi.provider.experimental.util.camel_case), applied part by part."""
    return ".".join(camel_case(part) for part in path.split("."))


@contextmanager
def reported_under(prefix: str = "", *, active: bool = True) -> Iterator[None]:
    """While active, re-raise an ArgumentError with its path in camelCase below ``prefix``
    (ArgumentError.under): how a stack file or another Pulumi language names the value."""
    try:
        yield
    except ArgumentError as exc:
        if not active:
            raise
        raise exc.under(prefix) from exc
