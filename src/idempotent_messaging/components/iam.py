"""IAM policy documents, least privilege: explicit actions on explicit ARNs.

Builders return plain dicts whose values may be ``pulumi.Input``; ``policy_json`` turns them
into one ``Output[str]`` (``pulumi.Output.json_dumps`` resolves nested outputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from idempotent_messaging.runtime import grants

Statement = dict[str, Any]

# Exactly what the runtime calls on each resource (no wildcards), derived per consumer from its
# declaration beside the runtime that makes the calls (runtime/grants.py).
SQS_POLL_ACTIONS = grants.ESM_POLL_ACTIONS
"""What an SQS event source mapping calls with the function's role."""
SQS_SEND_ACTIONS = (grants.SQS_SEND,)  # also authorises SendMessageBatch
LOGS_WRITE_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")
XRAY_WRITE_ACTIONS = ("xray:PutTraceSegments", "xray:PutTelemetryRecords")
KMS_USE_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
"""A customer managed key's use by a producer or consumer of what it encrypts: SQS
(developer guide, "Key management": senders need GenerateDataKey and Decrypt, receivers
Decrypt), SNS ("Setting up topic permissions": publishers need GenerateDataKey and Decrypt),
EventBridge Scheduler (execution role: Decrypt of the schedule, and the DLQ send)."""


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


def service_trust_policy(
    service: str,
    *,
    account_id: pulumi.Input[str] | None = None,
    source_arn: pulumi.Input[str] | None = None,
) -> pulumi.Output[str]:
    """Trust policy JSON letting one AWS service principal assume the role, on behalf of
    ``account_id`` (``aws:SourceAccount``) and, when given, of ``source_arn`` only
    (``aws:SourceArn``): the IAM User Guide's cross-service confused deputy prevention."""
    statement: Statement = {
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": "sts:AssumeRole",
    }
    condition: dict[str, Any] = {}
    if account_id is not None:
        condition["StringEquals"] = {"aws:SourceAccount": account_id}
    if source_arn is not None:
        condition["ArnEquals"] = {"aws:SourceArn": source_arn}
    if condition:
        statement["Condition"] = condition
    return pulumi.Output.json_dumps(document([statement]))


def log_streams_arn(log_group_arn: pulumi.Input[str]) -> pulumi.Output[str]:
    """Log-stream ARN pattern of one log group (log-group ARNs come without the ':*')."""
    return pulumi.Output.from_input(log_group_arn).apply(lambda arn: f"{arn.removesuffix(':*')}:*")


def logs_statement(log_group_arn: pulumi.Input[str]) -> Statement:
    """Write to the function's own (pre-created) log group only; no logs:CreateLogGroup."""
    return allow("WriteOwnLogs", LOGS_WRITE_ACTIONS, [log_streams_arn(log_group_arn)])


def xray_statement() -> Statement:
    # X-Ray's write actions support no resource-level permissions: AWS requires "*" here.
    return allow("WriteTraces", XRAY_WRITE_ACTIONS, ["*"])


def consume_queue_statement(
    queue_arn: pulumi.Input[str], actions: Sequence[str] = SQS_POLL_ACTIONS
) -> Statement:
    """What the SQS event source mapping polls with (it, not the code, reads the queue)."""
    return allow("ConsumeSourceQueue", actions, [queue_arn])


def send_queue_statement(sid: str, queue_arn: pulumi.Input[str]) -> Statement:
    return allow(sid, SQS_SEND_ACTIONS, [queue_arn])


def table_statement(sid: str, table_arn: pulumi.Input[str], actions: Sequence[str]) -> Statement:
    return allow(sid, actions, [table_arn])


def kms_statement(key_arn: pulumi.Input[str], sid: str = "UseDataKey") -> Statement:
    return allow(sid, KMS_USE_ACTIONS, [key_arn])


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
