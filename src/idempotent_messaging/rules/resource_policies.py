"""Resource policies: nobody-in-particular access, and the services that must deliver.

- A statement that allows `Principal: "*"` (or `{"AWS": "*"}`) with no condition opens the
  resource to every AWS account and anonymous callers (IAM User Guide, "AWS JSON policy
  elements: Principal", anonymous users).
- SNS delivers to an SQS queue only when the queue policy lets the topic (service principal
  sns.amazonaws.com) `sqs:SendMessage`; EventBridge delivers to a queue or topic (target or DLQ)
  only when its resource policy lets events.amazonaws.com send/publish (SNS Developer Guide,
  "Sending messages to an SQS queue"; EventBridge User Guide, "Using resource-based policies").
  Otherwise each delivery is refused and, without a DLQ, lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import MANDATORY, Finding, resource_rule, stack_rule
from ._documents import allows_delivery, everyone
from ._kms import service_may_use_topic_key
from .async_failures import EVENT_TARGET
from .graph import (
    QUEUE,
    QUEUE_POLICY,
    SUBSCRIPTION,
    TOPIC,
    Graph,
    Node,
    parse_json,
)
from .security import statements
from .values import is_unknown

TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
LAMBDA_PERMISSION = "aws:lambda/permission:Permission"

# Resource type -> the property holding a resource-based policy document.
RESOURCE_POLICY_PROPERTIES: dict[str, str] = {
    QUEUE: "policy",
    QUEUE_POLICY: "policy",
    TOPIC: "policy",
    TOPIC_POLICY: "policy",
    "aws:s3/bucketPolicy:BucketPolicy": "policy",
    "aws:kms/key:Key": "policy",
    "aws:cloudwatch/eventBusPolicy:EventBusPolicy": "policy",
    "aws:secretsmanager/secretPolicy:SecretPolicy": "policy",
    "aws:ecr/repositoryPolicy:RepositoryPolicy": "policy",
}


@resource_rule(
    "resource-policy-no-public-principal",
    'Resource policies allow no `Principal: "*"` (or AWS: "*") without a limiting condition.',
    MANDATORY,
    "Name the principals (accounts, roles, service principals) or add a condition such as "
    "aws:SourceArn, aws:SourceAccount or aws:PrincipalOrgID.",
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
    prop = RESOURCE_POLICY_PROPERTIES.get(resource_type)
    if prop is None:
        return []
    open_sids: list[str] = []
    for i, st in enumerate(statements(parse_json(props.get(prop)))):
        if st.get("Effect") != "Allow" or not everyone(st.get("Principal")):
            continue
        if st.get("Condition"):
            continue
        open_sids.append(str(st.get("Sid") or f"#{i + 1}"))
    if not open_sids:
        return []
    return [
        f"'{name}' ({resource_type}) has policy statement(s) {', '.join(open_sids)} allowing "
        f"Principal '*' with no condition: every AWS account and anonymous callers get those "
        f"actions. Fix: name the principals, or add a condition (aws:SourceArn, "
        f"aws:SourceAccount, aws:PrincipalOrgID)."
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


@stack_rule(
    "delivery-permission-granted",
    "Queues and topics that SNS or EventBridge deliver to let that service send to them.",
    MANDATORY,
    "Add a queue/topic policy statement allowing the service principal (sns.amazonaws.com, "
    "events.amazonaws.com) sqs:SendMessage / sns:Publish, conditioned on aws:SourceArn.",
)
def delivery_permission_granted(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    checks: list[tuple[Node, str, str, Any, str]] = []  # (target, service, action, source, who)
    for sub in graph.of_type(SUBSCRIPTION):
        if sub.get("protocol") != "sqs":
            continue
        queue = _queue_of(graph, sub, "endpoint", sub.get("endpoint"))
        if queue is not None:
            topic = sub.get("topic")
            checks.append(
                (queue, "sns.amazonaws.com", "sqs:SendMessage", topic, f"subscription {sub.label}")
            )
    for t in graph.of_type(EVENT_TARGET):
        rule_arn = None  # the rule's ARN: a condition naming another rule refuses it
        rule = graph.resolve(t, "rule", t.get("rule"), ("aws:cloudwatch/eventRule:EventRule",))
        if isinstance(rule, Node):
            rule_arn = rule.get("arn")
        who = f"EventBridge target {t.label}"
        arn = t.get("arn")
        queue = _queue_of(graph, t, "arn", arn)
        if queue is not None:
            checks.append((queue, "events.amazonaws.com", "sqs:SendMessage", rule_arn, who))
        topic = _topic_of(graph, t, "arn", arn)
        if topic is not None:
            checks.append((topic, "events.amazonaws.com", "sns:Publish", rule_arn, who))
        dlq_arn = t.get("deadLetterConfig", "arn")
        if dlq_arn is not None:
            dlq = _queue_of(graph, t, "deadLetterConfig", dlq_arn)
            if dlq is not None:
                checks.append(
                    (dlq, "events.amazonaws.com", "sqs:SendMessage", rule_arn, f"{who} (DLQ)")
                )
    seen: set[tuple[str, str, str]] = set()
    for target, service, action, source, who in checks:
        if (target.urn, service, who) in seen:
            continue
        seen.add((target.urn, service, who))
        if target.type == QUEUE:
            docs = _policy_docs(graph, target, QUEUE_POLICY, "queueUrl")
        else:
            docs = _policy_docs(graph, target, TOPIC_POLICY, "arn")
        kind = "queue" if target.type == QUEUE else "topic"
        if kind == "topic" and service_may_use_topic_key(graph, target, service) is False:
            findings.append(
                (
                    target.urn,
                    f"topic {target.label} receives deliveries from {who}, but its KMS key does "
                    f"not let {service} use it (the AWS-managed alias/aws/sns key never does): "
                    f"every publish is refused. Fix: encrypt {target.label} with a "
                    f"customer-managed key whose policy allows {service} kms:GenerateDataKey* "
                    f"and kms:Decrypt.",
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
