"""The blind spots of issue 23 item 4, beyond the corpus programs d01-d08: each kind of delivery
a service makes into a queue or topic is checked against the resource policy AND the KMS key,
and every service that invokes Lambda asynchronously needs an on-failure path.

AWS facts (also in the rule modules): SNS, EventBridge and S3 deliver as their service
principals, which the AWS-managed alias/aws/sqs and alias/aws/sns keys never admit (SQS
Developer Guide, "Key management"; SNS Developer Guide, "Encryption at rest"); SNS writes a
subscription's undeliverable messages to its DLQ as sns.amazonaws.com; S3 invokes notification
functions asynchronously.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from idempotent_messaging.rules import async_failures, resource_policies
from idempotent_messaging.rules.graph import (
    BUCKET_NOTIFICATION,
    EVENT_RULE,
    EVENT_TARGET,
    FUNCTION,
    QUEUE,
    QUEUE_POLICY,
    SUBSCRIPTION,
    TOPIC,
    Graph,
    Node,
)
from idempotent_messaging.rules.values import UNKNOWN

pytestmark = pytest.mark.policy

A = "arn:aws:{}:eu-west-1:123456789012:{}"
RULE_ARN = A.format("events", "rule/r")
TOPIC_ARN = A.format("sns", "orders")


def node(type_: str, logical: str, **props: Any) -> Node:
    return Node(f"urn:{type_}::{logical}", type_, logical, props)


def q(name: str, **props: Any) -> Node:
    return node(QUEUE, name, name=name, arn=A.format("sqs", name), url=f"https://q/{name}", **props)


def allow(service: str, action: str, resource: str, source: str | None) -> str:
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": action,
        "Resource": resource,
    }
    if source is not None:
        statement["Condition"] = {"ArnEquals": {"aws:SourceArn": source}}
    return json.dumps({"Statement": [statement]})


def delivery_findings(*nodes: Node) -> dict[str, str]:
    graph = Graph(nodes)
    return {
        graph.by_urn[urn].name: message
        for urn, message in resource_policies.delivery_permission_granted(graph, {})
    }


def eventbridge_target(queue: Node) -> list[Node]:
    rule = node(EVENT_RULE, "r", name="r", arn=RULE_ARN)
    target = node(EVENT_TARGET, "t", rule="r", arn=queue.get("arn"))
    return [rule, target]


def test_eventbridge_cannot_deliver_to_a_queue_under_the_aws_managed_key():
    policy = allow("events.amazonaws.com", "sqs:SendMessage", A.format("sqs", "in"), RULE_ARN)
    queue = q("in", kmsMasterKeyId="alias/aws/sqs", policy=policy)
    found = delivery_findings(queue, *eventbridge_target(queue))
    assert "the AWS-managed alias/aws/sqs key never does" in found["in"]
    # SSE-SQS admits the service: only the policy matters then.
    queue = q("in", sqsManagedSseEnabled=True, policy=policy)
    assert delivery_findings(queue, *eventbridge_target(queue)) == {}


@pytest.mark.parametrize(
    ("policy", "refused"),
    [
        (None, True),
        (allow("sns.amazonaws.com", "sqs:SendMessage", "*", TOPIC_ARN), False),
        (allow("sns.amazonaws.com", "sqs:SendMessage", "*", A.format("sns", "other")), True),
        (allow("events.amazonaws.com", "sqs:SendMessage", "*", None), True),
    ],
)
def test_a_subscription_dlq_must_admit_sns_for_its_topic(policy: str | None, refused: bool):
    dlq = q("sub-dlq")
    holder = node(QUEUE_POLICY, "sub-dlq-policy", queueUrl="https://q/sub-dlq", policy=policy)
    sub = node(
        SUBSCRIPTION,
        "sub",
        topic=TOPIC_ARN,
        protocol="lambda",
        endpoint=A.format("lambda", "function:fn"),
        redrivePolicy=json.dumps({"deadLetterTargetArn": dlq.get("arn")}),
    )
    nodes = [dlq, sub] + ([holder] if policy is not None else [])
    found = delivery_findings(*nodes)
    assert ("sub-dlq" in found) is refused
    if refused:
        assert "subscription 'sub' (DLQ)" in found["sub-dlq"]


def test_a_subscription_dlq_unknown_in_a_preview_is_linked_by_its_dependency():
    dlq = q("sub-dlq")
    sub = node(SUBSCRIPTION, "sub", topic=UNKNOWN, protocol="sqs", endpoint=UNKNOWN)
    sub.props["redrivePolicy"] = UNKNOWN
    sub.prop_deps = {"redrivePolicy": [dlq.urn]}
    assert "sub-dlq" in delivery_findings(dlq, sub)


def test_s3_needs_the_queue_policy_and_a_usable_key_of_every_notified_queue_and_topic():
    bucket = node("aws:s3/bucket:Bucket", "b", bucket="b", arn="arn:aws:s3:::b")
    ok = q("ok", policy=allow("s3.amazonaws.com", "sqs:SendMessage", "*", "arn:aws:s3:::b"))
    other_bucket = q(
        "other", policy=allow("s3.amazonaws.com", "sqs:SendMessage", "*", "arn:aws:s3:::x")
    )
    topic = node(TOPIC, "t", name="t", arn=A.format("sns", "t"), kmsMasterKeyId="alias/aws/sns")
    notification = node(
        BUCKET_NOTIFICATION,
        "n",
        bucket="b",
        queues=[{"queueArn": ok.get("arn")}, {"queueArn": other_bucket.get("arn")}],
        topics=[{"topicArn": topic.get("arn")}],
    )
    notification.prop_deps = {"bucket": [bucket.urn]}
    found = delivery_findings(bucket, ok, other_bucket, topic, notification)
    assert set(found) == {"other", "t"}
    assert "s3.amazonaws.com sqs:SendMessage" in found["other"]
    assert "alias/aws/sns key never does" in found["t"]


def test_s3_invokes_notification_functions_asynchronously():
    fn = node(FUNCTION, "fn", name="fn", arn=A.format("lambda", "function:fn"))
    literal = node(
        BUCKET_NOTIFICATION, "n1", lambdaFunctions=[{"lambdaFunctionArn": fn.get("arn")}]
    )
    assert async_failures.async_callers(Graph([fn, literal])) == {
        fn.urn: ["S3 bucket notification 'n1'"]
    }
    preview = node(BUCKET_NOTIFICATION, "n2", lambdaFunctions=UNKNOWN)
    preview.prop_deps = {"lambdaFunctions": [fn.urn]}
    graph = Graph([fn, preview])
    findings = async_failures.async_has_failure_destination(graph, {})
    assert [urn for urn, _ in findings] == [fn.urn]
    assert "S3 bucket notification 'n2'" in findings[0][1]
