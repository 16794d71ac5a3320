"""Resource policies: nobody-in-particular access, and the services that must deliver.

- A statement that allows `Principal: "*"` (or `{"AWS": "*"}`) with no condition that limits
  WHO opens the resource to every AWS account and anonymous callers (IAM User Guide, "AWS JSON
  policy elements: Principal", anonymous users); a condition on aws:SecureTransport, time,
  region or user agent limits how, not who (`_documents.condition_limits_who`). Mandatory for
  what carries messages and events (queues, topics, event buses, Lambda functions): anyone could
  inject or read the pipeline's messages. Advisory elsewhere: a public static-website bucket is
  deliberate and is no defect of a message pipeline.
- SNS delivers to an SQS queue (subscription endpoint or subscription DLQ) only when the queue
  policy lets sns.amazonaws.com `sqs:SendMessage`; EventBridge delivers to a queue or topic
  (target or DLQ) only when its resource policy lets events.amazonaws.com send/publish; S3 event
  notifications only when it lets s3.amazonaws.com (SNS Developer Guide, "Sending messages to an
  SQS queue" and "Configuring an Amazon SNS dead-letter queue for a subscription"; EventBridge
  User Guide, "Using resource-based policies"; S3 User Guide, "Granting permissions to publish
  event notification messages to a destination"). And the queue's or topic's KMS key must let
  that service use it: the AWS-managed alias/aws/sqs and alias/aws/sns keys never do (`_kms`).
  Otherwise each delivery is refused and, without a DLQ, lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import ADVISORY, MANDATORY, Boundary, Finding, resource_rule, stack_rule
from ._documents import allows_delivery, condition_keys, condition_limits_who, everyone
from ._kms import service_may_use_key
from .graph import (
    BUCKET_NOTIFICATION,
    BUCKETS,
    EVENT_RULE,
    EVENT_TARGET,
    QUEUE,
    QUEUE_POLICY,
    SUBSCRIPTION,
    TOPIC,
    Graph,
    Node,
    parse_json,
)
from .security import statements
from .values import UNKNOWN, is_unknown

TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
LAMBDA_PERMISSION = "aws:lambda/permission:Permission"

# Resource type -> the property holding a resource-based policy document: what carries the
# pipeline's messages and events (mandatory rule)...
MESSAGING_POLICY_PROPERTIES: dict[str, str] = {
    QUEUE: "policy",
    QUEUE_POLICY: "policy",
    TOPIC: "policy",
    TOPIC_POLICY: "policy",
    "aws:cloudwatch/eventBusPolicy:EventBusPolicy": "policy",
}
# ...and everything else (advisory rule).
OTHER_POLICY_PROPERTIES: dict[str, str] = {
    "aws:s3/bucketPolicy:BucketPolicy": "policy",
    "aws:s3/bucket:Bucket": "policy",
    "aws:s3/bucketV2:BucketV2": "policy",
    "aws:kms/key:Key": "policy",
    "aws:kms/keyPolicy:KeyPolicy": "policy",
    "aws:secretsmanager/secret:Secret": "policy",
    "aws:secretsmanager/secretPolicy:SecretPolicy": "policy",
    "aws:ecr/repositoryPolicy:RepositoryPolicy": "policy",
}
RESOURCE_POLICY_PROPERTIES: dict[str, str] = {
    **MESSAGING_POLICY_PROPERTIES,
    **OTHER_POLICY_PROPERTIES,
}

_LIMITING_CONDITIONS = "aws:SourceArn, aws:SourceAccount, aws:PrincipalOrgID"


@resource_rule(
    "resource-policy-no-public-principal",
    "Resource policies of what carries messages and events (SQS queues, SNS topics, EventBridge "
    'buses, Lambda permissions) allow no `Principal: "*"` (or AWS: "*") without a condition '
    "that limits who (aws:SecureTransport limits how, not who).",
    MANDATORY,
    "Name the principals (accounts, roles, service principals) or add a condition such as "
    "aws:SourceArn, aws:SourceAccount or aws:PrincipalOrgID.",
    enforces=(
        "A Principal '*' statement with no condition naming the caller admits every AWS "
        "account and anonymous callers (IAM User Guide, 'AWS JSON policy elements: "
        "Principal'); for a lambda.Permission, principal '*' without source_arn, "
        "source_account or principal_org_id lets anyone invoke (Lambda Developer Guide, "
        "'Working with resource-based IAM policies')."
    ),
    defaults="No resource policy: only the owner account (nothing public).",
    boundaries=(
        Boundary(
            (
                "A function URL permission (function_url_auth_type): public URLs are judged by "
                "their auth type, not here."
            ),
            "test_public_principal_rule_leaves_function_url_permissions_alone",
        ),
        Boundary(
            (
                "Service-specific condition keys (e.g. kms:CallerAccount) get the benefit of the "
                "doubt."
            ),
            "test_public_principal_rule_trusts_service_specific_condition_keys",
        ),
    ),
)
def no_public_principal(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    if resource_type == LAMBDA_PERMISSION:
        principal = props.get("principal")
        limits = ("sourceArn", "sourceAccount", "principalOrgId", "functionUrlAuthType")
        if principal != "*" or any(props.get(k) is not None for k in limits):
            return []
        return [
            f"lambda permission '{name}' lets principal '*' invoke the function with no "
            f"source_arn, source_account or principal_org_id: any AWS account (or anyone) can "
            f"invoke it. Fix: name the principal, or set source_arn / source_account."
        ]
    return _public_statements(resource_type, props, name, MESSAGING_POLICY_PROPERTIES, "")


@resource_rule(
    "other-resource-policy-no-public-principal",
    "Resource policies of resources that carry no messages (S3 buckets, KMS keys, secrets, ECR "
    'repositories) allow no `Principal: "*"` without a condition that limits who; advisory: '
    "a public static-website bucket may be deliberate.",
    ADVISORY,
    "Name the principals or add a condition such as aws:SourceArn, aws:SourceAccount or "
    "aws:PrincipalOrgID; waive it (docs/waivers.md) where public access is the intent.",
    enforces=(
        "A Principal '*' statement with no condition naming the caller admits every AWS "
        "account and anonymous callers (IAM User Guide, 'AWS JSON policy elements: "
        "Principal')."
    ),
    boundaries=(
        Boundary(
            "Resource types it does not list (e.g. OpenSearch domains, Glacier vaults).",
            "test_public_principal_rules_read_only_the_listed_resource_types",
        ),
    ),
)
def other_no_public_principal(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    return _public_statements(
        resource_type,
        props,
        name,
        OTHER_POLICY_PROPERTIES,
        " If public access is the intent (a static website), waive this finding with the "
        "reason (docs/waivers.md).",
    )


def _public_statements(
    resource_type: str,
    props: Mapping[str, Any],
    name: str,
    properties: Mapping[str, str],
    note: str,
) -> list[str]:
    prop = properties.get(resource_type)
    if prop is None:
        return []
    open_sids: list[str] = []
    how_only: set[str] = set()
    for i, st in enumerate(statements(parse_json(props.get(prop)))):
        if st.get("Effect") != "Allow" or not everyone(st.get("Principal")):
            continue
        condition = st.get("Condition")
        if condition_limits_who(condition):
            continue
        open_sids.append(str(st.get("Sid") or f"#{i + 1}"))
        how_only.update(condition_keys(condition))
    if not open_sids:
        return []
    cond = (
        f"whose condition ({', '.join(sorted(how_only))}) limits how or when, not who"
        if how_only
        else "with no condition"
    )
    return [
        f"'{name}' ({resource_type}) has policy statement(s) {', '.join(open_sids)} allowing "
        f"Principal '*' {cond}: every AWS account and anonymous callers get those actions. "
        f"Fix: name the principals, or add a condition that names the caller "
        f"({_LIMITING_CONDITIONS}).{note}"
    ]


# --- delivery permissions ------------------------------------------------------------------


def _policy_docs(graph: Graph, node: Node, holder_type: str, ref_prop: str) -> list[Any]:
    """The node's inline policy plus those of separate policy resources attached to it."""
    docs = [node.get("policy")]
    for holder in graph.of_type(holder_type):
        target = graph.resolve(holder, ref_prop, holder.get(ref_prop), (node.type,))
        if target is node:
            docs.append(holder.get("policy"))
    return [parse_json(d) for d in docs if d is not None]


