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


# Global condition keys that say HOW, WHEN or ON WHAT a request is made, not WHO makes it
# (IAM User Guide, "AWS global condition context keys"): a `Principal: "*"` statement limited
# only by them still admits every AWS account and anonymous callers. aws:SecureTransport only
# demands TLS; aws:UserAgent and aws:Referer are set by the caller ("do not use them to prevent
# unauthorized parties from making direct AWS requests"); request and resource tags describe
# the request or the resource.
HOW_NOT_WHO_KEYS = frozenset(
    {
        "aws:securetransport",
        "aws:currenttime",
        "aws:epochtime",
        "aws:requestedregion",
        "aws:useragent",
        "aws:referer",
        "aws:multifactorauthpresent",
        "aws:multifactorauthage",
        "aws:tokenissuetime",
        "aws:viaawsservice",
        "aws:calledvia",
        "aws:calledviafirst",
        "aws:calledvialast",
        "aws:tagkeys",
    }
)
HOW_NOT_WHO_PREFIXES = ("aws:requesttag/", "aws:resourcetag/")


def _says_how_not_who(operator: str, key: str, values: Any) -> bool:
    """Whether one condition (operator, key, values) leaves the set of callers open.

    Besides the keys above: a negated operator (StringNotEquals, ArnNotLike, NotIpAddress)
    excludes some callers and admits all others; `Null` only tests presence; an `...IfExists`
    test of a global `aws:` key matches a request that lacks the key (a direct call carries no
    aws:SourceArn, an anonymous one no aws:PrincipalOrgID); a bare "*" value matches anything.
    A service-specific key (kms:CallerAccount, s3:...) is given the benefit of the doubt.
    """
    op, k = operator.lower(), key.lower()
    if k in HOW_NOT_WHO_KEYS or k.startswith(HOW_NOT_WHO_PREFIXES):
        return True
    if "not" in op.replace("ifexists", "") or op == "null":
        return True
    if op.endswith("ifexists") and k.startswith("aws:"):
        return True
    vals = as_list(values)
    return bool(vals) and all(v == "*" for v in vals)


def condition_limits_who(condition: Any) -> bool:
    """Whether a statement's Condition restricts who may use it (all its tests must hold, so
    one test that names the caller suffices). An unknown or unreadable condition counts."""
    if not condition:
        return False
    if is_unknown(condition) or not isinstance(condition, dict):
        return True
    for operator, block in condition.items():
        if is_unknown(block) or not isinstance(block, dict):
            return True
        for key, values in block.items():
            if is_unknown(values) or not _says_how_not_who(str(operator), str(key), values):
                return True
    return False


def condition_keys(condition: Any) -> list[str]:
    """The condition keys a Condition tests, for messages."""
    if not isinstance(condition, dict):
        return []
    return sorted({str(k) for b in condition.values() if isinstance(b, dict) for k in b})


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
