"""What each rule does NOT cover, one test per boundary sentence of its metadata.

Every rule names, beside its check, the cases it does not cover (`Rule.boundaries`), each with
the test here that shows the rule at that boundary; docs/policy.md's generated table prints them.
Each test shows both sides: the case the rule reports, and the neighbouring case it leaves
alone, so that moving the boundary fails the test. The graphs are built directly (the rules are
pure functions over the resource graph or one resource's properties): no program runs, except
where the boundary is the offline engine's (another stack's values).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.offline import Violation
from idempotent_messaging.rules.graph import (
    ALARM,
    ESM,
    EVENT_TARGET,
    FUNCTION,
    QUEUE,
    REDRIVE_POLICY,
    SCHEDULE,
    SUBSCRIPTION,
    TABLE,
    TOPIC,
    Graph,
    Node,
)
from idempotent_messaging.rules.pack import RULES
from idempotent_messaging.rules.values import UNKNOWN, UNKNOWN_STRING_SENTINEL

pytestmark = pytest.mark.policy

BY_NAME = {r.name: r for r in RULES}
REGION, ACCOUNT = "eu-west-1", "123456789012"
PERMISSION = "aws:lambda/permission:Permission"


def arn(service: str, resource: str) -> str:
    return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{resource}"


def node(type_: str, logical: str, deps: dict[str, list[str]] | None = None, **props: Any) -> Node:
    return Node(f"urn:pulumi:dev::p::{type_}::{logical}", type_, logical, props, deps or {})


def queue(name: str, **props: Any) -> Node:
    url = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
    return node(QUEUE, name, name=name, arn=arn("sqs", name), url=url, id=url, **props)


def function(name: str, **props: Any) -> Node:
    return node(FUNCTION, name, name=name, arn=arn("lambda", f"function:{name}"), **props)


def mapping(name: str, source: Any, fn: Node | str, **props: Any) -> Node:
    target = fn.get("arn") if isinstance(fn, Node) else fn
    return node(ESM, name, eventSourceArn=source, functionName=target, **props)


def redrive(dlq: Node, count: int = 5) -> str:
    return json.dumps({"deadLetterTargetArn": dlq.get("arn"), "maxReceiveCount": count})


def stack(rule: str, *nodes: Node, config: dict[str, Any] | None = None) -> set[str]:
    """The logical names a stack rule reports on this graph."""
    graph = Graph(nodes)
    return {graph.by_urn[urn].name for urn, _ in BY_NAME[rule](graph, config or {})}


def resource(rule: str, type_: str, config: dict[str, Any] | None = None, **props: Any) -> bool:
    """Whether a resource rule reports one resource of `type_` with `props`."""
    return bool(BY_NAME[rule](type_, props, "r", config or {}))


# --- the boundaries are declared, each with its test -----------------------------------------


def _tests_here() -> set[str]:
    tree = ast.parse(Path(__file__).read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_every_rule_says_what_aws_rule_it_enforces_and_what_it_does_not_cover():
    for rule in RULES:
        assert len(rule.enforces) > 40, rule.name
        assert rule.boundaries, f"{rule.name} names no boundary"
        if rule.level == "mandatory":
            # A mandatory rule judges absent properties by AWS's default, said here.
            assert len(rule.defaults) > 20, rule.name


def test_every_boundary_sentence_has_its_test_in_this_module():
    here = _tests_here()
    for rule in RULES:
        for boundary in rule.boundaries:
            assert boundary.text.endswith(".") and len(boundary.text) > 30, boundary
            assert boundary.test in here, f"{rule.name}: no test {boundary.test}"


# --- async failure paths ----------------------------------------------------------------------


def test_async_rule_ignores_synchronous_ses_actions_and_ses_permissions():
    sync_fn, async_fn, permitted = function("sync"), function("async"), function("permitted")
    rule = node(
        "aws:ses/receiptRule:ReceiptRule",
        "inbound",
        lambdaActions=[
            {"functionArn": sync_fn.get("arn"), "invocationType": "RequestResponse", "position": 1},
            {"functionArn": async_fn.get("arn"), "position": 2},  # Event, SES's default
        ],
    )
    perm = node(PERMISSION, "ses-invoke", function="permitted", principal="ses.amazonaws.com")
    flagged = stack(
        "lambda-async-has-failure-destination", sync_fn, async_fn, permitted, rule, perm
    )
    assert flagged == {"async"}


def test_async_rule_ignores_an_iot_permission_of_a_custom_authorizer():
    authorizer_fn, rule_fn = function("authorizer"), function("rule-target")
    by_authorizer = node(
        PERMISSION,
        "iot-authorizer",
        function="authorizer",
        principal="iot.amazonaws.com",
        sourceArn=arn("iot", "authorizer/devices"),
    )
    by_rule = node(
        PERMISSION,
        "iot-rule",
        function="rule-target",
        principal="iot.amazonaws.com",
        sourceArn=arn("iot", "rule/telemetry"),
    )
    graph = (authorizer_fn, rule_fn, by_authorizer, by_rule)
    assert stack("lambda-async-has-failure-destination", *graph) == {"rule-target"}


def test_async_rule_ignores_synchronous_callers_and_event_source_mappings():
    api, consumer, pipe_fn, topic_fn = (
        function("api"),
        function("consumer"),
        function("pipe-target"),
        function("topic-target"),
    )
    nodes = [
        api,
        consumer,
        pipe_fn,
        topic_fn,
        node(PERMISSION, "apigw", function="api", principal="apigateway.amazonaws.com"),
        mapping("consumer-esm", arn("sqs", "orders"), consumer),
        node(
            "aws:pipes/pipe:Pipe",
            "pipe",
            target=pipe_fn.get("arn"),
            targetParameters={"lambdaFunctionParameters": {"invocationType": "REQUEST_RESPONSE"}},
        ),
        node(PERMISSION, "sns", function="topic-target", principal="sns.amazonaws.com"),
    ]
    assert stack("lambda-async-has-failure-destination", *nodes) == {"topic-target"}


def test_async_rule_judges_only_functions_of_the_stack():
    own = function("own")
    outside = arn("lambda", "function:shared-notifier")
    subs = [
        node(SUBSCRIPTION, "to-own", protocol="lambda", endpoint=own.get("arn")),
        node(SUBSCRIPTION, "to-outside", protocol="lambda", endpoint=outside),
    ]
    assert stack("lambda-async-has-failure-destination", own, *subs) == {"own"}


def test_eventbridge_target_with_a_dlq_and_the_default_retry_policy_passes():
    dlq = queue("events-dlq")
    with_dlq = node(
        EVENT_TARGET, "with-dlq", arn=arn("sqs", "x"), deadLetterConfig={"arn": dlq.get("arn")}
    )
    without = node(EVENT_TARGET, "without-dlq", arn=arn("sqs", "x"))
    bounded = node(
        EVENT_TARGET,
        "retry-no-dlq",
        arn=arn("sqs", "x"),
        retryPolicy={"maximumRetryAttempts": 3, "maximumEventAgeInSeconds": 3600},
    )
    flagged = stack("eventbridge-target-has-retry-and-dlq", dlq, with_dlq, without, bounded)
    assert flagged == {"without-dlq", "retry-no-dlq"}


def test_eventbridge_target_dlq_does_not_cover_the_functions_own_failures():
    fn, dlq = function("handler"), queue("target-dlq")
    target = node(EVENT_TARGET, "t", arn=fn.get("arn"), deadLetterConfig={"arn": dlq.get("arn")})
    assert stack("eventbridge-target-has-retry-and-dlq", fn, dlq, target) == set()
    assert stack("lambda-async-has-failure-destination", fn, dlq, target) == {"handler"}


def test_schedule_with_a_dlq_and_the_default_retry_policy_passes():
    rule = "scheduler-schedule-has-retry-and-dlq"
    dlq = {"deadLetterConfig": {"arn": arn("sqs", "schedule-dlq")}, "arn": arn("sqs", "x")}
    assert not resource(rule, SCHEDULE, target=dlq)
    assert not resource(rule, SCHEDULE, target={**dlq, "retryPolicy": {}})
    assert resource(rule, SCHEDULE, target={"arn": arn("sqs", "x")})
    # Scheduler's defaults are judged like any value: tighter bounds flag them.
    tight = {"maxRetryAttempts": 10}
    assert resource(rule, SCHEDULE, config=tight, target=dlq)
    bounded = {**dlq, "retryPolicy": {"maximumRetryAttempts": 3}}
    assert not resource(rule, SCHEDULE, config=tight, target=bounded)


def test_schedule_dlq_does_not_cover_the_functions_own_failures():
    fn = function("nightly")
    target = {"arn": fn.get("arn"), "deadLetterConfig": {"arn": arn("sqs", "dlq")}}
    assert not resource("scheduler-schedule-has-retry-and-dlq", SCHEDULE, target=target)
    schedule = node(SCHEDULE, "nightly-schedule", target=target)
    assert stack("lambda-async-has-failure-destination", fn, schedule) == {"nightly"}


def test_sns_redrive_rule_skips_a_redrive_policy_unknown_in_a_preview():
    known = node(SUBSCRIPTION, "webhook", protocol="https", endpoint="https://example.com/hook")
    unknown = node(
        SUBSCRIPTION,
        "webhook-preview",
        protocol="https",
        endpoint="https://example.com/hook",
        redrivePolicy=UNKNOWN,
    )
    assert stack("sns-subscription-has-redrive", known, unknown) == {"webhook"}


# --- SQS event source mappings ----------------------------------------------------------------


def test_esm_config_rule_takes_an_unknown_source_with_stream_settings_for_a_stream():
    fn = function("reader")
    unknown_source = mapping("from-elsewhere", UNKNOWN, fn, startingPosition="LATEST")
    sqs_source = mapping("from-queue", arn("sqs", "orders"), fn, startingPosition="LATEST")
    assert stack("sqs-esm-config-valid", fn, unknown_source, sqs_source) == {"from-queue"}


def test_esm_config_rule_ignores_the_zero_values_the_provider_reports():
    fn = function("reader")
    # A provider's state of an SQS mapping reports its unset stream settings so.
    state = mapping(
        "as-stored",
        arn("sqs", "orders"),
        fn,
        startingPosition="",
        parallelizationFactor=0,
        maximumRetryAttempts=0,
        maximumRecordAgeInSeconds=0,
        tumblingWindowInSeconds=0,
        bisectBatchOnFunctionError=False,
        topics=[],
        destinationConfig={},
    )
    set_ = mapping("set", arn("sqs", "orders"), fn, maximumRetryAttempts=3)
    assert stack("sqs-esm-config-valid", fn, state, set_) == {"set"}


def test_esm_config_rule_ignores_mappings_of_other_sources():
    fn = function("reader")
    stream = mapping(
        "kinesis",
        arn("kinesis", "stream/clicks"),
        fn,
        startingPosition="LATEST",
        parallelizationFactor=4,
        batchSize=500,
    )
    sqs = mapping("sqs", arn("sqs", "orders"), fn, parallelizationFactor=4)
    assert stack("sqs-esm-config-valid", fn, stream, sqs) == {"sqs"}


def test_batch_item_failures_rule_ignores_mappings_of_other_sources():
    fn = function("reader")
    stream = mapping("ddb", arn("dynamodb", "table/t/stream/2024"), fn, startingPosition="LATEST")
    sqs = mapping("sqs", arn("sqs", "orders"), fn)
    assert stack("lambda-sqs-esm-reports-batch-item-failures", fn, stream, sqs) == {"sqs"}


def test_batch_item_failures_rule_cannot_see_the_handlers_response():
    # The function's code is an opaque archive: the setting on the mapping is all it sees.
    fn = function("reader", code="archive-that-never-returns-batchItemFailures")
    reports = mapping(
        "reports", arn("sqs", "orders"), fn, functionResponseTypes=["ReportBatchItemFailures"]
    )
    silent = mapping("silent", arn("sqs", "other"), fn)
    assert stack("lambda-sqs-esm-reports-batch-item-failures", fn, reports, silent) == {"silent"}


def test_max_concurrency_rule_needs_both_values():
    rule = "lambda-sqs-max-concurrency-within-reserved"
    reserved, unreserved = function("reserved", reservedConcurrentExecutions=5), function("free")
    capped = {"scalingConfig": {"maximumConcurrency": 50}}
    uncapped = mapping("uncapped", arn("sqs", "a"), reserved)
    capped_free = mapping("capped-free", arn("sqs", "b"), unreserved, **capped)
    over = mapping("over", arn("sqs", "c"), reserved, **capped)
    assert stack(rule, reserved, unreserved, uncapped, capped_free, over) == {"over"}


def test_reserved_concurrency_rule_ignores_unreserved_functions():
    unreserved = function("free", reservedConcurrentExecutions=-1)
    two = function("two", reservedConcurrentExecutions=2)
    nodes = (
        unreserved,
        two,
        mapping("a", arn("sqs", "a"), unreserved),
        mapping("b", arn("sqs", "b"), two),
    )
    assert stack("lambda-sqs-reserved-concurrency-at-least-5", *nodes) == {"two"}


# --- queues and DLQs --------------------------------------------------------------------------


def test_redrive_allow_rule_leaves_unknown_arns_to_up():
    rule = "sqs-dlq-allows-redrive-from-source"
    # A preview: the source's ARN and name are computed, the allow list holds an unknown.
    dlq = queue(
        "dlq",
        redriveAllowPolicy=json.dumps(
            {"redrivePermission": "byQueue", "sourceQueueArns": [UNKNOWN_STRING_SENTINEL]}
        ),
    )
    source = node(QUEUE, "orders", redrivePolicy=redrive(dlq), arn=UNKNOWN, name=UNKNOWN)
    assert stack(rule, dlq, source) == set()
    # Known ARNs decide: a list without the source is refused, with it accepted.
    other = arn("sqs", "payments")
    excluding = queue(
        "dlq",
        redriveAllowPolicy=json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [other]}),
    )
    known_source = queue("orders", redrivePolicy=redrive(excluding))
    assert stack(rule, excluding, known_source) == {"orders"}
    including = queue(
        "dlq",
        redriveAllowPolicy=json.dumps(
            {"redrivePermission": "byQueue", "sourceQueueArns": [other, arn("sqs", "orders")]}
        ),
    )
    assert stack(rule, including, queue("orders", redrivePolicy=redrive(including))) == set()


def test_redrive_allow_rule_judges_only_dlqs_of_the_stack():
    rule = "sqs-dlq-allows-redrive-from-source"
    outside = json.dumps({"deadLetterTargetArn": arn("sqs", "shared-dlq"), "maxReceiveCount": 5})
    assert stack(rule, queue("orders", redrivePolicy=outside)) == set()
    deny = queue("dlq", redriveAllowPolicy=json.dumps({"redrivePermission": "denyAll"}))
    assert stack(rule, deny, queue("orders", redrivePolicy=redrive(deny))) == {"orders"}


def test_retention_rule_exempts_fifo_pairs():
    rule = "sqs-dlq-retention-exceeds-source"
    fifo_dlq = queue("dlq.fifo", fifoQueue=True, messageRetentionSeconds=1209600)
    fifo_source = queue(
        "in.fifo", fifoQueue=True, messageRetentionSeconds=1209600, redrivePolicy=redrive(fifo_dlq)
    )
    std_dlq = queue("dlq", messageRetentionSeconds=1209600)
    std_source = queue("in", messageRetentionSeconds=1209600, redrivePolicy=redrive(std_dlq))
    assert stack(rule, fifo_dlq, fifo_source, std_dlq, std_source) == {"dlq"}


def test_retention_rule_needs_the_dlq_in_the_stack():
    rule = "sqs-dlq-retention-exceeds-source"
    outside = json.dumps({"deadLetterTargetArn": arn("sqs", "shared-dlq"), "maxReceiveCount": 5})
    assert stack(rule, queue("in", messageRetentionSeconds=1209600, redrivePolicy=outside)) == set()
    dlq = queue("dlq")  # 4 days, SQS's default
    assert stack(
        rule, dlq, queue("in", messageRetentionSeconds=1209600, redrivePolicy=redrive(dlq))
    ) == {"dlq"}


def test_type_rule_leaves_an_unknown_type_undecided():
    rule = "sqs-dlq-type-matches-source"
    dlq = queue("dlq.fifo", fifoQueue=True)
    unknown = node(QUEUE, "computed", name=UNKNOWN, arn=UNKNOWN, redrivePolicy=redrive(dlq))
    standard = queue("standard", redrivePolicy=redrive(dlq))
    assert stack(rule, dlq, unknown, standard) == {"dlq.fifo"}


def test_source_dlq_rule_judges_only_queues_a_lambda_mapping_consumes():
    rule = "sqs-lambda-source-has-dlq"
    fn = function("worker")
    piped, consumed = queue("piped"), queue("consumed")
    pipe = node("aws:pipes/pipe:Pipe", "pipe", source=piped.get("arn"), target=fn.get("arn"))
    esm = mapping("esm", consumed.get("arn"), fn)
    assert stack(rule, fn, piped, consumed, pipe, esm) == {"consumed"}


def test_source_dlq_rule_judges_only_queues_of_the_stack():
    fn = function("worker")
    esm = mapping("esm", arn("sqs", "shared-orders"), fn)
    assert stack("sqs-lambda-source-has-dlq", fn, esm) == set()


def test_max_receive_count_rule_leaves_an_unknown_redrive_policy_to_up():
    rule = "sqs-max-receive-count-in-range"
    assert not resource(rule, QUEUE, redrivePolicy=UNKNOWN)
    one = json.dumps({"deadLetterTargetArn": arn("sqs", "dlq"), "maxReceiveCount": 1})
    assert resource(rule, QUEUE, redrivePolicy=one)
    assert resource(rule, REDRIVE_POLICY, redrivePolicy=one)


def test_dlq_alarm_rule_sees_only_alarms_of_the_stack():
    dlq = queue("dlq")
    source = queue("in", redrivePolicy=redrive(dlq))
    assert stack("sqs-dlq-has-alarm", dlq, source) == {"dlq"}


def test_dlq_alarm_rule_does_not_check_the_topics_subscribers():
    dlq = queue("dlq")
    source = queue("in", redrivePolicy=redrive(dlq))
    topic = node(TOPIC, "nobody-listens", name="nobody-listens", arn=arn("sns", "nobody-listens"))
    alarm = node(
        ALARM,
        "dlq-alarm",
        namespace="AWS/SQS",
        metricName="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": "dlq"},
        comparisonOperator="GreaterThanOrEqualToThreshold",
        threshold=1,
        alarmActions=[topic.get("arn")],
        arn=arn("cloudwatch", "alarm:dlq-alarm"),
    )
    assert stack("sqs-dlq-has-alarm", dlq, source, topic, alarm) == set()


def test_visibility_rules_need_a_lambda_mapping_with_queue_and_function_in_the_stack():
    rules = (
        "sqs-visibility-timeout-covers-lambda-timeout",
        "sqs-visibility-timeout-6x-lambda-timeout",
    )
    fn = function("slow", timeout=300)
    piped, outside_fn, consumed = queue("piped"), queue("outside-fn"), queue("consumed")
    nodes = (
        fn,
        piped,
        outside_fn,
        consumed,
        node("aws:pipes/pipe:Pipe", "pipe", source=piped.get("arn"), target=fn.get("arn")),
        mapping("to-shared-fn", outside_fn.get("arn"), arn("lambda", "function:shared-slow")),
        mapping("esm", consumed.get("arn"), fn),
        mapping("from-outside", arn("sqs", "shared-orders"), fn),
    )
    for rule in rules:
        assert stack(rule, *nodes) == {"consumed"}, rule


def test_visibility_rules_leave_values_of_other_stacks_unknown(
    run_check: Callable[..., list[Violation]],
):
    body = """
    shared = pulumi.StackReference("acme/platform/prod")
    dlq = aws.sqs.Queue("dlq", message_retention_seconds=1209600)
    redrive = pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5})
    fn = aws.lambda_.Function("fn", role="arn:aws:iam::123456789012:role/r", runtime="python3.12",
        handler="a.h", code=pulumi.AssetArchive({}), timeout=60)
    for name, visibility in (("orders", shared.get_output("ordersVisibility")), ("literal", 30)):
        q = aws.sqs.Queue(name, visibility_timeout_seconds=visibility, redrive_policy=redrive)
        aws.lambda_.EventSourceMapping(f"{name}-esm", event_source_arn=q.arn,
            function_name=fn.arn, function_response_types=["ReportBatchItemFailures"])
    """
    rule = "sqs-visibility-timeout-covers-lambda-timeout"
    for preview in (False, True):
        found = {v.name for v in run_check(body, preview=preview) if v.policy == rule}
        # The other stack's value is unknown (not SQS's default of 30 s); this stack's is judged.
        assert found == {"literal"}, preview


def test_tls_rule_leaves_an_unknown_policy_to_up():
    known, unknown = queue("plain"), queue("computed", policy=UNKNOWN)
    assert stack("sqs-queue-tls-only", known, unknown) == {"plain"}


def test_queue_encryption_rule_accepts_any_key():
    rule = "sqs-queue-encrypted"
    assert not resource(rule, QUEUE, kmsMasterKeyId="alias/aws/sqs")
    assert not resource(rule, QUEUE, sqsManagedSseEnabled=True)
    assert resource(rule, QUEUE)


def test_topic_encryption_rule_does_not_read_the_key_policy():
    rule = "sns-topic-encrypted"
    # The AWS-managed key refuses CloudWatch and EventBridge; encryption at rest it still is.
    assert not resource(rule, TOPIC, kmsMasterKeyId="alias/aws/sns")
    assert resource(rule, TOPIC)


# --- resource policies and delivery ----------------------------------------------------------


def _sns_to(queue_arn: str, topic: Node) -> Node:
    return node(SUBSCRIPTION, "sub", protocol="sqs", endpoint=queue_arn, topic=topic.get("arn"))


def test_delivery_rule_judges_only_targets_and_keys_of_the_stack():
    rule = "delivery-permission-granted"
    topic = node(TOPIC, "orders-topic", name="orders-topic", arn=arn("sns", "orders-topic"))
    own = queue("own")
    assert stack(rule, topic, own, _sns_to(own.get("arn"), topic)) == {"own"}
    assert stack(rule, topic, _sns_to(arn("sqs", "elsewhere"), topic)) == set()
    allow = json.dumps(
        {
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "sns.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": own.get("arn"),
                    "Condition": {"ArnEquals": {"aws:SourceArn": topic.get("arn")}},
                }
            ]
        }
    )
    external_key = queue("own", policy=allow, kmsMasterKeyId=arn("kms", "key/outside"))
    assert stack(rule, topic, external_key, _sns_to(own.get("arn"), topic)) == set()


def test_delivery_rule_leaves_policies_unknown_in_a_preview_to_up():
    rule = "delivery-permission-granted"
    topic = node(TOPIC, "orders-topic", name="orders-topic", arn=arn("sns", "orders-topic"))
    computed = queue("own", policy=UNKNOWN)
    assert stack(rule, topic, computed, _sns_to(computed.get("arn"), topic)) == set()


def test_public_principal_rule_leaves_function_url_permissions_alone():
    rule = "resource-policy-no-public-principal"
    assert resource(rule, PERMISSION, principal="*", action="lambda:InvokeFunction")
    url: dict[str, Any] = {
        "principal": "*",
        "action": "lambda:InvokeFunctionUrl",
        "functionUrlAuthType": "NONE",
    }
    assert not resource(rule, PERMISSION, **url)


def test_public_principal_rule_trusts_service_specific_condition_keys():
    rule = "resource-policy-no-public-principal"

    def policy(condition: dict[str, Any]) -> str:
        statement = {
            "Effect": "Allow",
            "Principal": "*",
            "Action": "sns:Publish",
            "Condition": condition,
        }
        return json.dumps({"Statement": [statement]})

    assert not resource(
        rule, TOPIC, policy=policy({"StringEquals": {"kms:CallerAccount": ACCOUNT}})
    )
    assert resource(rule, TOPIC, policy=policy({"Bool": {"aws:SecureTransport": "true"}}))


def test_public_principal_rules_read_only_the_listed_resource_types():
    public = json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "*"}]})
    for rule in (
        "resource-policy-no-public-principal",
        "other-resource-policy-no-public-principal",
    ):
        assert not resource(rule, "aws:opensearch/domainPolicy:DomainPolicy", accessPolicies=public)
    assert resource(
        "other-resource-policy-no-public-principal",
        "aws:s3/bucketPolicy:BucketPolicy",
        policy=public,
    )


def test_data_actions_rule_does_not_read_conditions():
    rule = "iam-data-actions-name-resources"
    statement = {
        "Effect": "Allow",
        "Action": "sqs:SendMessage",
        "Resource": "*",
        "Condition": {"StringEquals": {"aws:ResourceTag/team": "orders"}},
    }
    doc = json.dumps({"Statement": [statement]})
    assert resource(rule, "aws:iam/rolePolicy:RolePolicy", policy=doc)


def test_wildcard_rule_checks_allowed_actions_not_resources():
    rule = "iam-no-wildcard-actions"

    def doc(effect: str, action: str, resource_: str) -> str:
        return json.dumps(
            {"Statement": [{"Effect": effect, "Action": action, "Resource": resource_}]}
        )

    role_policy = "aws:iam/rolePolicy:RolePolicy"
    assert not resource(rule, role_policy, policy=doc("Allow", "sqs:SendMessage", "*"))
    assert not resource(rule, role_policy, policy=doc("Deny", "sqs:*", "*"))
    assert resource(rule, role_policy, policy=doc("Allow", "sqs:*", arn("sqs", "q")))


# --- functions, tables, protection -----------------------------------------------------------


def test_runtime_rules_skip_images_and_runtimes_the_table_does_not_list():
    config = {"asOf": "2026-11-30"}
    for rule in ("lambda-runtime-not-blocked", "lambda-runtime-not-deprecated"):
        assert not resource(rule, FUNCTION, config=config, packageType="Image")
        assert not resource(rule, FUNCTION, config=config, runtime="python9.99")
    assert resource("lambda-runtime-not-blocked", FUNCTION, config=config, runtime="python3.7")
    assert resource("lambda-runtime-not-deprecated", FUNCTION, config=config, runtime="python3.9")


def test_ttl_rule_needs_positive_evidence_of_an_idempotency_table():
    rule = "dynamodb-idempotency-table-has-ttl"
    business = node(TABLE, "orders", name="orders", arn=arn("dynamodb", "table/orders"))
    dedup = node(
        TABLE,
        "contact-dedup",
        name="contact-dedup",
        hashKey="id",
        arn=arn("dynamodb", "table/contact-dedup"),
    )
    state = node(TABLE, "claims", name="claims", arn=arn("dynamodb", "table/claims"))
    fn = function(
        "consumer",
        environment={"variables": {"ORDERS_TABLE": "orders", "IDEMPOTENCY_TABLE": "claims"}},
    )
    assert stack(rule, business, dedup, state, fn) == {"claims"}


def test_ttl_rule_does_not_check_that_the_code_writes_the_ttl_attribute():
    rule = "dynamodb-idempotency-table-has-ttl"
    tags = {"idempotent-messaging:role": "idempotency-state"}
    enabled = node(
        TABLE,
        "claims",
        name="claims",
        tags=tags,
        ttl={"attributeName": "never_written", "enabled": True},
    )
    disabled = node(TABLE, "other-claims", name="other-claims", tags=tags)
    assert stack(rule, enabled, disabled) == {"other-claims"}


def test_pitr_rule_reads_only_the_tables_own_setting():
    rule = "dynamodb-table-pitr-enabled"
    assert resource(rule, TABLE, pointInTimeRecovery={"enabled": False})
    assert not resource(rule, TABLE, pointInTimeRecovery={"enabled": True})
    # A backup plan is another resource: not this rule's evidence.
    assert not resource(rule, "aws:backup/plan:Plan", rules=[{"ruleName": "daily"}])


def test_protection_rule_does_not_see_retain_on_delete():
    rule = "stateful-pipeline-resource-protected"
    dlq = queue("dlq")
    # `retainOnDelete` never reaches a policy pack: the unprotected DLQ is reported even so.
    unprotected = queue("in", redrivePolicy=redrive(dlq), retainOnDelete=True)
    unprotected.protect, dlq.protect = False, True
    assert stack(rule, dlq, unprotected) == {"in"}
