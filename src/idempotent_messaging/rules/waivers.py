"""Waivers: a finding a team has accepted, per resource and with a reason (docs/waivers.md).

Modelled on cdk-nag's suppressions (rule id + reason, per resource, reason required) and
checkov's skips. A waiver names ONE rule and the resources it covers, and says why:

- in the program, as tags on the resource the finding is attached to (tags reach the pack's
  resource checks as inputs and its stack checks as outputs, and the offline check alike):
  `idempotent-messaging:waive:<rule>` = `<reason>` (one tag per waived rule), or
  `idempotent-messaging:waive` = `<rule>: <reason>` (a single waiver). AWS tag values allow
  letters, digits, spaces and `_ . : / = + - @` only: no commas in a reason.
- in the policy config the Pulumi CLI hands the pack (`--policy-pack-config FILE`, `pulumi
  policy enable --config FILE`) and the offline check reads (`--config FILE`): each rule's
  `waivers` property, a list of `{"urn" | "name": <fnmatch pattern>, "reason": <text>}`;
- in a waiver file whose path the environment variable `IDEMPOTENT_MESSAGING_WAIVERS` names
  (both the CLI's pack process and the offline check inherit it): YAML or JSON, a list of
  `{"policy": <rule>, "urn" | "name": <pattern>, "reason": <text>}` (or `{"waivers": [...]}`).

A waived finding is never dropped: the pack reports it as ADVISORY with the prefix
`[waived: <reason> (<where the waiver is>)]`, so the CLI shows it and it does not block. A
waiver without a reason (or one shorter than `MIN_REASON` characters, as cdk-nag demands) is
refused: the finding keeps its level and says why the waiver was refused. So is a malformed
waiver file, for every finding. Pure: no pulumi import, the file is read here and cached.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from .values import is_unknown

TAG_KEY = "idempotent-messaging:waive"
TAG_PREFIX = TAG_KEY + ":"
CONFIG_PROPERTY = "waivers"
FILE_ENV = "IDEMPOTENT_MESSAGING_WAIVERS"
MIN_REASON = 10  # cdk-nag refuses a suppression reason shorter than 10 characters
ENTRY_KEYS = frozenset({"policy", "urn", "name", "reason"})

# The config schema every policy gets for its `waivers` property (pack.py adds it).
CONFIG_SCHEMA: dict[str, Any] = {
    "type": "array",
    "default": [],
    "description": "Waivers of this rule's findings: [{urn|name: fnmatch pattern, reason}] "
    "(docs/waivers.md)",
    "items": {
        "type": "object",
        "properties": {
            "urn": {"type": "string"},
            "name": {"type": "string"},
            "reason": {"type": "string"},
        },
    },
}


@dataclass(frozen=True)
class Waiver:
    """One waiver of `policy` for the resources its patterns match (both, when both given)."""

    policy: str
    reason: str
    source: str  # where it is declared, for the report
    urn: str | None = None
    name: str | None = None
    problem: str | None = None  # why it is refused; None: valid

    def matches(self, urn: str, name: str) -> bool:
        if self.urn is None and self.name is None:
            return True  # a tag: it sits on the resource itself
        return (self.urn is None or fnmatchcase(urn, self.urn)) and (
            self.name is None or fnmatchcase(name, self.name)
        )


@dataclass(frozen=True)
class Decision:
    """What the waivers say about one finding."""

    waiver: Waiver | None = None  # the valid waiver that applies
    refused: tuple[Waiver, ...] = ()  # waivers that match but are refused
    file_problem: str | None = None  # the waiver file could not be used

    def annotate(self, message: str, not_applied: str | None = None) -> str:
        """The message to report: prefixed when waived (or saying why the waiver could not
        be applied), with the refusals appended."""
        notes = [f" [waiver refused ({w.source}): {w.problem}]" for w in self.refused]
        if self.file_problem is not None and self.waiver is None:
            notes.append(f" [waivers not applied: {self.file_problem}]")
        text = message + "".join(notes)
        if self.waiver is None:
            return text
        where = f"{self.waiver.reason} ({self.waiver.source})"
        if not_applied is not None:
            return f"[waiver NOT applied: {not_applied}; waiver: {where}] {text}"
        return f"[waived: {where}] {text}"


def _problem_of_reason(reason: Any) -> str | None:
    if is_unknown(reason):
        return "its reason is computed and unknown in this preview; write it as a literal"
    if not isinstance(reason, str) or not reason.strip():
        return "it gives no reason; a waiver must say why the finding is accepted"
    if len(reason.strip()) < MIN_REASON:
        return f"its reason {reason.strip()!r} is shorter than {MIN_REASON} characters"
    return None


def from_tags(tags: Any, policy: str) -> list[Waiver]:
    """The waivers of `policy` in a resource's tags."""
    if not isinstance(tags, Mapping):
        return []
    out: list[Waiver] = []
    per_rule = tags.get(TAG_PREFIX + policy)
    if per_rule is not None:
        reason = per_rule.strip() if isinstance(per_rule, str) and not is_unknown(per_rule) else ""
        out.append(
            Waiver(
                policy,
                reason,
                f"tag {TAG_PREFIX}{policy}",
                problem=_problem_of_reason(per_rule),
            )
        )
    single = tags.get(TAG_KEY)
    if isinstance(single, str) and not is_unknown(single):
        rule, _, reason = single.partition(":")
        if rule.strip() == policy:
            out.append(
                Waiver(policy, reason.strip(), f"tag {TAG_KEY}", problem=_problem_of_reason(reason))
            )
    return out


