"""SQS rules: visibility vs the consumer's timeout, redrive, DLQ retention/type/alarm.

Each rule is a pure function over the resource graph (or over one resource's props) returning
`(urn, message)` pairs; `policy.pack` wraps them into pulumi-policy policies. Absent properties
take the AWS default; unknown values (preview) make a rule skip that one check, never guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy import limits
from policy.graph import (
    QUEUE,
    REDRIVE_POLICY,
    Graph,
    Mapping_,
    Node,
    as_number,
    fmt,
    parse_json,
)
from policy.rules._base import (
    ADVISORY,
    MANDATORY,
    Finding,
    number,
    resource_rule,
    stack_rule,
    strings,
)
from policy.values import is_unknown


def _num(node: Node, prop: str, default: float) -> Any:
    value = as_number(node.get(prop))
    return default if value is None else value


def visibility_s(queue: Node) -> Any:
    return _num(queue, "visibilityTimeoutSeconds", limits.AWS_DEFAULT_VISIBILITY_TIMEOUT_S)


def retention_s(queue: Node) -> Any:
    return _num(queue, "messageRetentionSeconds", limits.AWS_DEFAULT_MESSAGE_RETENTION_S)


def function_timeout_s(fn: Node) -> Any:
    return _num(fn, "timeout", limits.AWS_DEFAULT_LAMBDA_TIMEOUT_S)


def batching_window_s(esm: Node) -> Any:
    return _num(esm, "maximumBatchingWindowInSeconds", limits.AWS_DEFAULT_BATCHING_WINDOW_S)


def _consumers(graph: Graph) -> list[tuple[Mapping_, Node, Node]]:
    """(mapping, queue, function) for every SQS mapping whose queue and function are known."""
    out = []
    for m in graph.mappings:
        if m.is_sqs and isinstance(m.queue, Node) and isinstance(m.function, Node):
            out.append((m, m.queue, m.function))
    return out


@stack_rule(
    "sqs-visibility-timeout-covers-lambda-timeout",
    "Every queue consumed by a Lambda event source mapping has a visibility timeout >= the "
    "function's timeout.",
    MANDATORY,
    "Raise the queue's visibility_timeout_seconds to at least the function timeout.",
)
def visibility_covers_lambda_timeout(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for m, queue, fn in _consumers(graph):
        vis, timeout = visibility_s(queue), function_timeout_s(fn)
        if is_unknown(vis) or is_unknown(timeout) or (queue.urn, fn.urn) in seen:
            continue
        seen.add((queue.urn, fn.urn))
        if vis < timeout:
            vis_note = " (AWS default)" if queue.get("visibilityTimeoutSeconds") is None else ""
            t_note = " (AWS default)" if fn.get("timeout") is None else ""
            findings.append(
                (
                    queue.urn,
                    f"queue {queue.label} visibility timeout {fmt(vis)} s{vis_note} < timeout "
                    f"{fmt(timeout)} s{t_note} of function {fn.label}, which consumes it through "
                    f"event source mapping {m.node.label}; Lambda rejects such a mapping and a "
                    f"slow invocation would see its messages redelivered while it still runs. "
                    f"Fix: set visibility_timeout_seconds >= {fmt(timeout)} on {queue.label} "
                    f"(recommended "
                    f"{limits.recommended_visibility_timeout(timeout, batching_window_s(m.node))}"
                    f" s) or lower the function timeout.",
                )
            )
    return findings


@stack_rule(
    "sqs-visibility-timeout-6x-lambda-timeout",
    "A consumed queue's visibility timeout is >= multiplier x function timeout + maximum "
    "batching window (AWS advises 6x).",
    ADVISORY,
    "Set visibility_timeout_seconds = limits.recommended_visibility_timeout(timeout, window).",
    {"multiplier": number(limits.DEFAULT_VISIBILITY_MULTIPLIER, 1)},
)
def visibility_6x_lambda_timeout(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    multiplier = float(config.get("multiplier", limits.DEFAULT_VISIBILITY_MULTIPLIER))
    findings: list[Finding] = []
    seen: set[tuple[str, str, float]] = set()
    for m, queue, fn in _consumers(graph):
        vis, timeout, window = (
            visibility_s(queue),
            function_timeout_s(fn),
            batching_window_s(m.node),
        )
        if any(is_unknown(v) for v in (vis, timeout, window)):
            continue
        key = (queue.urn, fn.urn, window)
        if key in seen or timeout <= 0:
            continue
        seen.add(key)
        required = limits.recommended_visibility_timeout(timeout, window, multiplier)
        if vis < required:
            findings.append(
                (
                    queue.urn,
                    f"queue {queue.label} visibility timeout {fmt(vis)} s < {fmt(multiplier)} x "
                    f"timeout {fmt(timeout)} s of function {fn.label} + maximum batching window "
                    f"{fmt(window)} s of mapping {m.node.label} = {required} s; Lambda retries a "
                    f"throttled or failed batch within the visibility timeout, so a shorter one "
                    f"redelivers messages still in work. Fix: raise visibility_timeout_seconds "
                    f"on {queue.label} to >= {required}.",
                )
            )
    return findings


@stack_rule(
    "sqs-lambda-source-has-dlq",
    "Every queue a Lambda function consumes has a redrive policy (a DLQ).",
    MANDATORY,
    "Add a redrive_policy (inline or aws.sqs.RedrivePolicy) pointing at a DLQ.",
)
def lambda_source_has_dlq(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[str] = set()
    for m in graph.mappings:
        queue = m.queue
        if not (m.is_sqs and isinstance(queue, Node)) or queue.urn in seen:
            continue
        seen.add(queue.urn)
        if (
            queue.urn in graph.redrives
            or queue.urn in graph.declared_dlqs
            or graph.named_like_dlq(queue)
        ):
            continue  # has a redrive policy, or is itself a DLQ (a DLQ needs no DLQ)
        findings.append(
            (
                queue.urn,
                f"queue {queue.label} is consumed by Lambda through event source mapping "
                f"{m.node.label} but has no redrive policy: a poison message is retried until "
                f"its retention expires and is then lost. Fix: give {queue.label} a "
                f"redrive_policy (deadLetterTargetArn = a DLQ of the same type, "
                f"maxReceiveCount {limits.DEFAULT_MIN_MAX_RECEIVE_COUNT}.."
                f"{limits.DEFAULT_MAX_MAX_RECEIVE_COUNT}) inline or as an "
                f"aws.sqs.RedrivePolicy.",
            )
        )
    return findings


def _dlq_pairs(graph: Graph) -> list[tuple[Node, Node]]:
    """(source queue, DLQ) for every redrive whose DLQ is declared in the stack."""
    return [
        (r.source, r.dlq)
        for r in graph.redrives.values()
        if isinstance(r.dlq, Node) and r.source.type == QUEUE
    ]


@stack_rule(
    "sqs-dlq-retention-exceeds-source",
    "A standard dead-letter queue retains messages longer than each of its standard source "
    "queues (FIFO DLQs reset the enqueue time, so FIFO pairs are exempt).",
    MANDATORY,
    "Set the DLQ's message_retention_seconds above the source's, or shorten the source's.",
)
def dlq_retention_exceeds_source(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for source, dlq in _dlq_pairs(graph):
        src_ret, dlq_ret = retention_s(source), retention_s(dlq)
        if is_unknown(src_ret) or is_unknown(dlq_ret) or dlq_ret > src_ret:
            continue
        src_note = " (AWS default)" if source.get("messageRetentionSeconds") is None else ""
        dlq_note = " (AWS default)" if dlq.get("messageRetentionSeconds") is None else ""
        findings.append(
            (
                dlq.urn,
                f"DLQ {dlq.label} retention {fmt(dlq_ret)} s{dlq_note} is not longer than the "
                f"retention {fmt(src_ret)} s{src_note} of its source queue {source.label}: a "
                f"standard queue's message keeps its original enqueue time in the DLQ, so it "
                f"expires there before anyone can inspect or redrive it. Fix: set "
                f"message_retention_seconds on {dlq.label} above {fmt(src_ret)} (e.g. "
                f"{limits.SQS_MAX_RETENTION_S}, the 14-day maximum) or shorten the source's "
                f"below {fmt(dlq_ret)} s.",
            )
        )
    return findings


@stack_rule(
    "sqs-dlq-type-matches-source",
    "The DLQ of a FIFO queue is FIFO, the DLQ of a standard queue is standard.",
    MANDATORY,
    "Make the DLQ the same queue type as its source.",
)
def dlq_type_matches_source(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for r in graph.redrive_holders:
        if r.dlq is None:
            continue
        src_fifo = graph.is_fifo(r.source)  # None for a source outside the stack
        dlq_fifo = graph.is_fifo(r.dlq)
        if src_fifo is None or dlq_fifo is None or src_fifo == dlq_fifo:
            continue
        attach = r.dlq.urn if isinstance(r.dlq, Node) else r.holder.urn
        kind = {True: "FIFO", False: "standard"}
        wanted = "a FIFO queue (fifo_queue=True, name ending in .fifo)" if src_fifo else "standard"
        findings.append(
            (
                attach,
                f"DLQ {r.dlq.label} is a {kind[dlq_fifo]} queue but its source queue "
                f"{r.source.label} is {kind[src_fifo]}: SQS requires the dead-letter queue of a "
                f"FIFO queue to be FIFO and of a standard queue to be standard, and rejects the "
                f"redrive policy. Fix: make {r.dlq.label} {wanted}.",
            )
        )
    return findings


@resource_rule(
    "sqs-max-receive-count-in-range",
    "A redrive policy's maxReceiveCount lies in a sane range (default 3..20).",
    MANDATORY,
    "Set maxReceiveCount within the configured range (e.g. 5).",
    {
        "min": number(limits.DEFAULT_MIN_MAX_RECEIVE_COUNT, 1),
        "max": number(limits.DEFAULT_MAX_MAX_RECEIVE_COUNT, 1),
    },
)
def max_receive_count_in_range(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    """Resource rule: the maxReceiveCount of a queue's or RedrivePolicy's redrive policy."""
    if resource_type not in (QUEUE, REDRIVE_POLICY):
        return []
    lo = float(config.get("min", limits.DEFAULT_MIN_MAX_RECEIVE_COUNT))
    hi = float(config.get("max", limits.DEFAULT_MAX_MAX_RECEIVE_COUNT))
    doc = parse_json(props.get("redrivePolicy"))
    if not isinstance(doc, dict) or not doc:
        return []
    count = as_number(doc.get("maxReceiveCount"))
    if is_unknown(count):
        return []
    where = "queue" if resource_type == QUEUE else "redrive policy"
    if count is None:
        return [
            f"{where} '{name}' sets a redrive policy without a numeric maxReceiveCount. Fix: set "
            f"maxReceiveCount between {fmt(lo)} and {fmt(hi)}."
        ]
    if lo <= count <= hi:
        return []
    why = (
        "so a single transient failure (a throttle, a cold start timeout) dead-letters a healthy "
        "message"
        if count < lo
        else "so a poison message burns retries and Lambda concurrency for hours before it is "
        "isolated"
    )
    return [
        f"{where} '{name}' has maxReceiveCount {fmt(count)}, outside {fmt(lo)}..{fmt(hi)}, {why}. "
        f"Fix: set maxReceiveCount between {fmt(lo)} and {fmt(hi)} (e.g. 5)."
    ]


ALARM_METRICS = ("ApproximateNumberOfMessagesVisible", "NumberOfMessagesSent")


def _fires_at_one(alarm: Node) -> bool | None:
    op = alarm.get("comparisonOperator")
    threshold = as_number(alarm.get("threshold"))
    if is_unknown(op) or is_unknown(threshold):
        return None
    if not isinstance(op, str) or threshold is None:
        return False
    if op == "GreaterThanOrEqualToThreshold":
        return bool(threshold <= 1)
    if op == "GreaterThanThreshold":
        return bool(threshold < 1)
    return False


def _actions_problem(alarm: Node) -> str | None:
    """Why the alarm notifies nobody, or None when it has an enabled action (or may have)."""
    enabled = alarm.get("actionsEnabled")
    if enabled is False or (isinstance(enabled, str) and enabled.lower() == "false"):
        return "has its actions disabled (actions_enabled=False)"
    actions = alarm.get("alarmActions")
    if is_unknown(actions) or (isinstance(actions, list) and len(actions) > 0):
        return None
    return "has no alarm action"


COMPOSITE_ALARM = "aws:cloudwatch/compositeAlarm:CompositeAlarm"


def _composite_notifies(graph: Graph, alarm: Node) -> bool:
    """A composite alarm with an enabled action whose rule names this alarm notifies for it."""
    refs = {r for r in (alarm.get("name"), alarm.get("arn")) if isinstance(r, str) and r}
    for composite in graph.of_type(COMPOSITE_ALARM):
        if _actions_problem(composite) is not None:
            continue
        rule = composite.get("alarmRule")
        if alarm in graph.dep_nodes(composite, "alarmRule", (alarm.type,)):
            return True
        named = [r for r in refs if not is_unknown(r)]
        if (
            isinstance(rule, str)
            and not is_unknown(rule)
            and any(f'"{r}"' in rule or f"({r})" in rule for r in named)
        ):
            return True
    return False


@stack_rule(
    "sqs-dlq-has-alarm",
    "Every DLQ has a deliverable CloudWatch alarm (namespace AWS/SQS, same region) that fires "
    "while a message sits in it: ApproximateNumberOfMessagesVisible >= 1, "
    "ApproximateAgeOfOldestMessage below the DLQ's retention, or NumberOfMessagesSent >= 1 for "
    "DLQs fed by API sends only (redriven messages are not counted as sent).",
    MANDATORY,
    "Add a MetricAlarm on the DLQ: threshold 1, GreaterThanOrEqualToThreshold, "
    "alarm_actions [topic arn].",
    {"metricNames": strings(ALARM_METRICS)},
)
def dlq_has_alarm(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    metric_names = tuple(config.get("metricNames", ALARM_METRICS))
    findings: list[Finding] = []
    users: dict[str, list[str]] = {
        urn: [r.source.label for r in redrives] for urn, redrives in graph.dlq_sources.items()
    }
    for urn, others in graph.other_dlq_users.items():
        users.setdefault(urn, []).extend(others)
    for dlq_urn, sources_of in users.items():
        dlq = graph.by_urn[dlq_urn]
        watching: list[tuple[Node, str]] = []  # alarms on the DLQ and why they fall short
        ok = False
        for alarm in graph.alarms_for_queue(dlq):
            for metric in graph.alarm_metrics(alarm):
                if not graph.alarm_watches_queue(alarm, metric, dlq):
                    continue
                name = metric.get("metricName")
                if is_unknown(name):
                    ok = True
                    break
                if name not in metric_names:
                    watching.append((alarm, f"watches {name}"))
                    continue
                fires = _fires_at_one(alarm)
                if fires is False:
                    watching.append(
                        (
                            alarm,
                            f"does not fire at 1 message ({alarm.get('comparisonOperator')} "
                            f"{alarm.get('threshold')})",
                        )
                    )
                    continue
                problem = _actions_problem(alarm)
                if problem is not None and not _composite_notifies(graph, alarm):
                    watching.append((alarm, problem))
                    continue
                ok = True
                break
            if ok:
                break
        if ok:
            continue
        sources = ", ".join(sorted(set(sources_of)))
        detail = (
            "; existing alarms fall short: " + "; ".join(f"{a.label} {why}" for a, why in watching)
            if watching
            else ""
        )
        findings.append(
            (
                dlq.urn,
                f"DLQ {dlq.label} (dead-letter queue of {sources}) has no CloudWatch alarm on "
                f"{' or '.join(metric_names)} that fires at >= 1 message and notifies someone"
                f"{detail}. A message in a DLQ is a failed business event; unwatched, it expires "
                f"silently. Fix: add an aws.cloudwatch.MetricAlarm with namespace AWS/SQS, "
                f"metric_name ApproximateNumberOfMessagesVisible, dimensions "
                f"{{'QueueName': <dlq>.name}}, comparison_operator "
                f"GreaterThanOrEqualToThreshold, threshold 1, and alarm_actions [<sns topic arn>].",
            )
        )
    return findings
