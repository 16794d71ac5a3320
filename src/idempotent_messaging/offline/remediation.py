"""The pack's remediations, offline: what `pulumi up --policy-pack` would change, and the diff.

The Pulumi engine asks a policy pack to remediate each resource as it registers, handing it the
resource's inputs (the `Remediate` call of the analyzer protocol) before it analyzes them, and
substitutes the properties a remediation returns (pulumi-policy: only resource policies whose
enforcement level is `remediate` run, each seeing the previous one's result). Offline, the
same call goes to pulumi-policy's own servicer, configured as for the analysis, for every
resource of the recorded run; the returned inputs replace the recorded ones (and the outputs
that echo them), so the analysis that follows re-checks the remediated stack, and each change
is reported: rule, resource, property path, from -> to, the program line.

One difference from a deployment is said here: the engine remediates at registration, so a
value another resource derives from a remediated one (an apply over a queue's visibility
timeout) would see the new value; offline the derived value keeps the old one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from google.protobuf import json_format
from pulumi.runtime import proto

from ..rules.pack import POLICIES
from .analyzer import _options, effective_config, make_servicer
from .project import STACK_TYPE
from .runner import ProgramRun

REMEDIATE = "remediate"


@dataclass
class Remediation:
    """One property a rule's remediation changed on one resource."""

    policy: str
    urn: str
    type: str
    name: str
    property: str  # path: `sqsManagedSseEnabled`, `redrivePolicy.maxReceiveCount`
    before: Any  # None: absent
    after: Any
    file: str | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def remediable() -> list[str]:
    """The pack's rules that remediate (their level can be `remediate`)."""
    return [p.name for p in POLICIES if getattr(p, "has_remediation", lambda: False)()]


def with_remediation(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """`config` with every remediable rule it leaves at its default level set to `remediate`
    (`--remediate`): a rule the config sets to any level keeps it."""
    out = dict(config or {})
    for name in remediable():
        entry = out.get(name)
        if entry is None:
            out[name] = {"enforcementLevel": REMEDIATE}
        elif isinstance(entry, dict) and "enforcementLevel" not in entry:
            out[name] = {**entry, "enforcementLevel": REMEDIATE}
    return out


def remediating(config: Mapping[str, Any] | None) -> bool:
    """Whether any rule's effective level is `remediate` (as the CLI would apply it)."""
    return any(
        name in remediable() and level == proto.REMEDIATE
        for name, (level, _) in effective_config(config).items()
    )


def _parsed(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return None
    return None


def changes(before: Any, after: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(property path, before, after) of every leaf that differs; a JSON document held in a
    string (a redrive policy, a queue policy) is compared inside."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            yield from changes(before.get(key), after.get(key), f"{path}.{key}" if path else key)
        return
    inner_before, inner_after = _parsed(before), _parsed(after)
    if isinstance(inner_before, dict) and isinstance(inner_after, dict) and before != after:
        yield from changes(inner_before, inner_after, path)
        return
    if (
        isinstance(before, list)
        and isinstance(after, list)
        and len(after) > len(before)
        and after[: len(before)] == before
    ):
        for index in range(len(before), len(after)):  # appended items, one by one
            yield f"{path}[{index}]", None, _whole(after[index])
        return
    if before != after:
        yield path, _whole(before), _whole(after)


def _whole(value: Any) -> Any:
    """Wire numbers are floats: 185.0 is shown (and compared by a reader) as 185."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    return value


def remediate_run(run: ProgramRun, config: Mapping[str, Any] | None) -> list[Remediation]:
    """Apply the remediations of the rules `config` sets to `remediate` to every resource the
    program declares (in place), as the engine applies them; the changes, in resource order."""
    servicer = make_servicer(config)
    applied: list[Remediation] = []
    for r in run.resources:
        if r.type == STACK_TYPE or r.read or r.remote or not r.custom:
            continue  # read, remote and component resources are not this program's to change
        request = proto.AnalyzeRequest(
            type=r.type, properties=r.inputs_struct, urn=r.urn, name=r.name, options=_options(r)
        )
        response = servicer.Remediate(request, None)
        current = json_format.MessageToDict(r.inputs_struct)
        original = current
        for remediation in response.remediations:
            if not remediation.HasField("properties"):
                continue  # a diagnostic only (e.g. an unknown value in a preview)
            new = json_format.MessageToDict(remediation.properties)
            for path, before, after in changes(current, new):
                applied.append(
                    Remediation(
                        remediation.policyName,
                        r.urn,
                        r.type,
                        r.name,
                        path,
                        before,
                        after,
                        r.source_file,
                        r.source_line,
                    )
                )
            current = new
        if current is original:
            continue
        changed = {k for k in set(original) | set(current) if original.get(k) != current.get(k)}
        r.inputs_struct.Clear()
        r.inputs_struct.update(current)
        outputs = json_format.MessageToDict(r.outputs_struct)
        for key in changed:
            # The provider echoes an input in its output of the same name.
            if key in current:
                outputs[key] = current[key]
            else:
                outputs.pop(key, None)
        r.outputs_struct.Clear()
        r.outputs_struct.update(outputs)
    return applied