def _queue_of(graph: Graph, node: Node, prop: str, value: Any) -> Node | None:
    target = graph.resolve(node, prop, value, (QUEUE,))
    if isinstance(value, str) and not is_unknown(value) and value.split(":")[2:3] != ["sqs"]:
        return None
    return target if isinstance(target, Node) else None


def _topic_of(graph: Graph, node: Node, prop: str, value: Any) -> Node | None:
    if isinstance(value, str) and not is_unknown(value) and value.split(":")[2:3] != ["sns"]:
        return None
    deps = graph.dep_nodes(node, prop, (TOPIC,))
    if isinstance(value, str) and not is_unknown(value):
        return graph.topic(value)
    return deps[0] if len(deps) == 1 else None


def _listed(graph: Graph, node: Node, prop: str, key: str, kind: str) -> list[Node]:
    """The stack queues or topics a list property names (an S3 notification's `queues` /
    `topics`): every one its dependencies name, plus those a known ARN names."""
    types = (QUEUE,) if kind == "sqs" else (TOPIC,)
    out = list(graph.dep_nodes(node, prop, types))
    entries = node.get(prop, default=[])
    for entry in entries if isinstance(entries, list) else []:
        value = entry.get(key) if isinstance(entry, dict) else None
        if not isinstance(value, str) or is_unknown(value) or value.split(":")[2:3] != [kind]:
            continue
        target = _queue_of(graph, node, prop, value) if kind == "sqs" else graph.topic(value)
        if target is not None and target not in out:
            out.append(target)
    return out