def _entry(raw: Any, policy: str | None, source: str) -> Waiver | None:
    """A waiver from a config or file entry; None (and a note on stderr) when it can name no
    finding: no pattern, or not an object."""
    if not isinstance(raw, Mapping):
        _warn(f"{source}: a waiver must be an object {{urn|name, reason}}, got {raw!r}")
        return None
    rule = policy if policy is not None else raw.get("policy")
    urn, name = raw.get("urn"), raw.get("name")
    if not isinstance(rule, str) or not rule:
        _warn(f"{source}: the waiver names no policy: {dict(raw)!r}")
        return None
    if not isinstance(urn, str) and not isinstance(name, str):
        _warn(f"{source}: the waiver of {rule} names no resource (give `urn` or `name`)")
        return None
    problem = _problem_of_reason(raw.get("reason"))
    unknown = sorted(set(raw) - ENTRY_KEYS - ({"policy"} if policy is None else set()))
    if policy is not None and "policy" in raw and raw.get("policy") != policy:
        problem = f"it names policy {raw.get('policy')!r} under {policy!r}"
    elif unknown:
        problem = f"unknown key(s) {unknown}; a waiver takes {sorted(ENTRY_KEYS)}"
    reason = raw.get("reason")
    return Waiver(
        rule,
        reason.strip() if isinstance(reason, str) else "",
        source,
        urn if isinstance(urn, str) else None,
        name if isinstance(name, str) else None,
        problem,
    )


def from_config(config: Mapping[str, Any], policy: str) -> list[Waiver]:
    """The waivers in a policy's config (its `waivers` property)."""
    raw = config.get(CONFIG_PROPERTY)
    if not raw:
        return []
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        _warn(f"policy config {policy}.{CONFIG_PROPERTY} must be a list, got {raw!r}")
        return []
    found = (
        _entry(e, policy, f"policy config {policy}.{CONFIG_PROPERTY}[{i}]")
        for i, e in enumerate(raw)
    )
    return [w for w in found if w is not None]


@dataclass
class _FileCache:
    key: tuple[str, float, int] | None = None
    waivers: list[Waiver] = field(default_factory=list)
    problem: str | None = None


_CACHE = _FileCache()


def parse_file(text: str, path: str) -> list[Waiver]:
    """The waivers of a waiver file's text (YAML, or JSON by a `.json` suffix); raises
    ValueError with the reason when the file is malformed."""
    if path.endswith(".json"):
        data = json.loads(text)
    else:
        try:
            import yaml
        except ImportError as exc:  # pulumi depends on PyYAML; a stripped venv may not
            raise ValueError("PyYAML is not installed: use a .json waiver file") from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"not valid YAML: {exc}") from exc
    if isinstance(data, Mapping) and set(data) == {CONFIG_PROPERTY}:
        data = data[CONFIG_PROPERTY]
    if data is None:
        return []
    if not isinstance(data, list):
        raise ValueError("expected a list of waivers (or {waivers: [...]})")
    found = (_entry(e, None, f"waiver file {path} #{i + 1}") for i, e in enumerate(data))
    return [w for w in found if w is not None]


def file_waivers(environ: Mapping[str, str] = os.environ) -> tuple[list[Waiver], str | None]:
    """The waivers of the file `IDEMPOTENT_MESSAGING_WAIVERS` names (cached by path, mtime and
    size) and why it cannot be used, if it cannot."""
    path = environ.get(FILE_ENV)
    if not path:
        return [], None
    try:
        stat = Path(path).stat()
        key = (str(Path(path).resolve()), stat.st_mtime, stat.st_size)
    except OSError as exc:
        return [], f"waiver file {path} ({FILE_ENV}) cannot be read: {exc.strerror or exc}"
    if _CACHE.key != key:
        try:
            _CACHE.waivers, _CACHE.problem = parse_file(Path(path).read_text(), path), None
        except (OSError, ValueError) as exc:
            _CACHE.waivers, _CACHE.problem = [], f"waiver file {path} is malformed: {exc}"
        _CACHE.key = key
    return list(_CACHE.waivers), _CACHE.problem


def decide(
    policy: str,
    urn: str,
    name: str,
    tags: Any,
    config: Mapping[str, Any],
    environ: Mapping[str, str] = os.environ,
) -> Decision:
    """The waiver that applies to `policy`'s finding on the resource (urn, name, tags)."""
    from_file, problem = file_waivers(environ)
    candidates: Iterable[Waiver] = [
        *from_tags(tags, policy),
        *from_config(config, policy),
        *(w for w in from_file if w.policy == policy),
    ]
    matching = [w for w in candidates if w.matches(urn, name)]
    valid = [w for w in matching if w.problem is None]
    refused = tuple(w for w in matching if w.problem is not None)
    return Decision(valid[0] if valid else None, refused, problem)


_WARNED: set[str] = set()


def _warn(text: str) -> None:
    """Once per process: stderr, which the CLI shows for a policy pack (stdout carries the
    gRPC port)."""
    if text not in _WARNED:
        _WARNED.add(text)
        print(f"idempotent-messaging waivers: {text}", file=sys.stderr)
