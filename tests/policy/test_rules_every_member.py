"""Each rule is AWS's rule, not a list of cases: one test per member of each class.

- every asynchronous invoker of the Lambda Developer Guide's table ("Invoking Lambda with events
  from other AWS services": the services whose method is "Event-driven; asynchronous
  invocation"), declared in the stack or known by the service principal of a lambda.Permission;
- every setting Lambda refuses on an SQS event source mapping, derived here from botocore's
  model of CreateEventSourceMapping (the "valid for" scope each parameter's documentation opens
  with) rather than from a list of our own;
- every SNS subscription protocol (SNS Developer Guide, "Amazon SNS message delivery retries":
  any protocol's message is discarded once its delivery policy is exhausted, without a DLQ);
- every way a DLQ's redrive-allow policy refuses a source (SQS API reference,
  SetQueueAttributes, RedriveAllowPolicy).

The graphs are built directly; the corpus (tests/policy/corpus/f0*) runs programs of each class
through the offline engine in both modes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import botocore.session
import pytest

from idempotent_messaging.offline import typed
from idempotent_messaging.offline.answers import AnswersError, load_answers
from idempotent_messaging.rules import async_failures, mappings
from idempotent_messaging.rules.graph import ESM, FUNCTION, QUEUE, SUBSCRIPTION, Graph, Node
from idempotent_messaging.rules.pack import RULES
from idempotent_messaging.rules.values import UNKNOWN

pytestmark = pytest.mark.policy

BY_NAME = {r.name: r for r in RULES}
REGION, ACCOUNT = "eu-west-1", "123456789012"


def arn(service: str, resource: str) -> str:
    return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{resource}"


def node(type_: str, logical: str, deps: dict[str, list[str]] | None = None, **props: Any) -> Node:
    return Node(f"urn:pulumi:dev::p::{type_}::{logical}", type_, logical, props, deps or {})


def function(name: str = "handler", **props: Any) -> Node:
    return node(FUNCTION, name, name=name, arn=arn("lambda", f"function:{name}"), **props)


def flagged(rule: str, *nodes: Node) -> set[str]:
    graph = Graph(nodes)
    return {graph.by_urn[urn].name for urn, _ in BY_NAME[rule](graph, {})}


# --- every asynchronous invoker ----------------------------------------------------------------

FN = function()
FN_ARN = FN.get("arn")


def _dep(prop: str) -> dict[str, list[str]]:
    return {prop: [FN.urn]}


# (member, the caller as the stack declares it, with a known ARN, and with the ARN unknown in a
# preview, linked by its property dependency).
CALLERS: list[tuple[str, Node, Node]] = [
    (
        "S3 bucket notification",
        node(
            "aws:s3/bucketNotification:BucketNotification",
            "n",
            lambdaFunctions=[{"lambdaFunctionArn": FN_ARN}],
        ),
        node(
            "aws:s3/bucketNotification:BucketNotification",
            "n",
            _dep("lambdaFunctions"),
            lambdaFunctions=[{"lambdaFunctionArn": UNKNOWN}],
        ),
    ),
    (
        "SNS subscription",
        node(SUBSCRIPTION, "s", protocol="lambda", endpoint=FN_ARN),
        node(SUBSCRIPTION, "s", _dep("endpoint"), protocol="lambda", endpoint=UNKNOWN),
    ),
    (
        "SES receipt rule (Event, the default)",
        node(
            "aws:ses/receiptRule:ReceiptRule",
            "r",
            lambdaActions=[{"functionArn": FN_ARN, "position": 1}],
        ),
        node(
            "aws:ses/receiptRule:ReceiptRule",
            "r",
            _dep("lambdaActions"),
            lambdaActions=[{"functionArn": UNKNOWN, "position": 1}],
        ),
    ),
    (
        "CloudWatch Logs subscription filter",
        node(
            "aws:cloudwatch/logSubscriptionFilter:LogSubscriptionFilter", "f", destinationArn=FN_ARN
        ),
        node(
            "aws:cloudwatch/logSubscriptionFilter:LogSubscriptionFilter",
            "f",
            _dep("destinationArn"),
            destinationArn=UNKNOWN,
        ),
    ),
    (
        "EventBridge rule target",
        node("aws:cloudwatch/eventTarget:EventTarget", "t", arn=FN_ARN),
        node("aws:cloudwatch/eventTarget:EventTarget", "t", _dep("arn"), arn=UNKNOWN),
    ),
    (
        "EventBridge Scheduler schedule",
        node("aws:scheduler/schedule:Schedule", "sc", target={"arn": FN_ARN}),
        node("aws:scheduler/schedule:Schedule", "sc", _dep("target"), target={"arn": UNKNOWN}),
    ),
    (
        "EventBridge pipe (FIRE_AND_FORGET)",
        node(
            "aws:pipes/pipe:Pipe",
            "p",
            target=FN_ARN,
            targetParameters={"lambdaFunctionParameters": {"invocationType": "FIRE_AND_FORGET"}},
        ),
        node(
            "aws:pipes/pipe:Pipe",
            "p",
            _dep("target"),
            target=UNKNOWN,
            targetParameters={"lambdaFunctionParameters": {"invocationType": "FIRE_AND_FORGET"}},
        ),
    ),
    (
        "CodeCommit trigger",
        node(
            "aws:codecommit/trigger:Trigger",
            "c",
            triggers=[{"destinationArn": FN_ARN, "events": ["all"]}],
        ),
        node(
            "aws:codecommit/trigger:Trigger",
            "c",
            _dep("triggers"),
            triggers=[{"destinationArn": UNKNOWN, "events": ["all"]}],
        ),
    ),
    (
        "AWS Config custom rule",
        node(
            "aws:cfg/rule:Rule",
            "cfg",
            source={"owner": "CUSTOM_LAMBDA", "sourceIdentifier": FN_ARN},
        ),
        node(
            "aws:cfg/rule:Rule",
            "cfg",
            _dep("source"),
            source={"owner": "CUSTOM_LAMBDA", "sourceIdentifier": UNKNOWN},
        ),
    ),
    (
        "IoT topic rule action",
        node("aws:iot/topicRule:TopicRule", "i", lambdas=[{"functionArn": FN_ARN}]),
        node(
            "aws:iot/topicRule:TopicRule", "i", _dep("lambdas"), lambdas=[{"functionArn": UNKNOWN}]
        ),
    ),
    (
        "IoT topic rule error action",
        node("aws:iot/topicRule:TopicRule", "i", errorAction={"lambda": {"functionArn": FN_ARN}}),
        node(
            "aws:iot/topicRule:TopicRule",
            "i",
            _dep("errorAction"),
            errorAction={"lambda": {"functionArn": UNKNOWN}},
        ),
    ),
    (
        "CodePipeline Lambda invoke action",
        node(
            "aws:codepipeline/pipeline:Pipeline",
            "pl",
            stages=[
                {
                    "name": "Deploy",
                    "actions": [
                        {
                            "category": "Invoke",
                            "provider": "Lambda",
                            "configuration": {"FunctionName": "handler"},
                        }
                    ],
                }
            ],
        ),
        node(
            "aws:codepipeline/pipeline:Pipeline",
            "pl",
            _dep("stages"),
            stages=[
                {
                    "name": "Deploy",
                    "actions": [
                        {
                            "category": "Invoke",
                            "provider": "Lambda",
                            "configuration": {"FunctionName": UNKNOWN},
                        }
                    ],
                }
            ],
        ),
    ),
    (
        "CloudWatch metric alarm action",
        node("aws:cloudwatch/metricAlarm:MetricAlarm", "a", alarmActions=[FN_ARN]),
        node(
            "aws:cloudwatch/metricAlarm:MetricAlarm",
            "a",
            _dep("alarmActions"),
            alarmActions=[UNKNOWN],
        ),
    ),
    (
        "CloudWatch composite alarm OK action",
        node("aws:cloudwatch/compositeAlarm:CompositeAlarm", "ca", okActions=[FN_ARN]),
        node(
            "aws:cloudwatch/compositeAlarm:CompositeAlarm",
            "ca",
            _dep("okActions"),
            okActions=[UNKNOWN],
        ),
    ),
]


@pytest.mark.parametrize(("member", "known", "preview"), CALLERS, ids=[c[0] for c in CALLERS])
def test_every_asynchronous_invoker_needs_an_on_failure_path(
    member: str, known: Node, preview: Node
):
    rule = "lambda-async-has-failure-destination"
    for caller in (known, preview):
        assert flagged(rule, FN, caller) == {"handler"}, member
        with_dlq = function(deadLetterConfig={"targetArn": arn("sqs", "async-dlq")})
        assert flagged(rule, with_dlq, caller) == set(), member
    message = BY_NAME[rule](Graph([FN, known]), {})[0][1]
    assert known.label in message


# Every service principal that proves an asynchronous caller outside the stack.
PRINCIPALS = [
    ("s3.amazonaws.com", None),
    ("sns.amazonaws.com", None),
    ("events.amazonaws.com", arn("events", "rule/nightly")),
    ("logs.amazonaws.com", None),
    (f"logs.{REGION}.amazonaws.com", None),
    ("codecommit.amazonaws.com", None),
    ("config.amazonaws.com", None),
    ("iot.amazonaws.com", arn("iot", "rule/telemetry")),
    ("iotevents.amazonaws.com", None),
    ("lambda.alarms.cloudwatch.amazonaws.com", arn("cloudwatch", "alarm:high")),
]


@pytest.mark.parametrize(("principal", "source"), PRINCIPALS, ids=[p for p, _ in PRINCIPALS])
def test_a_permission_for_an_asynchronous_invoker_proves_a_caller_outside_the_stack(
    principal: str, source: str | None
):
    extra: dict[str, Any] = {"sourceArn": source} if source else {}
    perm = node(
        "aws:lambda/permission:Permission", "perm", function="handler", principal=principal, **extra
    )
    findings = BY_NAME["lambda-async-has-failure-destination"](Graph([FN, perm]), {})
    assert [urn for urn, _ in findings] == [FN.urn]
    assert principal in findings[0][1]


def test_the_invoker_table_names_every_asynchronous_service_of_the_lambda_guide():
    # The services the Lambda Developer Guide lists with "Event-driven; asynchronous
    # invocation", plus CloudWatch alarms (CloudWatch User Guide) and EventBridge's schedules
    # and pipes: each is one entry, and each principal maps back to its service.
    services = {i.service for i in async_failures.ASYNC_INVOKERS}
    for expected in (
        "Amazon S3",
        "Amazon SNS",
        "Amazon SES",
        "AWS CloudFormation",
        "Amazon CloudWatch Logs",
        "Amazon EventBridge (rules)",
        "AWS CodeCommit",
        "AWS Config",
        "AWS IoT",
        "AWS IoT Events",
        "AWS CodePipeline",
    ):
        assert expected in services
    for invoker in async_failures.ASYNC_INVOKERS:
        for principal in invoker.principals:
            source = arn("iot", "rule/r") if principal.startswith("iot.") else None
            assert async_failures.async_principal(principal, source) == invoker.service
    # Synchronous and role-based callers prove nothing.
    for principal in (
        "apigateway.amazonaws.com",
        "elasticloadbalancing.amazonaws.com",
        "ses.amazonaws.com",
        "secretsmanager.amazonaws.com",
    ):
        assert async_failures.async_principal(principal, None) is None


# --- every setting Lambda refuses on an SQS mapping ------------------------------------------


def _valid_for() -> dict[str, str]:
    """CreateEventSourceMapping parameter -> the sources its documentation opens with, e.g.
    "(Kinesis and DynamoDB Streams only)", from botocore's model of the Lambda API."""
    model = botocore.session.get_session().get_service_model("lambda")
    members = model.operation_model("CreateEventSourceMapping").input_shape.members
    out = {}
    for name, shape in members.items():
        text = re.sub(r"<[^>]+>", "", shape.documentation or "").strip()
        scope = re.match(r"^\(([^)]*)\)", text)
        if scope:
            out[name] = scope.group(1)
    return out


