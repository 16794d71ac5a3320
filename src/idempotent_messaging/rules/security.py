"""Baseline security rules (advisory by default): encryption, TLS-only queues, IAM wildcards."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .. import limits
from ._base import (
    ADVISORY,
    Boundary,
    Finding,
    resource_rule,
    stack_rule,
    strings,
)
from .graph import QUEUE, QUEUE_POLICY, TOPIC, Graph, Node, parse_json
from .values import is_unknown

# Resource type -> the property holding an IAM-style policy document.
POLICY_PROPERTIES: dict[str, str] = {
    "aws:iam/policy:Policy": "policy",
    "aws:iam/rolePolicy:RolePolicy": "policy",
    "aws:iam/userPolicy:UserPolicy": "policy",
    "aws:iam/groupPolicy:GroupPolicy": "policy",
    QUEUE: "policy",
    QUEUE_POLICY: "policy",
    TOPIC: "policy",
    "aws:sns/topicPolicy:TopicPolicy": "policy",
    "aws:s3/bucketPolicy:BucketPolicy": "policy",
}

# Attaching one of these AWS managed policies grants wildcard actions ("*", "sqs:*", ...).
POLICY_ATTACHMENTS = frozenset(
    {
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "aws:iam/userPolicyAttachment:UserPolicyAttachment",
        "aws:iam/groupPolicyAttachment:GroupPolicyAttachment",
        "aws:iam/policyAttachment:PolicyAttachment",
    }
)
WILDCARD_MANAGED_POLICY = re.compile(
    r"^arn:[\w-]+:iam::aws:policy/(.*/)?(AdministratorAccess|PowerUserAccess|[\w-]*FullAccess)"
    r"[\w-]*$"
)


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def remedy_queue_encryption(
    resource_type: str, props: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any] | None:
    """SSE-SQS on (`sqs_managed_sse_enabled=True`) for a queue that names no KMS key: SQS
    encrypts with a key it owns, which every service that delivers to queues may use (unlike
    the AWS-managed alias/aws/sqs key)."""
    if resource_type != QUEUE:
        return None
    kms, sse = props.get("kmsMasterKeyId"), props.get("sqsManagedSseEnabled")
    if not (kms is None or kms == "") or not (sse is None or sse is False or sse == "false"):
        return None  # a key (or an unknown or secret value), or already on
    return {**props, "sqsManagedSseEnabled": True}


@resource_rule(
    "sqs-queue-encrypted",
    "SQS queues declare encryption at rest (SSE-SQS or KMS).",
    ADVISORY,
    "Set sqs_managed_sse_enabled=True or kms_master_key_id.",
    remedy=remedy_queue_encryption,
    remedies="sqs_managed_sse_enabled=True on a queue that names no KMS key (SSE-SQS, which "
    "every delivering service may use).",
    enforces=(
        "SQS encrypts messages at rest with SSE-SQS or a KMS key (SQS Developer Guide, "
        "'Encryption at rest')."
    ),
    defaults=(
        "Neither set: whatever the account's default is at creation (SSE-SQS for queues "
        "created by the API since 2022), which the program does not say."
    ),
    boundaries=(
        Boundary(
            (
                "Which key: any KMS key or SSE-SQS passes (delivery-permission-granted judges "
                "whether services may use it)."
            ),
            "test_queue_encryption_rule_accepts_any_key",
        ),
    ),
)
def sqs_queue_encrypted(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    if resource_type != QUEUE:
        return []
    kms, sse = props.get("kmsMasterKeyId"), props.get("sqsManagedSseEnabled")
    if is_unknown(kms) or is_unknown(sse) or (isinstance(kms, str) and kms) or _truthy(sse):
        return []
    state = (
        "disables SSE-SQS (sqs_managed_sse_enabled=False) and sets no KMS key, so its messages "
        "are stored unencrypted"
        if sse is not None
        else "declares no encryption (neither kms_master_key_id nor sqs_managed_sse_enabled), "
        "so its protection depends on an account default nobody reviews"
    )
    return [
        f"queue '{name}' {state}. Fix: set sqs_managed_sse_enabled=True, or kms_master_key_id "
        f"to a KMS key for customer-managed encryption."
    ]


@resource_rule(
    "sns-topic-encrypted",
    "SNS topics are encrypted at rest with KMS.",
    ADVISORY,
    "Set kms_master_key_id to a customer-managed key whose policy lets the publishers "
    "(CloudWatch, EventBridge, ...) use it.",
    enforces=(
        "SNS encrypts messages at rest only with a KMS key set on the topic (SNS "
        "Developer Guide, 'Encryption at rest')."
    ),
    defaults="No kms_master_key_id: unencrypted at rest, SNS's default.",
    boundaries=(
        Boundary(
            (
                "Whether the key's policy lets the publishers use it (delivery-permission-granted "
                "and sqs-dlq-has-alarm judge what they need)."
            ),
            "test_topic_encryption_rule_does_not_read_the_key_policy",
        ),
    ),
)
def sns_topic_encrypted(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    if resource_type != TOPIC:
        return []
    kms = props.get("kmsMasterKeyId")
    if is_unknown(kms) or (isinstance(kms, str) and kms):
        return []
    return [
        f"topic '{name}' sets no kms_master_key_id, so SNS stores its messages unencrypted at "
        f"rest. Fix: set kms_master_key_id to a customer-managed KMS key whose key policy lets "
        f"the publishers use it (CloudWatch alarms, EventBridge and S3 cannot use the "
        f"AWS-managed alias/aws/sns key, so a topic they publish to needs your own key)."
    ]


def statements(doc: Any) -> list[dict[str, Any]]:
    if not isinstance(doc, dict):
        return []
    st = doc.get("Statement")
    if isinstance(st, dict):
        return [st]
    return [s for s in st if isinstance(s, dict)] if isinstance(st, list) else []


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def wildcard_actions(doc: Any, allowed: set[str]) -> list[str]:
    found: list[str] = []
    for st in statements(doc):
        if st.get("Effect", "Allow") != "Allow":
            continue  # a Deny with sqs:* (e.g. the TLS-only statement) narrows access
        if st.get("NotAction") is not None:
            found.append(f"NotAction {st['NotAction']}")
        for action in _as_list(st.get("Action")):
            if isinstance(action, str) and "*" in action and action not in allowed:
                found.append(action)
    return found


@resource_rule(
    "iam-no-wildcard-actions",
    "IAM and resource policies allow no wildcard actions.",
    ADVISORY,
    "List the exact actions instead of service:* or *.",
    {"allowedActions": strings([])},
    enforces=(
        "A wildcard action grants every current and future action of the service (IAM "
        "User Guide, 'Grant least privilege')."
    ),
    boundaries=(
        Boundary(
            (
                "Wildcards in Resource (iam-data-actions-name-resources judges those) and Deny "
                "statements."
            ),
            "test_wildcard_rule_checks_allowed_actions_not_resources",
        ),
    ),
)
def iam_no_wildcard_actions(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    allowed = set(config.get("allowedActions", []))
    docs: list[Any] = []
    if resource_type in POLICY_PROPERTIES:
        docs.append(props.get(POLICY_PROPERTIES[resource_type]))
    if resource_type == "aws:iam/role:Role":
        inline = props.get("inlinePolicies")
        for p in inline if isinstance(inline, list) else []:
            if isinstance(p, dict):
                docs.append(p.get("policy"))
    found: list[str] = []
    for doc in docs:
        found.extend(wildcard_actions(parse_json(doc), allowed))
    arns = props.get("managedPolicyArns") if resource_type == "aws:iam/role:Role" else None
    if resource_type in POLICY_ATTACHMENTS:
        arns = [props.get("policyArn")]
    for arn in arns if isinstance(arns, list) else []:
        if isinstance(arn, str) and not is_unknown(arn) and WILDCARD_MANAGED_POLICY.search(arn):
            found.append(f"{arn} (an AWS managed policy granting wildcard actions)")
    if not found:
        return []
    return [
        f"'{name}' ({resource_type}) allows wildcard actions {sorted(set(found))}: the grant "
        f"covers every current and future action of the service, far beyond what the code "
        f"calls. Fix: list the exact actions (e.g. sqs:SendMessage, dynamodb:PutItem)."
    ]


def denies_insecure_transport(doc: Any) -> bool:
    for st in statements(doc):
        if st.get("Effect") != "Deny":
            continue
        condition = st.get("Condition")
        if not isinstance(condition, dict):
            continue
        for op in ("Bool", "BoolIfExists"):
            block = condition.get(op)
            if isinstance(block, dict):
                value = block.get("aws:SecureTransport")
                if any(str(v).lower() == "false" for v in _as_list(value)):
                    return True
    return False


def remedy_tls_only(
    resource_type: str, props: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The TLS-only Deny statement (`limits.tls_only_statement`) appended to a known queue
    policy document (an aws.sqs.QueuePolicy's, or a queue's inline one) that lacks it, on the
    queue ARN its statements name. A queue without a policy is left alone: its policy may be
    an aws.sqs.QueuePolicy the pack has not seen yet, and two would overwrite each other."""
    if resource_type not in (QUEUE, QUEUE_POLICY):
        return None
    raw = props.get("policy")
    if not isinstance(raw, str) or is_unknown(raw):
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, dict) or denies_insecure_transport(doc):
        return None
    resources = {st.get("Resource") for st in statements(doc)}
    if len(resources) != 1:
        return None  # no statement, or several resources: which queue is not for us to guess
    resource = resources.pop()
    if not isinstance(resource, str) or is_unknown(resource) or ":sqs:" not in resource:
        return None
    added = [*statements(doc), limits.tls_only_statement(resource)]
    return {**props, "policy": json.dumps({**doc, "Statement": added})}


