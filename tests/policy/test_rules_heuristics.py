"""Every name and shape heuristic of the rules, one test each (docs/policy.md, "Heuristics").

A heuristic may only decide on the evidence the table names; names and shapes that business
resources share (a queue called `dlq-...`, a `*dedupe*` table keyed by `id`) are no evidence.
The tests build small resource graphs directly (the rules are pure functions over the graph),
so each one states exactly the evidence it gives the rule.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from idempotent_messaging.rules import (
    async_failures,
    queues,
    resource_policies,
    security,
    tables,
)
from idempotent_messaging.rules._documents import condition_limits_who
from idempotent_messaging.rules._kms import service_may_use_key
from idempotent_messaging.rules.graph import (
    ALARM,
    ESM,
    FUNCTION,
    QUEUE,
    TABLE,
    TOPIC,
    Graph,
    Node,
    sqs_by_shape,
)
from idempotent_messaging.rules.values import UNKNOWN

pytestmark = pytest.mark.policy

ACCOUNT = "123456789012"
REGION = "eu-west-1"


def arn(service: str, name: str) -> str:
    if service == "lambda":
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
    return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{name}"


def queue(name: str, **props: Any) -> Node:
    return Node(f"urn:q:{name}", QUEUE, name, {"name": name, "arn": arn("sqs", name), **props})


def function(name: str, **props: Any) -> Node:
    return Node(
        f"urn:f:{name}", FUNCTION, name, {"name": name, "arn": arn("lambda", name), **props}
    )


def mapping(name: str, source: Node, fn: Node, **props: Any) -> Node:
    return Node(
        f"urn:m:{name}",
        ESM,
        name,
        {"eventSourceArn": source.get("arn"), "functionName": fn.get("arn"), **props},
    )


def table(logical: str, **props: Any) -> Node:
    return Node(f"urn:t:{logical}", TABLE, logical, {"name": logical, **props})


def names(findings: list[tuple[str, str]], graph: Graph) -> set[str]:
    return {graph.by_urn[urn].name for urn, _ in findings}


# --- "this queue is a DLQ" --------------------------------------------------------------------


def test_a_consumed_queue_is_a_dlq_only_on_evidence_never_by_its_name():
    fn = function("router")
    named = queue("dlq-alerts-inbox")
    allowed = queue(
        "replayed",
        redriveAllowPolicy=json.dumps(
            {"redrivePermission": "byQueue", "sourceQueueArns": [arn("sqs", "elsewhere")]}
        ),
    )
    target = queue("orders-dlq")
    source = queue(
        "orders",
        redrivePolicy=json.dumps({"deadLetterTargetArn": target.get("arn"), "maxReceiveCount": 5}),
    )
    nodes = [fn, named, allowed, target, source]
    nodes += [mapping(f"esm-{q.name}", q, fn) for q in (named, allowed, target)]
    graph = Graph(nodes)
    # Evidence: a redrive targets `orders-dlq`, a redrive-allow policy declares `replayed`.
    assert graph.declared_dlqs == {target.urn, allowed.urn}
    assert names(queues.lambda_source_has_dlq(graph, {}), graph) == {"dlq-alerts-inbox"}


def test_an_eventbridge_target_dead_letter_config_makes_a_dlq():
    dlq = queue("target-dlq")
    target = Node(
        "urn:et:t",
        async_failures.EVENT_TARGET,
        "t",
        {"arn": arn("sqs", "inbox"), "deadLetterConfig": {"arn": dlq.get("arn")}},
    )
    graph = Graph([dlq, queue("inbox"), target])
    assert graph.other_dlq_users == {dlq.urn: ["EventBridge target 't'"]}
    assert names(queues.dlq_has_alarm(graph, {}), graph) == {"target-dlq"}


# --- idempotency tables -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table_props", "env", "is_idempotency"),
    [
        # Positive evidence.
        ({"tags": {"idempotent-messaging:role": "idempotency-state"}}, {}, True),
        ({"tags": {"purpose": "deduplication"}}, {}, True),
        ({}, {"IDEMPOTENCY_TABLE": "t"}, True),
        ({}, {"POWERTOOLS_IDEMPOTENCY_TABLE": "t"}, True),
        ({}, {"ORDERS_IDEMPOTENCY_TABLE_NAME": "t"}, True),
        ({}, {"IDEM_TABLE": "t"}, True),
        ({"name": "checkout-idempotency"}, {}, True),
        # No evidence: words and shapes that business tables share.
        ({"name": "pricing-dedupe-rules", "hashKey": "id"}, {"DEDUPE_RULES_TABLE": "t"}, False),
        (
            {"name": "processed-events", "hashKey": "event_id"},
            {"PROCESSED_EVENTS_TABLE": "t"},
            False,
        ),
        ({"name": "seen-messages", "hashKey": "message_id"}, {}, False),
        ({"name": "idempotent-messaging-orders"}, {"TABLE_NAME": "t"}, False),
        ({"tags": {"project": "idempotent-messaging"}}, {}, False),
        ({"tags": {"purpose": "dedupe-rules"}}, {}, False),
    ],
)
def test_a_table_is_an_idempotency_table_only_on_positive_evidence(
    table_props: dict[str, Any], env: dict[str, str], is_idempotency: bool
):
    t = table("t", **table_props)
    env = {k: t.get("name") for k in env}
    layers = ["arn:aws:lambda:eu-west-1:017000801446:layer:AWSLambdaPowertoolsPythonV3:7"]
    fn = function("consumer", environment={"variables": env}, layers=layers)
    found = tables.idempotency_tables(Graph([t, fn]), {})
    assert (t.urn in found) is is_idempotency, found


def test_an_unknown_env_value_names_the_table_the_environment_depends_on():
    """In a preview the table's name is unknown: the environment's dependency decides, when
    the variable holding the unknown value is the only unknown one (or all are recognised)."""
    state, orders = table("state", name=UNKNOWN), table("orders", name="orders")
    fn = function(
        "consumer",
        environment={"variables": {"IDEMPOTENCY_TABLE": UNKNOWN, "ORDERS": "orders"}},
    )
    fn.prop_deps = {"environment": [state.urn, orders.urn]}
    assert set(tables.idempotency_tables(Graph([state, orders, fn]), {})) == {state.urn}
    fn.props["environment"]["variables"]["OTHER"] = UNKNOWN  # which is which: unknown
    assert tables.idempotency_tables(Graph([state, orders, fn]), {}) == {}


# --- mappings: what kind of source ------------------------------------------------------------


def test_a_mapping_of_unknown_source_is_sqs_only_without_the_properties_other_sources_need():
    fn = function("fn")
    base = {"eventSourceArn": UNKNOWN, "functionName": fn.get("arn")}
    assert sqs_by_shape(Node("urn:m:1", ESM, "m1", dict(base)))
    assert sqs_by_shape(Node("urn:m:2", ESM, "m2", {**base, "startingPosition": UNKNOWN}))
    assert not sqs_by_shape(Node("urn:m:3", ESM, "m3", {**base, "startingPosition": "LATEST"}))
    assert not sqs_by_shape(Node("urn:m:4", ESM, "m4", {**base, "topics": ["orders"]}))


# --- queues: FIFO and linking by name ---------------------------------------------------------


def test_fifo_by_flag_or_by_the_suffix_aws_requires():
    graph = Graph([])
    assert graph.is_fifo(queue("a.fifo")) is True
    assert graph.is_fifo(queue("a", fifoQueue=True)) is True
    assert graph.is_fifo(queue("fifo-orders")) is False  # the word alone is no suffix
    assert graph.is_fifo(Node("urn:q:x", QUEUE, "x", {"fifoQueue": UNKNOWN})) is None


def test_a_literal_reference_links_by_name_only_in_the_same_region_and_account():
    here = queue("orders")
    graph = Graph([here])
    assert graph._match((QUEUE,), arn("sqs", "orders")) is here
    assert graph._match((QUEUE,), f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders") is None
    assert graph._match((QUEUE,), "arn:aws:sqs:eu-west-1:999999999999:orders") is None


# --- alarms -----------------------------------------------------------------------------------


def alarm(logical: str, queue_name: Any, **props: Any) -> Node:
    return Node(
        f"urn:a:{logical}",
        ALARM,
        logical,
        {
            "namespace": "AWS/SQS",
            "metricName": "ApproximateNumberOfMessagesVisible",
            "dimensions": {"QueueName": queue_name},
            "comparisonOperator": "GreaterThanOrEqualToThreshold",
            "threshold": 1,
            "alarmActions": [arn("sns", "alerts")],
            **props,
        },
    )


def test_an_alarm_may_watch_a_queue_whose_name_is_unknown_unless_it_names_another_queue():
    unknown = Node("urn:q:u", QUEUE, "u", {"name": UNKNOWN, "arn": UNKNOWN})
    other = queue("other")
    graph = Graph([unknown, other])
    metric = {"dimensions": {"QueueName": "dlq-v2"}, "prop": "dimensions"}
    assert graph.alarm_watches_queue(alarm("a", "dlq-v2"), metric, unknown)
    metric = {"dimensions": {"QueueName": "other"}, "prop": "dimensions"}
    assert not graph.alarm_watches_queue(alarm("b", "other"), metric, unknown)


def test_a_composite_alarm_notifies_for_the_alarms_its_rule_names():
    dlq = queue("d")
    source = queue(
        "s", redrivePolicy=json.dumps({"deadLetterTargetArn": dlq.get("arn"), "maxReceiveCount": 5})
    )
    silent = alarm("dlq-depth", "d", alarmActions=[], name="dlq-depth")
    composite = Node(
        "urn:c",
        queues.COMPOSITE_ALARM,
        "c",
        {"alarmRule": 'ALARM("dlq-depth") OR ALARM("x")', "alarmActions": [arn("sns", "alerts")]},
    )
    assert queues.dlq_has_alarm(Graph([dlq, source, silent, composite]), {}) == []
    composite.props["alarmRule"] = 'ALARM("dlq-depth-2")'
    assert names(queues.dlq_has_alarm(Graph([dlq, source, silent, composite]), {}), Graph([dlq]))


# --- KMS keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "verdict"),
    [
        ("alias/aws/sqs", False),
        (f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/aws/sns", False),
        ("alias/orders", None),  # a key outside the stack: its policy is not known here
        ("", True),
    ],
)
def test_a_service_may_not_use_an_aws_managed_key(key: str, verdict: bool | None):
    q = queue("q", kmsMasterKeyId=key)
    assert service_may_use_key(Graph([q]), q, "sns.amazonaws.com") is verdict


# --- resource policies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("condition", "limits_who"),
    [
        (None, False),
        ({"Bool": {"aws:SecureTransport": "true"}}, False),
        ({"StringLike": {"aws:UserAgent": "my-sdk/*"}}, False),
        ({"DateLessThan": {"aws:CurrentTime": "2030-01-01T00:00:00Z"}}, False),
        ({"StringNotEquals": {"aws:SourceAccount": ACCOUNT}}, False),
        ({"StringEqualsIfExists": {"aws:SourceAccount": ACCOUNT}}, False),
        ({"Null": {"aws:SourceArn": "false"}}, False),
        ({"ArnLike": {"aws:SourceArn": "*"}}, False),
        ({"ArnEquals": {"aws:SourceArn": arn("sns", "orders")}}, True),
        ({"StringEquals": {"aws:PrincipalOrgID": "o-abc123"}}, True),
        (
            {
                "StringEquals": {"aws:SourceAccount": ACCOUNT},
                "Bool": {"aws:SecureTransport": "true"},
            },
            True,
        ),
        ({"StringEquals": {"kms:CallerAccount": ACCOUNT}}, True),  # service keys: benefit of doubt
        (UNKNOWN, True),
    ],
)
def test_a_condition_limits_who_only_when_it_names_the_caller(condition: Any, limits_who: bool):
    assert condition_limits_who(condition) is limits_who


POLICY = json.dumps(
    {
        "Statement": [
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "*"}
        ]
    }
)


@pytest.mark.parametrize(
    ("resource_type", "mandatory", "advisory"),
    [
        ("aws:sqs/queuePolicy:QueuePolicy", True, False),
        ("aws:sns/topicPolicy:TopicPolicy", True, False),
        ("aws:cloudwatch/eventBusPolicy:EventBusPolicy", True, False),
        ("aws:s3/bucketPolicy:BucketPolicy", False, True),
        ("aws:kms/key:Key", False, True),
        ("aws:secretsmanager/secretPolicy:SecretPolicy", False, True),
    ],
)
def test_public_principal_is_mandatory_only_on_what_carries_messages(
    resource_type: str, mandatory: bool, advisory: bool
):
    props = {"policy": POLICY}
    assert bool(resource_policies.no_public_principal(resource_type, props, "r", {})) is mandatory
    other = resource_policies.other_no_public_principal(resource_type, props, "r", {})
    assert bool(other) is advisory


# --- IAM --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy_arn", "wildcard"),
    [
        ("arn:aws:iam::aws:policy/AdministratorAccess", True),
        ("arn:aws:iam::aws:policy/AmazonSQSFullAccess", True),
        ("arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole", False),
        (f"arn:aws:iam::{ACCOUNT}:policy/MyFullAccess", False),  # a customer policy: its text
    ],
)
def test_aws_managed_policies_grant_wildcards_by_their_aws_given_name(
    policy_arn: str, wildcard: bool
):
    props = {"role": "r", "policyArn": policy_arn}
    found = security.iam_no_wildcard_actions(
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment", props, "a", {}
    )
    assert bool(found) is wildcard


# --- async invocations ------------------------------------------------------------------------


def test_an_async_target_is_a_function_by_its_arn_service_or_its_dependency():
    fn = function("fn")
    by_arn = Node("urn:et:1", async_failures.EVENT_TARGET, "t1", {"arn": fn.get("arn")})
    topic_target = Node("urn:et:2", async_failures.EVENT_TARGET, "t2", {"arn": arn("sns", "x")})
    by_dep = Node("urn:et:3", async_failures.EVENT_TARGET, "t3", {"arn": UNKNOWN})
    by_dep.prop_deps = {"arn": [fn.urn]}
    graph = Graph([fn, Node("urn:s:x", TOPIC, "x", {"arn": arn("sns", "x")}), by_arn])
    assert async_failures.async_callers(graph) == {fn.urn: ["EventBridge target 't1'"]}
    graph = Graph([fn, topic_target, by_dep])
    assert async_failures.async_callers(graph) == {fn.urn: ["EventBridge target 't3'"]}