def _wire(name: str) -> str:
    """A CreateEventSourceMapping parameter as pulumi-aws names it on the wire."""
    special = {"DocumentDBEventSourceConfig": "documentDbEventSourceConfig"}
    return special.get(name, name[0].lower() + name[1:])


def test_the_refused_settings_are_every_parameter_botocore_scopes_to_other_sources():
    scoped = _valid_for()
    assert "ScalingConfig" in scoped and "SQS" in scoped["ScalingConfig"]  # the model is read
    not_sqs = {_wire(n) for n, scope in scoped.items() if "SQS" not in scope}
    pulumi_inputs = typed.input_names(ESM)
    refused = set(mappings.SQS_REFUSED_SETTINGS)
    # Every parameter AWS scopes to other sources that pulumi-aws exposes is refused ...
    assert not_sqs & pulumi_inputs <= refused, (not_sqs & pulumi_inputs) - refused
    # ... and every refused setting is one AWS scopes away from SQS, or a source's own
    # (stream position, Kafka topics, source configs), which botocore documents without a
    # scope prefix.
    unscoped = refused - not_sqs
    assert unscoped == {
        "startingPosition",
        "startingPositionTimestamp",
        "topics",
        "selfManagedEventSource",
        "selfManagedKafkaEventSourceConfig",
        "amazonManagedKafkaEventSourceConfig",
        "documentDbEventSourceConfig",
    }
    assert refused <= pulumi_inputs
    model = botocore.session.get_session().get_service_model("lambda")
    members = model.operation_model("CreateEventSourceMapping").input_shape.members
    assert "stream" in members["StartingPosition"].documentation.lower()


