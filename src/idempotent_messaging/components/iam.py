"""IAM policy documents, least privilege: explicit actions on explicit ARNs.

Builders return plain dicts whose values may be ``pulumi.Input``; ``policy_json`` turns them
into one ``Output[str]`` (``pulumi.Output.json_dumps`` resolves nested outputs).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi

from idempotent_messaging.runtime import env

Statement = dict[str, Any]

# Exactly what the runtime calls on each resource (no wildcards).
SQS_CONSUME_ACTIONS = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
)
SQS_SEND_ACTIONS = ("sqs:SendMessage",)  # also authorises SendMessageBatch
# Exactly what the runtime calls on each table, declared beside the runtime that calls it
# (TransactWriteItems and BatchExecuteStatement are authorised per item/statement action).
DYNAMODB_STATE_ACTIONS = env.STATE_TABLE_ACTIONS
DYNAMODB_BUSINESS_ACTIONS = env.BUSINESS_TABLE_ACTIONS
SNS_PUBLISH_ACTIONS = ("sns:Publish",)  # also authorises PublishBatch
LOGS_WRITE_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")
XRAY_WRITE_ACTIONS = ("xray:PutTraceSegments", "xray:PutTelemetryRecords")
KMS_USE_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")


def allow(sid: str, actions: Sequence[str], resources: Sequence[pulumi.Input[str]]) -> Statement:
    """One Allow statement. Refuses wildcard actions and empty resource lists."""
    for action in actions:
        if "*" in action:
            raise ValueError(f"action={action!r}: wildcard actions are not least privilege")
    if not resources:
        raise ValueError(f"sid={sid!r}: a statement needs at least one resource")
    return {
        "Sid": sid,
        "Effect": "Allow",
        "Action": sorted(set(actions)),
        "Resource": list(resources),
    }


def document(statements: Sequence[Statement]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def policy_json(statements: Sequence[Statement]) -> pulumi.Output[str]:
    """The policy document as JSON, resolving any Output inside it."""
    return pulumi.Output.json_dumps(document(statements))


def service_trust_policy(service: str) -> str:
    """Trust policy JSON letting one AWS service principal assume the role."""
    return json.dumps(
        document(
            [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": service},
                    "Action": "sts:AssumeRole",
                }
            ]
        )
    )


def log_streams_arn(log_group_arn: pulumi.Input[str]) -> pulumi.Output[str]:
    """Log-stream ARN pattern of one log group (log-group ARNs come without the ':*')."""
    return pulumi.Output.from_input(log_group_arn).apply(lambda arn: f"{arn.removesuffix(':*')}:*")


def logs_statement(log_group_arn: pulumi.Input[str]) -> Statement:
    """Write to the function's own (pre-created) log group only; no logs:CreateLogGroup."""
    return allow("WriteOwnLogs", LOGS_WRITE_ACTIONS, [log_streams_arn(log_group_arn)])


def xray_statement() -> Statement:
    # X-Ray's write actions support no resource-level permissions: AWS requires "*" here.
    return allow("WriteTraces", XRAY_WRITE_ACTIONS, ["*"])


def consume_queue_statement(queue_arn: pulumi.Input[str]) -> Statement:
    return allow("ConsumeSourceQueue", SQS_CONSUME_ACTIONS, [queue_arn])


def send_queue_statement(sid: str, queue_arn: pulumi.Input[str]) -> Statement:
    return allow(sid, SQS_SEND_ACTIONS, [queue_arn])


def table_statement(
    sid: str, table_arn: pulumi.Input[str], actions: Sequence[str] = DYNAMODB_STATE_ACTIONS
) -> Statement:
    return allow(sid, actions, [table_arn])


def publish_statement(sid: str, topic_arn: pulumi.Input[str]) -> Statement:
    return allow(sid, SNS_PUBLISH_ACTIONS, [topic_arn])


def kms_statement(key_arn: pulumi.Input[str]) -> Statement:
    return allow("UseDataKey", KMS_USE_ACTIONS, [key_arn])


def deny_insecure_transport(service_prefix: str, resource_arn: pulumi.Input[str]) -> dict[str, Any]:
    """Resource policy denying every request made without TLS.

    A Deny, so the service-wide action list is the SAFE choice: it cannot grant anything and
    it leaves no action unprotected.
    """
    return document(
        [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": f"{service_prefix}:*",
                "Resource": resource_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ]
    )
