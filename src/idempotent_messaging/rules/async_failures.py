"""Asynchronous failure paths: what an async invocation or a delivery does when it fails.

Which services invoke Lambda asynchronously is AWS's table, not a list of cases we thought of:
`ASYNC_INVOKERS` follows the Lambda Developer Guide, "Invoking Lambda with events from other AWS
services" (every service whose method of invocation is "Event-driven; asynchronous invocation":
S3, SNS, SES, CloudFormation, CloudWatch Logs, EventBridge, CodeCommit, Config, IoT, IoT Events,
CodePipeline), plus CloudWatch alarms (CloudWatch User Guide, "Invoke a Lambda function from an
alarm": "CloudWatch alarms guarantees an asynchronous invocation") and EventBridge Scheduler and
Pipes with `FIRE_AND_FORGET` (EventBridge's schedules and pipes invoke "synchronously or
asynchronously" by their own setting). For an asynchronous invocation Lambda retries a failing
event at most twice, within at most 6 hours, and then discards it unless the function has an
on-failure destination (`FunctionEventInvokeConfig`) or a dead-letter queue (Lambda Developer
Guide, "Asynchronous invocation").

A caller outside the stack is known by the permission that lets it invoke the function: a
`lambda.Permission` whose service principal is one of the asynchronous invokers' (SNS, S3,
EventBridge, CloudWatch Logs, IoT rules, Config, CodeCommit, IoT Events, CloudWatch alarms) says
that service invokes the function, asynchronously, wherever the topic, bucket or rule lives.

EventBridge rule targets retry for 24 h and 185 attempts by default and then drop the event
unless the target has a DLQ (EventBridge User Guide, "Event retry policy and using dead-letter
queues"): the default retry policy is correct, the missing DLQ is not. SNS drops a message it
cannot deliver to ANY endpoint once the delivery policy of its protocol is exhausted, unless the
subscription has a redrive policy (SNS Developer Guide, "Amazon SNS message delivery retries":
"When the delivery policy is exhausted, Amazon SNS stops retrying the delivery and discards the
message, unless a dead-letter queue is attached to the subscription").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ._base import ADVISORY, MANDATORY, Boundary, Finding, stack_rule
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

IOT_RULE = "aws:iot/topicRule:TopicRule"
LOG_SUBSCRIPTION = "aws:cloudwatch/logSubscriptionFilter:LogSubscriptionFilter"
SES_RECEIPT_RULE = "aws:ses/receiptRule:ReceiptRule"
CONFIG_RULE = "aws:cfg/rule:Rule"
CODECOMMIT_TRIGGER = "aws:codecommit/trigger:Trigger"
PIPE = "aws:pipes/pipe:Pipe"
CODEPIPELINE = "aws:codepipeline/pipeline:Pipeline"
METRIC_ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
COMPOSITE_ALARM = "aws:cloudwatch/compositeAlarm:CompositeAlarm"
LAMBDA_PERMISSION = "aws:lambda/permission:Permission"


@dataclass(frozen=True)
class AsyncInvoker:
    """A service that invokes Lambda asynchronously, and how the pack knows it does."""

    service: str  # as AWS's table names it
    # Service principals of a `lambda.Permission` that prove this service invokes the
    # function (empty: the service invokes with a role, or its principal also invokes
    # synchronously, so a permission alone proves nothing).
    principals: tuple[str, ...]
    # What in a stack declares the invocation (documentation: the catalogue prints it).
    declared_by: str


ASYNC_INVOKERS: tuple[AsyncInvoker, ...] = (
    AsyncInvoker("Amazon S3", ("s3.amazonaws.com",), "aws.s3.BucketNotification lambda_functions"),
    AsyncInvoker(
        "Amazon SNS", ("sns.amazonaws.com",), "aws.sns.TopicSubscription protocol 'lambda'"
    ),
    AsyncInvoker(
        "Amazon SES",
        (),  # ses.amazonaws.com also invokes with RequestResponse: the rule says which
        "aws.ses.ReceiptRule lambda_actions with invocation_type 'Event' (the default)",
    ),
    AsyncInvoker("AWS CloudFormation", (), "custom resources (a template's ServiceToken)"),
    AsyncInvoker(
        "Amazon CloudWatch Logs",
        ("logs.amazonaws.com",),  # also the regional form logs.<region>.amazonaws.com
        "aws.cloudwatch.LogSubscriptionFilter destination_arn",
    ),
    AsyncInvoker(
        "Amazon EventBridge (rules)", ("events.amazonaws.com",), "aws.cloudwatch.EventTarget arn"
    ),
    AsyncInvoker("Amazon EventBridge Scheduler", (), "aws.scheduler.Schedule target.arn"),
    AsyncInvoker(
        "Amazon EventBridge Pipes",
        (),
        "aws.pipes.Pipe target with lambda_function_parameters.invocation_type FIRE_AND_FORGET",
    ),
    AsyncInvoker(
        "AWS CodeCommit", ("codecommit.amazonaws.com",), "aws.codecommit.Trigger destination_arn"
    ),
    AsyncInvoker(
        "AWS Config",
        ("config.amazonaws.com",),
        "aws.cfg.Rule source owner CUSTOM_LAMBDA source_identifier",
    ),
    AsyncInvoker(
        "AWS IoT",
        ("iot.amazonaws.com",),  # a rule's ARN only: IoT custom authorizers are synchronous
        "aws.iot.TopicRule lambdas and error_action.lambda",
    ),
    AsyncInvoker(
        "AWS IoT Events", ("iotevents.amazonaws.com",), "a detector model's lambda action"
    ),
    AsyncInvoker(
        "AWS CodePipeline", (), "aws.codepipeline.Pipeline Invoke action of provider Lambda"
    ),
    AsyncInvoker(
        "Amazon CloudWatch alarms",
        ("lambda.alarms.cloudwatch.amazonaws.com",),
        "aws.cloudwatch.MetricAlarm / CompositeAlarm actions",
    ),
)


def async_principal(principal: Any, source_arn: Any) -> str | None:
    """The asynchronous invoker a permission's principal (and source ARN) names, else None."""
    if not isinstance(principal, str) or is_unknown(principal):
        return None
    if principal.startswith("logs.") and principal.endswith(".amazonaws.com"):
        principal = "logs.amazonaws.com"  # the regional form CloudWatch Logs also accepts
    if principal == "iot.amazonaws.com" and not (
        isinstance(source_arn, str) and not is_unknown(source_arn) and ":rule/" in source_arn
    ):
        return None  # an IoT custom authorizer is invoked synchronously; only a rule proves it
    for invoker in ASYNC_INVOKERS:
        if principal in invoker.principals:
            return invoker.service
    return None