SETTINGS: list[tuple[str, dict[str, Any]]] = [
    ("startingPosition", {"startingPosition": "LATEST"}),
    ("startingPositionTimestamp", {"startingPositionTimestamp": "2024-01-01T00:00:00Z"}),
    (
        "destinationConfig (on failure)",
        {"destinationConfig": {"onFailure": {"destinationArn": arn("sqs", "f")}}},
    ),
    (
        "destinationConfig (on success, unknown)",
        {"destinationConfig": {"onSuccess": {"destinationArn": UNKNOWN}}},
    ),
    ("parallelizationFactor", {"parallelizationFactor": 2}),
    ("bisectBatchOnFunctionError", {"bisectBatchOnFunctionError": True}),
    ("maximumRetryAttempts", {"maximumRetryAttempts": 3}),
    ("maximumRetryAttempts -1", {"maximumRetryAttempts": -1}),
    ("maximumRecordAgeInSeconds", {"maximumRecordAgeInSeconds": 3600}),
    ("tumblingWindowInSeconds", {"tumblingWindowInSeconds": 60}),
    ("topics", {"topics": ["orders"]}),
    ("queues", {"queues": ["orders"]}),
    (
        "selfManagedEventSource",
        {"selfManagedEventSource": {"endpoints": {"KAFKA_BOOTSTRAP_SERVERS": "b:9092"}}},
    ),
    (
        "selfManagedKafkaEventSourceConfig",
        {"selfManagedKafkaEventSourceConfig": {"consumerGroupId": "g"}},
    ),
    (
        "amazonManagedKafkaEventSourceConfig",
        {"amazonManagedKafkaEventSourceConfig": {"consumerGroupId": "g"}},
    ),
    ("documentDbEventSourceConfig", {"documentDbEventSourceConfig": {"databaseName": "d"}}),
    ("maximumConcurrency 1", {"scalingConfig": {"maximumConcurrency": 1}}),
    ("maximumConcurrency 1001", {"scalingConfig": {"maximumConcurrency": 1001}}),
    ("batching window 301 s", {"maximumBatchingWindowInSeconds": 301}),
    ("batch size 11 without a window", {"batchSize": 11}),
]


