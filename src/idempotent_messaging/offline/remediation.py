"""The pack's remediations, offline: what `pulumi up --policy-pack` would change, and the diff.

The Pulumi engine asks a policy pack to remediate each resource as it registers, handing it the
resource's inputs (the `Remediate` call of the analyzer protocol) before it analyzes them, and
substitutes the properties a remediation returns (pulumi-policy: only resource policies whose
enforcement level is `remediate` run, each seeing the previous one's result). Offline, the
same call goes to pulumi-policy's own servicer, configured as for the analysis, for every
resource of the recorded run; the returned inputs replace the recorded ones (and the outputs
that echo them), so the analysis that follows re-checks the remediated stack, and each change
is reported: rule, resource, property path, from -> to, the program line.

Two differences from a deployment are said here:
- The engine remediates at registration, so a value another resource derives from a
  remediated one (an apply over a queue's visibility timeout) would see the new value; offline
  the derived value keeps the old one.
- A stack rule whose fix needs more than the resource it changes (`Rule.graph_remedy`: a
  queue's visibility timeout from the timeout of the function a mapping links to it, a DLQ's
  retention from its source's) cannot remediate at deploy: the engine hands a remediation one
  resource at its registration, before the resources that link it to anything exist, and
  pulumi-policy reports a stack rule at level `remediate` as mandatory. Offline the whole
  graph is known, so the check applies these too, after the engine's kind, and reports them
  with `at_deploy` False: the program edit to make, which `pulumi up` will not make for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from google.protobuf import json_format
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel, StackValidationPolicy
from pulumi_policy.policy import _PolicyAnalyzerServicer

from ..rules import waivers
from ..rules._base import MANDATORY
from ..rules.graph import Graph, node_from_policy_resource
from ..rules.pack import RULES
from ..rules.values import is_unknown
from .analyzer import _options, analyze_stack_request, effective_config, make_servicer
from .project import STACK_TYPE
from .recorder import RecordedResource
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
    # Whether `pulumi up` with the pack applies it too (False: only the program edit keeps it).
    at_deploy: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def remediable() -> list[str]:
    """The pack's rules that remediate (their level can be `remediate`): at deploy and offline,
    or offline only (a fix computed from the whole graph)."""
    return [r.name for r in RULES if r.remedy is not None or r.graph_remedy is not None]


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
    names = set(remediable())
    return any(
        name in names and level == proto.REMEDIATE
        for name, (level, _) in effective_config(config).items()
    )


def editing(config: Mapping[str, Any] | None) -> bool:
    """Whether a rule whose fix only the offline check can compute is at level `remediate`."""
    levels = effective_config(config)
    return any(levels[r.name][0] == proto.REMEDIATE for r in RULES if r.graph_remedy is not None)


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
    """Every fix of the rules `config` sets to `remediate` (in place): the engine's, then the
    program edits only the whole graph can compute; the changes."""
    return remediate_resources(run, config) + remediate_graph(run, config)


def remediate_resources(run: ProgramRun, config: Mapping[str, Any] | None) -> list[Remediation]:
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
        if current is not original:
            _set_inputs(r, original, current)
    return applied


def _set_inputs(r: RecordedResource, original: dict[str, Any], current: dict[str, Any]) -> None:
    """Replace the resource's inputs, and the outputs that echo the changed ones (the provider
    echoes an input in its output of the same name)."""
    changed = {k for k in set(original) | set(current) if original.get(k) != current.get(k)}
    r.inputs_struct.Clear()
    r.inputs_struct.update(current)
    outputs = json_format.MessageToDict(r.outputs_struct)
    for key in changed:
        if key in current:
            outputs[key] = current[key]
        else:
            outputs.pop(key, None)
    r.outputs_struct.Clear()
    r.outputs_struct.update(outputs)


def stack_graph(run: ProgramRun) -> Graph:
    """The graph the pack's stack rules see for `run`: built from the `AnalyzeStack` request
    the engine would send, deserialized by pulumi-policy's own servicer as for the rules."""
    graphs: list[Graph] = []
    probe = StackValidationPolicy(
        "stack-graph",
        "the stack's resource graph",
        lambda args, _report: graphs.append(Graph(map(node_from_policy_resource, args.resources))),
        EnforcementLevel.ADVISORY,
    )
    servicer = _PolicyAnalyzerServicer(
        "stack-graph", "0.0.0", [probe], EnforcementLevel.ADVISORY, None, ""
    )
    servicer.AnalyzeStack(analyze_stack_request(run), None)
    return graphs[0]


def remediate_graph(run: ProgramRun, config: Mapping[str, Any] | None) -> list[Remediation]:
    """Apply the fixes of the stack rules `config` sets to `remediate` that only the whole graph
    can compute (`Rule.graph_remedy`), rule by rule on the graph as the previous rule left it;
    never to a resource the program does not create, a value that is not a plain known one
    (unknown in a preview, a secret), or a finding a waiver accepts."""
    levels = effective_config(config)
    by_urn = run.by_urn
    applied: list[Remediation] = []
    # A mandatory rule's fix first, so that a change is reported under the rule that requires
    # it (the 6x advice raises a visibility timeout further only where it asks for more).
    for rule in sorted(RULES, key=lambda r: r.level != MANDATORY):
        level, props = levels[rule.name]
        if rule.graph_remedy is None or level != proto.REMEDIATE:
            continue
        graph = stack_graph(run)
        for fix in rule.graph_remedy(graph, props):
            r, node = by_urn.get(fix.urn), graph.by_urn.get(fix.urn)
            if r is None or node is None or r.read or r.remote or not r.custom:
                continue
            if waivers.decide(rule.name, r.urn, r.name, node.get("tags"), props).waiver:
                continue
            inputs = json_format.MessageToDict(r.inputs_struct)
            before = inputs.get(fix.property)
            if isinstance(before, (dict, list)) or is_unknown(before):
                continue  # a secret or an unknown: not a value to overwrite
            _set_inputs(r, inputs, {**inputs, fix.property: fix.value})
            applied.append(
                Remediation(
                    rule.name,
                    r.urn,
                    r.type,
                    r.name,
                    fix.property,
                    _whole(before),
                    _whole(fix.value),
                    r.source_file,
                    r.source_line,
                    at_deploy=False,
                )
            )
    return applied
