"""DynamoDB's limits on attribute values, checked before a request is sent.

moto accepts numbers and nesting that DynamoDB rejects with a ValidationException, and a
ValidationException on a shared transaction cannot say which record caused it. So every
business write is checked here, per record, and a value DynamoDB cannot hold makes THAT record
poison with a reason naming the write, the attribute and the rule (never the value itself).

Limits (DynamoDB developer guide, "Service, account, and table quotas" and "Data types"):
- a number has at most 38 significant digits; a non-zero magnitude lies in
  1E-130 .. 9.9999999999999999999999999999999999999E+125; NaN and Infinity do not exist;
- nested attributes go at most 32 levels deep;
- strings are UTF-8 (a lone surrogate cannot be encoded);
- an item is at most 400 KB (attribute names + values, UTF-8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from idempotent_messaging.runtime.errors import SchemaError

MAX_NUMBER_DIGITS = 38
MIN_NUMBER_EXPONENT = -130  # smallest positive magnitude 1E-130
MAX_NUMBER_MAGNITUDE = Decimal("1E126")  # the largest is 9.99..9E+125 (38 nines)
MIN_NUMBER_MAGNITUDE = Decimal("1E-130")
MAX_NESTING_DEPTH = 32
MAX_ITEM_BYTES = 400 * 1024


def number_problem(text: Any) -> str | None:
    """Why DynamoDB would reject ``text`` as a number (None when it is fine)."""
    if not isinstance(text, str):
        return f"is a {type(text).__name__}, not a numeric string"
    try:
        value = Decimal(text.strip())
    except (InvalidOperation, ValueError):
        return "is not a number"
    if not value.is_finite():
        return "is NaN or Infinity, which DynamoDB numbers cannot be"
    if value.is_zero():
        return None
    # Exact arithmetic only: normalize() and abs() round to the context's 28 digits.
    digits = "".join(map(str, value.as_tuple().digits)).strip("0")
    if len(digits) > MAX_NUMBER_DIGITS:
        return f"has {len(digits)} significant digits (DynamoDB keeps at most {MAX_NUMBER_DIGITS})"
    magnitude = value.copy_abs()
    if magnitude >= MAX_NUMBER_MAGNITUDE or magnitude < MIN_NUMBER_MAGNITUDE:
        return "is outside DynamoDB's number range 1E-130 .. 9.9E+125"
    return None


def _text_bytes(text: Any) -> int | None:
    if not isinstance(text, str):
        return None
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def attribute_problem(value: Any) -> tuple[str | None, int]:
    """(why DynamoDB would reject this AttributeValue or None, its size in bytes).

    Iterative, so a value nested thousands deep cannot exhaust the interpreter's stack.
    """
    size = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        # The top-level attribute is depth 1; 32 nested levels below it are allowed.
        if depth > MAX_NESTING_DEPTH + 1:
            return f"is nested deeper than DynamoDB's {MAX_NESTING_DEPTH} levels", size
        if not isinstance(current, Mapping) or len(current) != 1:
            return "is not a DynamoDB attribute value ({type: value})", size
        ((kind, inner),) = current.items()
        if kind == "S":
            n = _text_bytes(inner)
            if n is None:
                return "is a string that is not valid Unicode text", size
            size += n
        elif kind == "N":
            problem = number_problem(inner)
            if problem:
                return f"number {problem}", size
            size += 21
        elif kind in ("SS", "NS", "BS"):
            if not isinstance(inner, Sequence) or isinstance(inner, str | bytes) or not inner:
                return f"{kind} is not a non-empty list", size
            for element in inner:
                if kind == "NS":
                    problem = number_problem(element)
                    if problem:
                        return f"number in a set {problem}", size
                    size += 21
                elif kind == "SS":
                    n = _text_bytes(element)
                    if n is None:
                        return "is a string set holding invalid Unicode text", size
                    size += n
                else:
                    size += len(element) if isinstance(element, bytes | bytearray) else 0
        elif kind == "B":
            size += len(inner) if isinstance(inner, bytes | bytearray) else 0
        elif kind in ("BOOL", "NULL"):
            size += 1
        elif kind == "M":
            if not isinstance(inner, Mapping):
                return "M is not a map", size
            for name, element in inner.items():
                n = _text_bytes(name)
                if n is None:
                    return "has an attribute name that is not valid Unicode text", size
                if n == 0:
                    # DynamoDB refuses an empty attribute name at any depth ("Empty attribute
                    # name"); moto stores it and then cannot even scan the item back.
                    return "has an empty attribute name (a map key)", size
                size += n + 1
                stack.append((element, depth + 1))
        elif kind == "L":
            if not isinstance(inner, Sequence) or isinstance(inner, str | bytes):
                return "L is not a list", size
            for element in inner:
                size += 1
                stack.append((element, depth + 1))
        else:
            return f"has unknown type {kind!r}", size
    return None, size


def _values_of(kind: str, body: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(label, AttributeValue) pairs of one transaction item that DynamoDB will store/compare."""
    pairs: list[tuple[str, Any]] = []
    if kind == "Put":
        item = body.get("Item")
        if isinstance(item, Mapping):
            pairs.extend((f"attribute {name!r}", value) for name, value in item.items())
    key = body.get("Key")
    if isinstance(key, Mapping):
        pairs.extend((f"key {name!r}", value) for name, value in key.items())
    values = body.get("ExpressionAttributeValues")
    if isinstance(values, Mapping):
        pairs.extend((f"expression value {name!r}", value) for name, value in values.items())
    return pairs


def check_transact_item(position: int, item: Mapping[str, Any]) -> None:
    """Raise SchemaError when DynamoDB would reject ``item`` (the ``position``-th write)."""
    ((kind, body),) = item.items()
    if not isinstance(body, Mapping):
        raise SchemaError(f"writes() item {position} ({kind}) is not a mapping")
    total = 0
    item_attributes = body.get("Item") if kind == "Put" else None
    if isinstance(item_attributes, Mapping) and "" in item_attributes:
        raise SchemaError(f"writes() item {position} (Put) has an empty attribute name")
    for label, value in _values_of(kind, body):
        problem, size = attribute_problem(value)
        if problem:
            raise SchemaError(f"writes() item {position} ({kind}) {label} {problem}")
        total += size + len(label)
    if kind == "Put" and total > MAX_ITEM_BYTES:
        raise SchemaError(
            f"writes() item {position} (Put) is about {total} bytes; DynamoDB items are at "
            f"most {MAX_ITEM_BYTES}"
        )