def _bucket_arn(graph: Graph, notification: Node) -> Any:
    """The notifying bucket's ARN (the aws:SourceArn S3 sends with), None when not known."""
    bucket = graph.resolve(notification, "bucket", notification.get("bucket"), BUCKETS)
    return bucket.get("arn") if isinstance(bucket, Node) else None


Delivery = tuple[Node, str, str, Any, str]  # (target, service, action, source ARN, who)


def _deliveries(graph: Graph) -> list[Delivery]:
    checks: list[Delivery] = []
    for sub in graph.of_type(SUBSCRIPTION):
        topic = sub.get("topic")
        if sub.get("protocol") == "sqs":
            queue = _queue_of(graph, sub, "endpoint", sub.get("endpoint"))
            if queue is not None:
                checks.append((queue, SNS, "sqs:SendMessage", topic, f"subscription {sub.label}"))
        # SNS moves a message it cannot deliver to the subscription's DLQ itself, as
        # sns.amazonaws.com on behalf of the topic (SNS Developer Guide, "Configuring an Amazon
        # SNS dead-letter queue for a subscription"): the DLQ's policy must admit it.
        doc = parse_json(sub.get("redrivePolicy"))
        if doc is not None:
            target = doc.get("deadLetterTargetArn") if isinstance(doc, dict) else UNKNOWN
            dlq = graph.queue_target(sub, "redrivePolicy", target)
            if dlq is not None:
                checks.append(
                    (dlq, SNS, "sqs:SendMessage", topic, f"subscription {sub.label} (DLQ)")
                )
    for t in graph.of_type(EVENT_TARGET):
        rule_arn = None  # the rule's ARN: a condition naming another rule refuses it
        rule = graph.resolve(t, "rule", t.get("rule"), (EVENT_RULE,))
        if isinstance(rule, Node):
            rule_arn = rule.get("arn")
        who = f"EventBridge target {t.label}"
        arn = t.get("arn")
        queue = _queue_of(graph, t, "arn", arn)
        if queue is not None:
            checks.append((queue, EVENTS, "sqs:SendMessage", rule_arn, who))
        topic = _topic_of(graph, t, "arn", arn)
        if topic is not None:
            checks.append((topic, EVENTS, "sns:Publish", rule_arn, who))
        dlq_arn = t.get("deadLetterConfig", "arn")
        if dlq_arn is not None:
            dlq = _queue_of(graph, t, "deadLetterConfig", dlq_arn)
            if dlq is not None:
                checks.append((dlq, EVENTS, "sqs:SendMessage", rule_arn, f"{who} (DLQ)"))
    for n in graph.of_type(BUCKET_NOTIFICATION):
        bucket_arn = _bucket_arn(graph, n)
        who = f"S3 bucket notification {n.label}"
        for queue in _listed(graph, n, "queues", "queueArn", "sqs"):
            checks.append((queue, S3, "sqs:SendMessage", bucket_arn, who))
        for topic in _listed(graph, n, "topics", "topicArn", "sns"):
            checks.append((topic, S3, "sns:Publish", bucket_arn, who))
    return checks


