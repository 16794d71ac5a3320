"""Print what `pulumi up` would create for a stack, computed offline from the real program.

Runs ``__main__.py`` with ``Pulumi.<stack>.yaml`` under Pulumi mocks (policy.program, the same
runner the offline policy check uses) and prints the resource tree (parent -> children) with
the settings that make a queue consumer safe: visibility, retention, redrive, batch size,
timeout, TTL, alarm thresholds.

    .venv/bin/python -m tools.preview --stack dev [--preview]

Without ``--preview`` computed values (ARNs, URLs) are offline placeholders (account
123456789012); with it they print as ``(known after apply)``, as `pulumi preview` shows them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from idempotent_messaging import limits
from idempotent_messaging.offline import (
    ProgramError,
    ProgramRun,
    RecordedResource,
    run_program,
)
from idempotent_messaging.rules.values import is_unknown

PROJECT_DIR = Path(__file__).resolve().parent.parent
UNKNOWN_TEXT = "(known after apply)"


def show(value: Any) -> str:
    if is_unknown(value):
        return UNKNOWN_TEXT
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)


def duration(seconds: Any) -> str:
    if is_unknown(seconds) or seconds is None:
        return show(seconds)
    s = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size and s % size == 0:
            return f"{s} s ({s // size} {unit})"
    return f"{s} s"


def _json(value: Any) -> Any:
    if is_unknown(value) or not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def _name_of(run: ProgramRun, urns: list[str]) -> str:
    names = [run.by_urn[u].name for u in urns if u in run.by_urn]
    return ", ".join(names) or UNKNOWN_TEXT


def _queue(run: ProgramRun, r: RecordedResource) -> Iterator[str]:
    i = r.inputs
    yield f"type {'FIFO' if i.get('fifoQueue') else 'standard'}"
    yield f"visibility {duration(i.get('visibilityTimeoutSeconds', 30))}"
    yield f"retention {duration(i.get('messageRetentionSeconds', 345600))}"
    if "redrivePolicy" in i:
        policy = _json(i["redrivePolicy"])
        target = _name_of(run, r.property_dependencies.get("redrivePolicy", []))
        count = show(policy["maxReceiveCount"]) if policy else UNKNOWN_TEXT
        yield f"redrive -> {target} after {count} receives"
    if i.get("kmsMasterKeyId"):
        yield f"SSE KMS {show(i['kmsMasterKeyId'])}"
    elif i.get("sqsManagedSseEnabled"):
        yield "SSE SQS-managed"
    else:
        yield "SSE none"


def _table(run: ProgramRun, r: RecordedResource) -> Iterator[str]:
    i = r.inputs
    keys = i.get("hashKey", "?") + (f" / {i['rangeKey']}" if i.get("rangeKey") else "")
    yield f"keys {keys}"
    yield f"billing {i.get('billingMode', 'PROVISIONED')}"
    ttl = i.get("ttl") or {}
    yield f"TTL {ttl.get('attributeName')}" if ttl.get("enabled") else "TTL off"
    pitr = (i.get("pointInTimeRecovery") or {}).get("enabled")
    yield f"PITR {'on' if pitr else 'off'}"
    if (i.get("tags") or {}).get("idempotent-messaging:role") == "idempotency-state":
        yield "role idempotency state"


def _function(run: ProgramRun, r: RecordedResource) -> Iterator[str]:
    i = r.inputs
    yield f"handler {i.get('handler')}"
    yield f"{i.get('runtime')} {show(i.get('architectures', ['x86_64']))}"
    yield f"timeout {duration(i.get('timeout', 3))}"
    yield f"memory {show(i.get('memorySize', 128))} MB"
    if "reservedConcurrentExecutions" in i:
        yield f"reserved concurrency {show(i['reservedConcurrentExecutions'])}"
    yield f"tracing {(i.get('tracingConfig') or {}).get('mode', 'PassThrough')}"
    for layer in i.get("layers") or []:
        yield f"layer {show(layer).rsplit(':', 2)[-2] if not is_unknown(layer) else UNKNOWN_TEXT}"
    variables = (i.get("environment") or {}).get("variables") or {}
    yield "env " + ", ".join(sorted(variables))


def _esm(run: ProgramRun, r: RecordedResource) -> Iterator[str]:
    i = r.inputs
    yield (
        f"{_name_of(run, r.property_dependencies.get('eventSourceArn', []))} -> "
        f"{_name_of(run, r.property_dependencies.get('functionName', []))}"
    )
    yield f"batch size {show(i.get('batchSize', 10))}"
    yield f"batching window {duration(i.get('maximumBatchingWindowInSeconds', 0))}"
    yield f"response types {show(i.get('functionResponseTypes', []))}"
    scaling = i.get("scalingConfig") or {}
    if "maximumConcurrency" in scaling:
        yield f"maximum concurrency {show(scaling['maximumConcurrency'])}"
    queues = [run.by_urn[u] for u in r.property_dependencies.get("eventSourceArn", [])]
    functions = [run.by_urn[u] for u in r.property_dependencies.get("functionName", [])]
    if len(queues) == 1 and len(functions) == 1:
        visibility = queues[0].inputs.get("visibilityTimeoutSeconds", 30)
        timeout = functions[0].inputs.get("timeout", 3)
        window = i.get("maximumBatchingWindowInSeconds", 0)
        required = limits.recommended_visibility_timeout(timeout, window)
        verdict = "ok" if visibility >= required else "TOO LOW"
        yield (
            f"visibility {show(visibility)} s vs {limits.DEFAULT_VISIBILITY_MULTIPLIER} x "
            f"timeout {show(timeout)} s + window {show(window)} s = {required} s: {verdict}"
        )


def _alarm(run: ProgramRun, r: RecordedResource) -> Iterator[str]:
    i = r.inputs
    ops = {
        "GreaterThanOrEqualToThreshold": ">=",
        "GreaterThanThreshold": ">",
        "LessThanThreshold": "<",
        "LessThanOrEqualToThreshold": "<=",
    }
    dims = ",".join(f"{k}={show(v)}" for k, v in (i.get("dimensions") or {}).items())
    yield (
        f"{i.get('metricName')}[{dims}] {i.get('statistic')} "
        f"{ops.get(i.get('comparisonOperator', ''), '?')} {show(i.get('threshold'))}"
    )
    yield f"actions alarm {len(i.get('alarmActions') or [])} / ok {len(i.get('okActions') or [])}"


def _role_policy(run: ProgramRun, r: RecordedResource) -> Iterator[str]:
    policy = _json(r.inputs.get("policy"))
    if policy is None:
        yield f"policy {UNKNOWN_TEXT}"
        return
    for statement in policy["Statement"]:
        actions = statement["Action"]
        actions = [actions] if isinstance(actions, str) else actions
        resources = statement["Resource"]
        resources = [resources] if isinstance(resources, str) else resources
        # The resource part of each ARN (after arn:partition:service:region:account:).
        short = ", ".join(
            str(x).split(":", 5)[-1] if str(x).startswith("arn:") else show(x) for x in resources
        )
        yield f"{statement.get('Sid', '')}: {', '.join(actions)} on {short}"


def _simple(*keys: str) -> Callable[[ProgramRun, RecordedResource], Iterator[str]]:
    def describe(run: ProgramRun, r: RecordedResource) -> Iterator[str]:
        for key in keys:
            if key in r.inputs:
                yield f"{key} {show(r.inputs[key])}"

    return describe


DESCRIBERS: dict[str, Callable[[ProgramRun, RecordedResource], Iterator[str]]] = {
    "aws:sqs/queue:Queue": _queue,
    "aws:dynamodb/table:Table": _table,
    "aws:lambda/function:Function": _function,
    "aws:lambda/eventSourceMapping:EventSourceMapping": _esm,
    "aws:cloudwatch/metricAlarm:MetricAlarm": _alarm,
    "aws:iam/rolePolicy:RolePolicy": _role_policy,
    "aws:cloudwatch/logGroup:LogGroup": _simple("name", "retentionInDays"),
    "aws:sns/topic:Topic": _simple("name", "kmsMasterKeyId"),
    "aws:sns/topicSubscription:TopicSubscription": _simple("protocol", "endpoint"),
    "aws:kms/key:Key": _simple("enableKeyRotation", "deletionWindowInDays"),
    "aws:iam/role:Role": _simple("name"),
}


def render(run: ProgramRun) -> list[str]:
    children: dict[str | None, list[RecordedResource]] = {}
    for r in run.resources:
        children.setdefault(r.parent, []).append(r)
    lines = [
        f"Stack {run.project.name}/{run.stack} "
        f"({'preview' if run.preview else 'up'}, offline under Pulumi mocks): "
        f"{len(run.resources) - 1} resources"
    ]

    def walk(resource: RecordedResource, prefix: str, last: bool, root: bool) -> None:
        branch = "" if root else ("└─ " if last else "├─ ")
        lines.append(f"{prefix}{branch}{resource.type}  {resource.name}")
        inner = prefix if root else prefix + ("   " if last else "│  ")
        kids = children.get(resource.urn, [])
        describe = DESCRIBERS.get(resource.type)
        details = list(describe(run, resource)) if describe else []
        for detail in details:
            lines.append(f"{inner}{'│  ' if kids else '   '}· {detail}")
        for index, kid in enumerate(kids):
            walk(kid, inner, index == len(kids) - 1, False)

    for top in children.get(None, []):
        walk(top, "", True, True)
    if run.stack_outputs:
        lines.append("Outputs:")
        for key, value in sorted(run.stack_outputs.items()):
            lines.append(f"  {key}: {show(value)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev", help="stack name (Pulumi.<stack>.yaml)")
    parser.add_argument("--project", default=str(PROJECT_DIR), help="Pulumi project directory")
    parser.add_argument(
        "--preview", action="store_true", help="show computed values as unknown, as a preview"
    )
    options = parser.parse_args(argv)
    stack_file = Path(options.project) / f"Pulumi.{options.stack}.yaml"
    if not stack_file.is_file():
        print(f"error: no stack {options.stack!r}: {stack_file} does not exist", file=sys.stderr)
        return 2
    try:
        run = run_program(options.project, options.stack, preview=options.preview)
    except ProgramError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print("\n".join(render(run)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