@stack_rule(
    "sqs-queue-tls-only",
    "SQS queue policies deny requests that do not use TLS (aws:SecureTransport).",
    ADVISORY,
    "Add a Deny statement on aws:SecureTransport=false to the queue policy.",
    remedy=remedy_tls_only,
    remedies="The Deny aws:SecureTransport=false statement (limits.tls_only_statement) appended "
    "to a known queue policy (aws.sqs.QueuePolicy or inline) that names one queue; a queue "
    "without any policy is left alone.",
    enforces=(
        "A Deny on aws:SecureTransport false refuses plain-HTTP requests (SQS Developer "
        "Guide, 'Security best practices': enforce encryption of data in transit)."
    ),
    defaults="No queue policy: HTTP requests are accepted.",
    boundaries=(
        Boundary(
            "A queue whose policy is unknown in a preview.",
            "test_tls_rule_leaves_an_unknown_policy_to_up",
        ),
    ),
)
def sqs_queue_tls_only(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    policies: dict[str, list[Any]] = {}
    for qp in graph.of_type(QUEUE_POLICY):
        target = graph.resolve(qp, "queueUrl", qp.get("queueUrl"), (QUEUE,))
        if isinstance(target, Node):
            policies.setdefault(target.urn, []).append(qp.get("policy"))
    findings: list[Finding] = []
    for q in graph.of_type(QUEUE):
        docs = [parse_json(d) for d in [q.get("policy"), *policies.get(q.urn, [])]]
        if any(is_unknown(d) for d in docs) or any(denies_insecure_transport(d) for d in docs):
            continue
        findings.append(
            (
                q.urn,
                f"queue {q.label} has no policy statement denying requests without TLS, so a "
                f"client can send or receive its messages over plain HTTP. Fix: add (inline "
                f"`policy` or an aws.sqs.QueuePolicy) a statement Effect Deny, Principal *, "
                f"Action sqs:*, Resource <queue arn>, Condition "
                f"{{'Bool': {{'aws:SecureTransport': 'false'}}}}.",
            )
        )
    return findings


# Data-plane actions that support resource-level permissions (Service Authorization Reference):
# a grant of one of them on "*" covers every queue/table/topic/function of the account.
DATA_PLANE_ACTIONS = frozenset(
    a.lower()
    for a in (
        "sqs:SendMessage",
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:Scan",
        "dynamodb:BatchGetItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:TransactWriteItems",
        "dynamodb:TransactGetItems",
        "dynamodb:ConditionCheckItem",
        "dynamodb:PartiQLSelect",
        "dynamodb:PartiQLInsert",
        "dynamodb:PartiQLUpdate",
        "dynamodb:PartiQLDelete",
        "sns:Publish",
        "lambda:InvokeFunction",
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "kms:Decrypt",
        "kms:Encrypt",
        "kms:GenerateDataKey",
        "events:PutEvents",
        "scheduler:CreateSchedule",
    )
)
IDENTITY_POLICY_TYPES = frozenset(
    {
        "aws:iam/policy:Policy",
        "aws:iam/rolePolicy:RolePolicy",
        "aws:iam/userPolicy:UserPolicy",
        "aws:iam/groupPolicy:GroupPolicy",
    }
)


@resource_rule(
    "iam-data-actions-name-resources",
    "IAM statements granting data-plane actions (sqs:SendMessage, dynamodb:PutItem, ...) name "
    "the resources instead of Resource '*'.",
    ADVISORY,
    "Replace Resource '*' with the ARNs of the queues, tables, topics or functions used.",
    enforces=(
        "Data-plane actions that support resource-level permissions can be scoped to "
        "named ARNs (Service Authorization Reference; IAM User Guide, 'Grant least "
        "privilege')."
    ),
    boundaries=(
        Boundary(
            "Conditions that narrow a Resource '*' grant (aws:ResourceTag, aws:SourceArn).",
            "test_data_actions_rule_does_not_read_conditions",
        ),
    ),
)
def iam_data_actions_name_resources(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    docs: list[Any] = []
    if resource_type in IDENTITY_POLICY_TYPES:
        docs.append(props.get("policy"))
    elif resource_type == "aws:iam/role:Role":
        inline = props.get("inlinePolicies")
        for p in inline if isinstance(inline, list) else []:
            if isinstance(p, dict):
                docs.append(p.get("policy"))
    found: list[str] = []
    for doc in docs:
        for st in statements(parse_json(doc)):
            if st.get("Effect", "Allow") != "Allow" or "*" not in _as_list(st.get("Resource")):
                continue
            found.extend(
                a
                for a in _as_list(st.get("Action"))
                if isinstance(a, str) and a.lower() in DATA_PLANE_ACTIONS
            )
    if not found:
        return []
    return [
        f"'{name}' ({resource_type}) grants {sorted(set(found))} on Resource '*': these actions "
        f"can be limited to named resources, and '*' lets the code read or write every queue, "
        f"table, topic or function of the account. Fix: list the ARNs it uses as Resource."
    ]
