"""Pulumi's wire-level unknown values, shared by the runner, the graph and the rules.

During a preview the engine does not know computed outputs (ARNs, URLs, ids of resources not
created yet); it marks them with sentinel strings. The rules see them as the single `UNKNOWN`
object, so "unknown" can never be mistaken for "absent" (which means: the AWS default applies).
"""

from __future__ import annotations

from typing import Any

UNKNOWN_STRING_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
UNKNOWN_SENTINELS = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",  # bool
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",  # number
        UNKNOWN_STRING_SENTINEL,
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",  # array
        "030794c1-ac77-496b-92df-f27374a8bd58",  # asset
        "e48ece36-62e2-4504-bad9-02848725956a",  # archive
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",  # object
    }
)


class _Unknown:
    """A value the engine does not know yet (a computed output during preview)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


def is_unknown(value: Any) -> bool:
    return value is UNKNOWN or (isinstance(value, str) and value in UNKNOWN_SENTINELS)


def plain(value: Any) -> Any:
    """Plain dicts/lists with `UNKNOWN` for unknowns, from wire data or pulumi-policy proxies.

    pulumi-policy wraps props in proxies that raise `UnknownValueError` on reading an unknown,
    which would abort a whole stack policy on the first unknown ARN; the rules instead decide
    per value, so they read the proxies' targets directly.
    """
    if hasattr(value, "keys") and hasattr(value, "__getitem__"):
        target = _target(value)
        return {k: plain(target[k]) for k in target}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "_ListProxy":
        target = _target(value)
        return [plain(target[i]) for i in range(len(target))]
    if is_unknown(value):
        return UNKNOWN
    return value


def _target(proxy: Any) -> Any:
    if type(proxy).__name__ in ("_DictProxy", "_ListProxy"):
        return proxy["__target"]
    return proxy


_PROXIES = frozenset({"_DictProxy", "_ListProxy", "_DictSecretsProxy", "_ListSecretsProxy"})


def editable(value: Any) -> Any:
    """A copy of properties under pulumi-policy's proxies that a remediation may change and
    return: plain dicts and lists, unknown values kept as the engine's sentinels and secrets as
    pulumi-policy's `Secret` wrappers (which it serializes back as secrets), never unwrapped."""
    while type(value).__name__ in _PROXIES:
        value = value["__target"]
    if isinstance(value, dict):
        return {k: editable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [editable(v) for v in value]
    return value


def raw_props(props: Any) -> Any:
    """The plain mapping under pulumi-policy's property proxy (unknowns as sentinels)."""
    return _target(props)
