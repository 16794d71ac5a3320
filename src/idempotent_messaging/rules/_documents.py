"""Reading resource-based policy documents: who may do what on whose behalf."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from .security import statements
from .values import is_unknown


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def everyone(principal: Any) -> bool:
    if principal == "*":
        return True
    if isinstance(principal, dict):
        return "*" in as_list(principal.get("AWS"))
    return False


def _action_allowed(actions: Any, wanted: str) -> bool:
    return any(isinstance(a, str) and fnmatchcase(wanted.lower(), a.lower()) for a in actions)


def _principal_allows(principal: Any, service: str) -> bool:
    if everyone(principal):
        return True
    if isinstance(principal, dict):
        return service in as_list(principal.get("Service"))
    return False


def _condition_allows(condition: Any, source_arn: Any) -> bool:
    """A source-ARN condition admits the sender when it names its ARN (or a pattern of it);
    an unknown ARN or any other condition is not held against it."""
    if not isinstance(condition, dict):
        return True
    for block in condition.values():
        if not isinstance(block, dict):
            continue
        for key, values in block.items():
            if str(key).lower() != "aws:sourcearn":
                continue
            if not isinstance(source_arn, str) or is_unknown(source_arn):
                return True
            vals = as_list(values)
            if any(is_unknown(v) for v in vals):
                return True
            if not any(isinstance(v, str) and fnmatchcase(source_arn, v) for v in vals):
                return False
    return True


def allows_delivery(docs: list[Any], service: str, action: str, source_arn: Any) -> bool | None:
    """Whether the policy documents let `service` perform `action`; None when unknown."""
    if any(is_unknown(d) for d in docs):
        return None
    for doc in docs:
        for st in statements(doc):
            if st.get("Effect") != "Allow":
                continue
            if any(is_unknown(v) for v in (st.get("Principal"), st.get("Action"))):
                return None
            if not _principal_allows(st.get("Principal"), service):
                continue
            if not _action_allowed(as_list(st.get("Action")), action):
                continue
            if _condition_allows(st.get("Condition"), source_arn):
                return True
    return False
