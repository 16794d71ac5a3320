"""Asynchronous failure paths: what an async invocation or a delivery does when it fails.

Lambda invokes asynchronously for EventBridge rules, EventBridge Scheduler, SNS and S3 event
notifications (Lambda Developer Guide, "Asynchronous invocation"; S3 User Guide, "Event
notification destinations": S3 invokes the function asynchronously): after its retries (at
most 2, within at most 6 h) an event that still fails is discarded unless the function has an
on-failure destination (`FunctionEventInvokeConfig`) or a dead-letter queue. EventBridge
rule targets retry for 24 h and 185 attempts by default and then drop the event unless the
target has a DLQ. SNS drops a message it cannot deliver to an SQS or Lambda endpoint after its
delivery retries unless the subscription has a redrive policy (SNS Developer Guide,
"Dead-letter queues").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import ADVISORY, MANDATORY, Finding, stack_rule
from .graph import (
    ALIAS,
    BUCKET_NOTIFICATION,
    EVENT_TARGET,
    FUNCTION,
    INVOKE_CONFIG,
    SCHEDULE,
    SUBSCRIPTION,
    ExternalRef,
    Graph,
    Node,
    parse_json,
)
from .values import is_unknown


def _async_callers(graph: Graph) -> dict[str, list[str]]:
    """Function URN -> who invokes it asynchronously."""
    out: dict[str, list[str]] = {}

    def add(fn: Node | ExternalRef | None, who: str) -> None:
        if isinstance(fn, Node):
            target = fn
            if fn.type == ALIAS:
                resolved = graph.resolve(fn, "functionName", fn.get("functionName"), (FUNCTION,))
                if not isinstance(resolved, Node):
                    return
                target = resolved
            out.setdefault(target.urn, []).append(who)

    for s in graph.of_type(SCHEDULE):
        value = s.get("target", "arn")
        if isinstance(value, str) and not is_unknown(value) and ":lambda:" not in value:
            continue
        add(_function_of(graph, s, "target", value), f"schedule {s.label}")
    for t in graph.of_type(EVENT_TARGET):
        value = t.get("arn")
        if isinstance(value, str) and not is_unknown(value) and ":lambda:" not in value:
            continue
        add(_function_of(graph, t, "arn", value), f"EventBridge target {t.label}")
    for sub in graph.of_type(SUBSCRIPTION):
        if sub.get("protocol") != "lambda":
            continue
        add(
            _function_of(graph, sub, "endpoint", sub.get("endpoint")),
            f"SNS subscription {sub.label}",
        )
    for n in graph.of_type(BUCKET_NOTIFICATION):
        # Every function the `lambdaFunctions` property depends on is one it notifies; a
        # literal ARN names one without a dependency.
        who = f"S3 bucket notification {n.label}"
        for fn in graph.dep_nodes(n, "lambdaFunctions", (FUNCTION, ALIAS)):
            add(fn, who)
        entries = n.get("lambdaFunctions", default=[])
        for entry in entries if isinstance(entries, list) else []:
            value = entry.get("lambdaFunctionArn") if isinstance(entry, dict) else None
            if isinstance(value, str) and not is_unknown(value):
                add(graph.function_for_ref(value), who)
    return out


def _function_of(graph: Graph, node: Node, prop: str, value: Any) -> Node | ExternalRef | None:
    deps = graph.dep_nodes(node, prop, (FUNCTION, ALIAS))
    if isinstance(value, str) and not is_unknown(value):
        fn = graph.function_for_ref(value)
        if fn is not None:
            return fn
    return deps[0] if len(deps) == 1 else None


def _has_failure_path(graph: Graph, fn: Node) -> bool | None:
    target = fn.get("deadLetterConfig", "targetArn")
    if is_unknown(target) or (isinstance(target, str) and target):
        return True
    undecided = False
    for c in graph.of_type(INVOKE_CONFIG):
        configured = graph.resolve_function(c, "functionName")
        if configured is None:
            undecided = True  # unknown in a preview and nothing links it
        if configured is not fn:
            continue
        on_failure = c.get("destinationConfig", "onFailure", "destination")
        if is_unknown(on_failure) or (isinstance(on_failure, str) and on_failure):
            return True
    return None if undecided else False


@stack_rule(
    "lambda-async-has-failure-destination",
    "A function invoked asynchronously (Scheduler, EventBridge rule, SNS, S3 notification) has "
    "an on-failure "
    "destination or a dead-letter queue.",
    MANDATORY,
    "Add an aws.lambda_.FunctionEventInvokeConfig with destination_config.on_failure, or set "
    "dead_letter_config on the function.",
)
def async_has_failure_destination(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for urn, callers in sorted(_async_callers(graph).items()):
        fn = graph.by_urn[urn]
        if _has_failure_path(graph, fn) is not False:
            continue
        findings.append(
            (
                urn,
                f"function {fn.label} is invoked asynchronously by "
                f"{', '.join(sorted(set(callers)))} but has neither an on-failure destination "
                f"nor a dead-letter queue: after Lambda's retries (at most 2, within at most "
                f"6 h) a failing event is discarded. Fix: add an "
                f"aws.lambda_.FunctionEventInvokeConfig for {fn.label} with "
                f"destination_config.on_failure (an SQS queue or SNS topic) and "
                f"maximum_retry_attempts / maximum_event_age_in_seconds, or set "
                f"dead_letter_config on the function.",
            )
        )
    return findings


@stack_rule(
    "eventbridge-target-has-retry-and-dlq",
    "EventBridge rule targets set a retry policy and a dead-letter queue.",
    MANDATORY,
    "Set retry_policy and dead_letter_config on the aws.cloudwatch.EventTarget.",
)
def eventbridge_target_has_retry_and_dlq(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for t in graph.of_type(EVENT_TARGET):
        problems: list[str] = []
        retry = t.get("retryPolicy")
        if retry is None:
            problems.append(
                "sets no retry_policy, so EventBridge retries a failing target for 24 h and "
                "185 attempts"
            )
        dlq = t.get("deadLetterConfig", "arn")
        if dlq is None:
            problems.append("has no dead_letter_config, so an undeliverable event is dropped")
        if problems:
            findings.append(
                (
                    t.urn,
                    f"EventBridge target {t.label} " + "; ".join(problems) + ". Fix: set "
                    "retry_policy {maximum_retry_attempts, maximum_event_age_in_seconds} and "
                    "dead_letter_config {arn: <an SQS queue whose policy lets "
                    "events.amazonaws.com send>}.",
                )
            )
    return findings


@stack_rule(
    "sns-subscription-has-redrive",
    "SNS subscriptions to SQS queues and Lambda functions have a redrive policy (a DLQ).",
    ADVISORY,
    "Set redrive_policy {deadLetterTargetArn: <an SQS queue>} on the subscription.",
)
def sns_subscription_has_redrive(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for sub in graph.of_type(SUBSCRIPTION):
        protocol = sub.get("protocol")
        if protocol not in ("sqs", "lambda"):
            continue
        doc = parse_json(sub.get("redrivePolicy"))
        if is_unknown(doc) or (isinstance(doc, dict) and doc.get("deadLetterTargetArn")):
            continue
        findings.append(
            (
                sub.urn,
                f"SNS subscription {sub.label} ({protocol}) has no redrive policy: a message SNS "
                f"cannot deliver (a deleted endpoint, a refused permission, a throttled "
                f"function) is dropped after the delivery retries. Fix: set redrive_policy "
                f"json {{'deadLetterTargetArn': <sqs queue arn>}} and let sns.amazonaws.com "
                f"send to that queue.",
            )
        )
    return findings