@pytest.mark.parametrize(("member", "props"), SETTINGS, ids=[s[0] for s in SETTINGS])
def test_every_setting_lambda_refuses_on_an_sqs_mapping_is_mandatory(
    member: str, props: dict[str, Any]
):
    rule = "sqs-esm-config-valid"
    queue_arn = arn("sqs", "orders")
    bad = node(ESM, "bad", eventSourceArn=queue_arn, functionName=FN_ARN, **props)
    assert flagged(rule, FN, bad) == {"bad"}, member
    fine = node(
        ESM,
        "fine",
        eventSourceArn=queue_arn,
        functionName=FN_ARN,
        batchSize=100,
        maximumBatchingWindowInSeconds=5,
        scalingConfig={"maximumConcurrency": 2},
    )
    assert flagged(rule, FN, fine) == set()


# --- every SNS protocol -----------------------------------------------------------------------

PROTOCOLS = [
    "sqs",
    "lambda",
    "http",
    "https",
    "email",
    "email-json",
    "sms",
    "application",
    "firehose",
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_subscription_of_every_protocol_without_a_redrive_policy_is_reported(protocol: str):
    rule = "sns-subscription-has-redrive"
    bare = node(SUBSCRIPTION, "bare", protocol=protocol, endpoint="x")
    dlq = json.dumps({"deadLetterTargetArn": arn("sqs", "sub-dlq")})
    kept = node(SUBSCRIPTION, "kept", protocol=protocol, endpoint="x", redrivePolicy=dlq)
    findings = BY_NAME[rule](Graph([bare, kept]), {})
    assert [urn for urn, _ in findings] == [bare.urn]
    assert f"({protocol})" in findings[0][1]
    assert BY_NAME[rule].level == "advisory"


# --- every way a redrive-allow policy refuses a source ---------------------------------------


def _queue(name: str, **props: Any) -> Node:
    url = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
    return node(QUEUE, name, name=name, arn=arn("sqs", name), url=url, id=url, **props)


def _allow(permission: str, *sources: str) -> str:
    doc: dict[str, Any] = {"redrivePermission": permission}
    if sources:
        doc["sourceQueueArns"] = list(sources)
    return json.dumps(doc)


ALLOWS = [
    ("no policy (allowAll, the default)", None, set()),
    ("allowAll", _allow("allowAll"), set()),
    ("denyAll", _allow("denyAll"), {"orders"}),
    ("byQueue naming the source", _allow("byQueue", arn("sqs", "orders")), set()),
    ("byQueue naming another queue", _allow("byQueue", arn("sqs", "payments")), {"orders"}),
    ("byQueue naming no queue", _allow("byQueue"), {"orders"}),
    (
        "byQueue naming the source in another region",
        _allow("byQueue", "arn:aws:sqs:us-east-1:123456789012:orders"),
        {"orders"},
    ),
]


@pytest.mark.parametrize(("member", "policy", "expected"), ALLOWS, ids=[a[0] for a in ALLOWS])
def test_a_redrive_allow_policy_that_excludes_the_source_is_mandatory(
    member: str, policy: str | None, expected: set[str]
):
    rule = "sqs-dlq-allows-redrive-from-source"
    assert BY_NAME[rule].level == "mandatory"
    inline = {"redriveAllowPolicy": policy} if policy else {}
    dlq = _queue("dlq", **inline)
    source = _queue(
        "orders",
        redrivePolicy=json.dumps({"deadLetterTargetArn": dlq.get("arn"), "maxReceiveCount": 5}),
    )
    assert flagged(rule, dlq, source) == expected, member
    # The same policy held by a separate aws.sqs.RedriveAllowPolicy resource.
    if policy:
        holder = node(
            "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy",
            "dlq-allow",
            queueUrl=dlq.get("url"),
            redriveAllowPolicy=policy,
        )
        assert flagged(rule, _queue("dlq"), source, holder) == expected, member


def test_a_source_outside_the_stack_is_judged_by_its_arn_in_the_allow_list():
    rule = "sqs-dlq-allows-redrive-from-source"
    dlq = _queue("dlq", redriveAllowPolicy=_allow("byQueue", arn("sqs", "orders")))
    policy = json.dumps({"deadLetterTargetArn": dlq.get("arn"), "maxReceiveCount": 5})
    listed = node(
        "aws:sqs/redrivePolicy:RedrivePolicy",
        "listed",
        queueUrl=f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/orders",
        redrivePolicy=policy,
    )
    other = node(
        "aws:sqs/redrivePolicy:RedrivePolicy",
        "other",
        queueUrl=f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/payments",
        redrivePolicy=policy,
    )
    assert flagged(rule, dlq, listed, other) == {"other"}


# --- another stack's values are pinned by the answers file only --------------------------------


def test_the_answers_file_pins_stack_reference_outputs_and_refuses_a_malformed_entry(tmp_path):
    good = tmp_path / "answers.yaml"
    good.write_text("stack_references:\n  acme/shared/prod:\n    visibility: 60\n")
    answers = load_answers(good)
    assert answers.stack_outputs("acme/shared/prod") == {"visibility": 60}
    assert answers.stack_outputs("acme/other/prod") is None
    bad = tmp_path / "bad.yaml"
    bad.write_text("stack_references:\n  acme/shared/prod: 60\n")
    with pytest.raises(AnswersError, match="stack_references"):
        load_answers(bad)
    typo = tmp_path / "typo.yaml"
    typo.write_text("stack_reference:\n  acme/shared/prod: {}\n")
    with pytest.raises(AnswersError, match="unknown key"):
        load_answers(typo)
