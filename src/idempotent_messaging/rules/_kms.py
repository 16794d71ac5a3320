"""Whether an AWS service may use the KMS key of an encrypted SNS topic or SQS queue.

A service that publishes to an encrypted topic (CloudWatch alarm actions, EventBridge, S3) or
sends to an encrypted queue (SNS, EventBridge, S3) calls kms:GenerateDataKey and kms:Decrypt
with the key as that service, so the key policy must allow its service principal (SNS
Developer Guide, "Encryption at rest": "Enable compatibility between event sources from AWS
services and encrypted topics"; SQS Developer Guide, "Key management": "Enable compatibility
between AWS services such as Amazon EventBridge, Amazon S3, and Amazon SNS and encrypted
queues"). The AWS-managed `alias/aws/sns` and `alias/aws/sqs` keys' policies cannot be changed,
and the default policy of a customer-managed key grants only the account's IAM principals:
neither lets a service in. SSE-SQS (`sqs_managed_sse_enabled`) uses no KMS key and admits them.
"""

from __future__ import annotations

import re
from typing import Any

from ._documents import allows_delivery
from .graph import Graph, Node, parse_json
from .values import is_unknown

KEY = "aws:kms/key:Key"
ALIAS = "aws:kms/alias:Alias"
AWS_MANAGED_MESSAGING_KEY = re.compile(r"(^|:)alias/aws/(sns|sqs)$")


def _key_of(graph: Graph, topic: Node, ref: Any) -> Node | None:
    deps = graph.dep_nodes(topic, "kmsMasterKeyId", (KEY, ALIAS))
    candidates = list(deps)
    if isinstance(ref, str) and not is_unknown(ref):
        candidates += [
            n
            for n in graph.of_type(KEY, ALIAS)
            if ref in (n.get("arn"), n.get("keyId"), n.get("id"), n.get("name"))
        ]
    for node in candidates:
        if node.type == KEY:
            return node
        target = graph.resolve(node, "targetKeyId", node.get("targetKeyId"), (KEY,))
        if isinstance(target, Node):
            return target
    return None


def service_may_use_topic_key(graph: Graph, topic: Node, service: str) -> bool | None:
    """False when the topic's (or queue's) key certainly refuses `service`; True when it is not
    KMS-encrypted or its key allows the service; None when it cannot be told."""
    ref = topic.get("kmsMasterKeyId")
    if ref is None or ref == "":
        return True
    if isinstance(ref, str) and not is_unknown(ref) and AWS_MANAGED_MESSAGING_KEY.search(ref):
        return False
    key = _key_of(graph, topic, ref)
    if key is None:
        return None  # a key outside the stack (or not linked): its policy is not known here
    policy = key.get("policy")
    if policy is None:
        return False  # the default key policy: the account's IAM principals only
    doc = parse_json(policy)
    if is_unknown(doc):
        return None
    return allows_delivery([doc], service, "kms:GenerateDataKey", None)


service_may_use_key = service_may_use_topic_key  # topics and queues name their key alike