SNS, EVENTS, S3 = "sns.amazonaws.com", "events.amazonaws.com", "s3.amazonaws.com"


@stack_rule(
    "delivery-permission-granted",
    "Queues and topics that SNS, EventBridge or S3 deliver to (targets and DLQs) let that "
    "service send to them, in their resource policy and in their KMS key's policy.",
    MANDATORY,
    "Add a queue/topic policy statement allowing the service principal (sns.amazonaws.com, "
    "events.amazonaws.com, s3.amazonaws.com) sqs:SendMessage / sns:Publish, conditioned on "
    "aws:SourceArn; encrypt with SSE-SQS or a customer-managed key that allows the service, "
    "never the AWS-managed alias/aws/sqs or alias/aws/sns key.",
    enforces=(
        "SNS, EventBridge and S3 deliver to a queue or topic (target or DLQ) only when "
        "its resource policy lets the service principal send, and its KMS key's policy "
        "lets that service use the key (SNS Developer Guide, 'Sending messages to an SQS "
        "queue' and 'Configuring an Amazon SNS dead-letter queue for a subscription'; "
        "EventBridge User Guide, 'Using resource-based policies'; S3 User Guide, "
        "'Granting permissions to publish event notification messages to a destination'; "
        "SQS Developer Guide, 'Key management')."
    ),
    defaults=(
        "No queue or topic policy: only the owner account's principals may send, never a "
        "service; no KMS key policy: the default key policy, which admits only the "
        "account's IAM principals; alias/aws/sqs and alias/aws/sns never admit a service."
    ),
    boundaries=(
        Boundary(
            (
                "A queue, topic or KMS key outside the stack: its policy is set where it is "
                "declared."
            ),
            "test_delivery_rule_judges_only_targets_and_keys_of_the_stack",
        ),
        Boundary(
            (
                "A policy document unknown in a preview (an apply over ARNs not created yet): "
                "`up` decides."
            ),
            "test_delivery_rule_leaves_policies_unknown_in_a_preview_to_up",
        ),
    ),
)
def delivery_permission_granted(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[str, str, str]] = set()
    for target, service, action, source, who in _deliveries(graph):
        if (target.urn, service, who) in seen:
            continue
        seen.add((target.urn, service, who))
        if target.type == QUEUE:
            docs = _policy_docs(graph, target, QUEUE_POLICY, "queueUrl")
        else:
            docs = _policy_docs(graph, target, TOPIC_POLICY, "arn")
        kind = "queue" if target.type == QUEUE else "topic"
        if service_may_use_key(graph, target, service) is False:
            managed = "alias/aws/sqs" if kind == "queue" else "alias/aws/sns"
            sse = " or switch to SSE-SQS (sqs_managed_sse_enabled=True)" if kind == "queue" else ""
            findings.append(
                (
                    target.urn,
                    f"{kind} {target.label} receives deliveries from {who}, but its KMS key does "
                    f"not let {service} use it (the AWS-managed {managed} key never does: its "
                    f"key policy cannot be edited): every delivery is refused. Fix: encrypt "
                    f"{target.label} with a customer-managed key whose policy allows {service} "
                    f"kms:GenerateDataKey* and kms:Decrypt{sse}.",
                )
            )
            continue
        if allows_delivery(docs, service, action, source) is not False:
            continue
        findings.append(
            (
                target.urn,
                f"{kind} {target.label} receives deliveries from {who}, but its policy does not "
                f"let {service} {action}: every delivery is refused and, without a DLQ, lost. "
                f"Fix: add a policy statement to {target.label} allowing Principal "
                f"{{'Service': '{service}'}} Action {action} on its ARN, with Condition "
                f"ArnEquals aws:SourceArn = the sender's ARN.",
            )
        )
    return findings