def _names_lambda(value: Any) -> bool:
    """A known ARN of Lambda, or a value that may be one (unknown, a bare function name)."""
    if not isinstance(value, str) or is_unknown(value):
        return True
    return not value.startswith("arn:") or ":lambda:" in value


class _Callers:
    """Function URN -> who invokes it asynchronously."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.found: dict[str, list[str]] = {}

    def add(self, fn: Node | ExternalRef | None, who: str) -> None:
        if not isinstance(fn, Node):
            return
        target: Node | ExternalRef | None = fn
        if fn.type == ALIAS:
            target = self.graph.resolve(fn, "functionName", fn.get("functionName"), (FUNCTION,))
        if isinstance(target, Node) and target.type == FUNCTION:
            self.found.setdefault(target.urn, []).append(who)

    def one(self, node: Node, prop: str, value: Any, who: str) -> None:
        """A caller naming one function in `node.prop` (a known ARN, else its dependency)."""
        if not _names_lambda(value):
            return
        deps = self.graph.dep_nodes(node, prop, (FUNCTION, ALIAS))
        if isinstance(value, str) and value and not is_unknown(value):
            fn = self.graph.function_for_ref(value)
            if fn is not None:
                self.add(fn, who)
                return
        if len(deps) == 1:
            self.add(deps[0], who)

    def many(
        self, node: Node, prop: str, values: Iterable[Any], who: str, by_dependency: bool = True
    ) -> None:
        """A caller naming functions in a list under `node.prop`: every known value, and every
        function `prop` depends on (the values unknown in a preview) when `by_dependency`."""
        for value in values:
            if isinstance(value, str) and value and not is_unknown(value) and _names_lambda(value):
                self.add(self.graph.function_for_ref(value), who)
        if by_dependency:
            for fn in self.graph.dep_nodes(node, prop, (FUNCTION, ALIAS)):
                self.add(fn, who)


def _entries(node: Node, prop: str) -> list[dict[str, Any]]:
    value = node.get(prop, default=[])
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def async_callers(graph: Graph) -> dict[str, list[str]]:
    """Function URN -> who invokes it asynchronously (`ASYNC_INVOKERS`)."""
    callers = _Callers(graph)
    for s in graph.of_type(SCHEDULE):
        callers.one(s, "target", s.get("target", "arn"), f"schedule {s.label}")
    for t in graph.of_type(EVENT_TARGET):
        callers.one(t, "arn", t.get("arn"), f"EventBridge target {t.label}")
    for sub in graph.of_type(SUBSCRIPTION):
        if sub.get("protocol") == "lambda":
            callers.one(sub, "endpoint", sub.get("endpoint"), f"SNS subscription {sub.label}")
    for n in graph.of_type(BUCKET_NOTIFICATION):
        arns = [e.get("lambdaFunctionArn") for e in _entries(n, "lambdaFunctions")]
        callers.many(n, "lambdaFunctions", arns, f"S3 bucket notification {n.label}")
    for r in graph.of_type(IOT_RULE):
        who = f"IoT topic rule {r.label}"
        callers.many(r, "lambdas", [e.get("functionArn") for e in _entries(r, "lambdas")], who)
        error = r.get("errorAction", "lambda", "functionArn")
        if error is not None:
            callers.one(r, "errorAction", error, f"{who} (error action)")
    for f in graph.of_type(LOG_SUBSCRIPTION):
        value = f.get("destinationArn")
        callers.one(f, "destinationArn", value, f"CloudWatch Logs subscription filter {f.label}")
    for rr in graph.of_type(SES_RECEIPT_RULE):
        actions = _entries(rr, "lambdaActions")
        # SES invokes with the action's invocation type: Event (the default) is asynchronous,
        # RequestResponse synchronous (SES Developer Guide, "Invoke Lambda function action").
        kinds = [a.get("invocationType", "Event") for a in actions]
        events = [a for a, k in zip(actions, kinds, strict=True) if k == "Event"]
        callers.many(
            rr,
            "lambdaActions",
            [a.get("functionArn") for a in events],
            f"SES receipt rule {rr.label}",
            by_dependency=bool(actions) and len(events) == len(actions),
        )
    for c in graph.of_type(CONFIG_RULE):
        if c.get("source", "owner") == "CUSTOM_LAMBDA":
            value = c.get("source", "sourceIdentifier")
            callers.one(c, "source", value, f"AWS Config rule {c.label}")
    for t in graph.of_type(CODECOMMIT_TRIGGER):
        arns = [e.get("destinationArn") for e in _entries(t, "triggers")]
        callers.many(
            t,
            "triggers",
            [a for a in arns if not isinstance(a, str) or is_unknown(a) or ":lambda:" in a],
            f"CodeCommit trigger {t.label}",
        )
    for p in graph.of_type(PIPE):
        kind = p.get("targetParameters", "lambdaFunctionParameters", "invocationType")
        if kind == "FIRE_AND_FORGET":
            callers.one(p, "target", p.get("target"), f"EventBridge pipe {p.label}")
    for pl in graph.of_type(CODEPIPELINE):
        names = [
            action.get("configuration", {}).get("FunctionName")
            for stage in _entries(pl, "stages")
            for action in (stage.get("actions") or [])
            if isinstance(action, dict)
            and action.get("category") == "Invoke"
            and action.get("provider") == "Lambda"
            and isinstance(action.get("configuration"), dict)
        ]
        if names:
            callers.many(pl, "stages", names, f"CodePipeline {pl.label}")
    for a in graph.of_type(METRIC_ALARM, COMPOSITE_ALARM):
        for prop in ("alarmActions", "okActions", "insufficientDataActions"):
            actions = a.get(prop, default=[])
            values = actions if isinstance(actions, list) else []
            lambdas = [v for v in values if isinstance(v, str) and ":lambda:" in v]
            callers.many(a, prop, lambdas, f"CloudWatch alarm {a.label}")
    for perm in graph.of_type(LAMBDA_PERMISSION):
        service = async_principal(perm.get("principal"), perm.get("sourceArn"))
        if service is None:
            continue
        fn = graph.resolve_function(perm, "function")
        callers.add(
            fn,
            f"{service} (lambda.Permission {perm.label} lets {perm.get('principal')} invoke it)",
        )
    return callers.found


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


def _invokers_sentence() -> str:
    return ", ".join(i.service for i in ASYNC_INVOKERS)


@stack_rule(
    "lambda-async-has-failure-destination",
    "A function invoked asynchronously (by any service AWS lists as an asynchronous invoker, or "
    "reached through a lambda.Permission of one) has an on-failure destination or a "
    "dead-letter queue.",
    MANDATORY,
    "Add an aws.lambda_.FunctionEventInvokeConfig with destination_config.on_failure, or set "
    "dead_letter_config on the function.",
    enforces="Lambda discards an asynchronous event after its retries (at most 2, within at most "
    "6 h) unless the function has an on-failure destination or a DLQ (Lambda Developer Guide, "
    "'Asynchronous invocation'); the asynchronous invokers are those of the guide's table "
    f"'Invoking Lambda with events from other AWS services': {_invokers_sentence()}.",
    defaults="No destination and no DLQ unless set: Lambda's default is to discard the event "
    "after 2 retries.",
    boundaries=(
        Boundary(
            "An SES receipt rule action with invocation_type RequestResponse (synchronous), and a "
            "lambda.Permission for ses.amazonaws.com alone, since SES also invokes synchronously.",
            "test_async_rule_ignores_synchronous_ses_actions_and_ses_permissions",
        ),
        Boundary(
            "An iot.amazonaws.com permission whose source ARN is not a topic rule's (IoT custom "
            "authorizers are invoked synchronously).",
            "test_async_rule_ignores_an_iot_permission_of_a_custom_authorizer",
        ),
        Boundary(
            "Functions invoked synchronously (API Gateway, ALB, Cognito, Step Functions, "
            "Firehose, an EventBridge pipe with REQUEST_RESPONSE) and by event source mappings "
            "(SQS, streams): their caller owns the retries.",
            "test_async_rule_ignores_synchronous_callers_and_event_source_mappings",
        ),
        Boundary(
            "A function outside the stack: its destinations are set where it is declared.",
            "test_async_rule_judges_only_functions_of_the_stack",
        ),
    ),
)
def async_has_failure_destination(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for urn, callers in sorted(async_callers(graph).items()):
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
    "EventBridge rule targets have a dead-letter queue for the events EventBridge cannot "
    "deliver; the retry policy may stay EventBridge's default (185 attempts over 24 h).",
    MANDATORY,
    "Set dead_letter_config {arn: <an SQS queue>} on the aws.cloudwatch.EventTarget (a "
    "retry_policy is optional: without one EventBridge retries for 24 h and 185 attempts).",
    enforces="EventBridge drops an event it could not deliver to a target once the target's "
    "retry policy is exhausted, unless the target has a dead-letter queue (EventBridge User "
    "Guide, 'Event retry policy and using dead-letter queues').",
    defaults="No retry_policy: EventBridge retries for 24 hours and up to 185 times (the "
    "default retry policy), which is correct and never a finding; no dead_letter_config: no "
    "DLQ.",
    boundaries=(
        Boundary(
            "A target with a DLQ and no explicit retry policy (EventBridge's default retry "
            "policy applies).",
            "test_eventbridge_target_with_a_dlq_and_the_default_retry_policy_passes",
        ),
        Boundary(
            "What the target does with an event it accepted (a Lambda target's own failures are "
            "lambda-async-has-failure-destination's).",
            "test_eventbridge_target_dlq_does_not_cover_the_functions_own_failures",
        ),
    ),
)
def eventbridge_target_has_retry_and_dlq(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for t in graph.of_type(EVENT_TARGET):
        if t.get("deadLetterConfig", "arn") is not None:
            continue
        retry = t.get("retryPolicy")
        retries = (
            "its retry_policy"
            if retry is not None
            else "EventBridge's default retry policy (185 attempts over 24 h)"
        )
        findings.append(
            (
                t.urn,
                f"EventBridge target {t.label} has no dead_letter_config, so an event "
                f"EventBridge cannot deliver is dropped once {retries} is exhausted. Fix: set "
                f"dead_letter_config {{arn: <an SQS queue whose policy lets "
                f"events.amazonaws.com send>}} (a retry_policy is optional).",
            )
        )
    return findings


@stack_rule(
    "sns-subscription-has-redrive",
    "SNS subscriptions of every protocol (sqs, lambda, http/https, email, sms, application, "
    "firehose) have a redrive policy (a DLQ).",
    ADVISORY,
    "Set redrive_policy {deadLetterTargetArn: <an SQS queue>} on the subscription.",
    enforces="SNS discards a message once the delivery policy of the subscription's protocol is "
    "exhausted unless a dead-letter queue is attached to the subscription (SNS Developer Guide, "
    "'Amazon SNS message delivery retries' and 'Amazon SNS dead-letter queues').",
    defaults="No redrive_policy: no DLQ, the message is discarded after the protocol's delivery "
    "retries.",
    boundaries=(
        Boundary(
            "A subscription whose redrive policy is unknown in a preview (computed from the DLQ's "
            "ARN).",
            "test_sns_redrive_rule_skips_a_redrive_policy_unknown_in_a_preview",
        ),
    ),
)
def sns_subscription_has_redrive(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for sub in graph.of_type(SUBSCRIPTION):
        protocol = sub.get("protocol")
        if is_unknown(protocol):
            protocol = "protocol unknown in this preview"
        doc = parse_json(sub.get("redrivePolicy"))
        if is_unknown(doc) or (isinstance(doc, dict) and doc.get("deadLetterTargetArn")):
            continue
        findings.append(
            (
                sub.urn,
                f"SNS subscription {sub.label} ({protocol}) has no redrive policy: a message SNS "
                f"cannot deliver (a deleted or failing endpoint, a refused permission, a "
                f"throttled function) is discarded once the delivery policy of its protocol is "
                f"exhausted. Fix: set redrive_policy json {{'deadLetterTargetArn': <sqs queue "
                f"arn>}} and let sns.amazonaws.com send to that queue.",
            )
        )
    return findings
