"""A source queue and its dead-letter queue, wired and locked down.

Same type for both (FIFO -> FIFO DLQ), inline redrive policy on the source, redrive-allow on
the DLQ naming only the source, SSE (SQS-managed unless a KMS key is given) and a policy on
each queue denying requests without TLS; a consumer's DLQ policy also denies the native move
task (``deny_message_move_statement``) unless the consumer opts out. Both queues hold
messages: each carries its data role tag, and with ``protect_data`` Pulumi protection and
retain-on-delete (protection.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from idempotent_messaging import limits, names

from . import iam
from .protection import ROLE_DEAD_LETTER_QUEUE, ROLE_SOURCE_QUEUE, data_options, data_tags

FIFO_SUFFIX = names.FIFO_SUFFIX


@dataclass(frozen=True, kw_only=True)
class QueuePairSpec:
    queue_name: str
    """Physical source-queue name without ``.fifo``; the DLQ is ``<queue_name>-dlq``."""
    fifo: bool
    content_based_deduplication: bool
    visibility_timeout_seconds: int
    message_retention_seconds: int
    dlq_message_retention_seconds: int
    max_receive_count: int
    protect_data: bool
    """Protect and retain both queues (protection.data_options): they hold messages."""
    queue_role: str = ROLE_SOURCE_QUEUE
    """Data role tag of the source queue (protection.DATA_ROLES)."""
    dlq_role: str = ROLE_DEAD_LETTER_QUEUE
    """Data role tag of the dead-letter queue."""
    high_throughput: bool = False
    """FIFO only: per-message-group deduplication and throughput limit, on both queues (a
    burst of quarantines from a high-throughput source must not throttle on its DLQ)."""
    kms_master_key_id: pulumi.Input[str] | None = None
    tags: Mapping[str, str] | None = None
    deny_native_redrive: bool = False
    """Deny ``sqs:StartMessageMoveTask`` on the DLQ (``deny_message_move_statement``). False
    here: a queue pair whose DLQ holds no idempotent consumer's messages (the fan-out's
    control queue) loses nothing to the move task; the consumer sets it."""


@dataclass(frozen=True)
class QueuePair:
    queue: aws.sqs.Queue
    dlq: aws.sqs.Queue
    redrive_allow: aws.sqs.RedriveAllowPolicy
    policies: list[aws.sqs.QueuePolicy]


def physical_queue_name(base: str, fifo: bool) -> str:
    """``base`` (+ ``.fifo``) fitted to SQS's 80 characters, ``.fifo`` included (names.fit)."""
    return names.fit(base, names.SQS_QUEUE, fifo=fifo)


def redrive_policy(dlq_arn: str, max_receive_count: int) -> str:
    return json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count})


def deny_message_move_statement(dlq_arn: pulumi.Input[str]) -> dict[str, object]:
    """Deny the native move task (``sqs:StartMessageMoveTask``, which the SQS API permissions
    reference authorises on the source queue of the move: the DLQ) to every principal: the
    console's "Start DLQ redrive" and ``ops redrive --method native``.

    Why: "All redriven messages are considered new messages with a new messageID and
    enqueueTime" (SQS Developer Guide, "Learn how to configure a dead-letter queue redrive").
    A copy SQS dead-lettered itself (a death on its last receive) carries none of the
    runtime's attributes, so its SentTimestamp is the only proof of its age; the move task
    replaces it, the copy can then pass the dedup horizon after its claim expired and apply
    its effect twice (the protocol model's ``native-move`` trace, docs/model.md).
    ``ops redrive`` (receive, send, delete) carries or establishes each message's first-seen
    time instead (docs/operations.md)."""
    return {
        "Sid": "DenyNativeMoveTask",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sqs:StartMessageMoveTask",
        "Resource": dlq_arn,
    }


def queue_policy(
    resource_name: str,
    queue: aws.sqs.Queue,
    *,
    parent: pulumi.Resource,
    deny_native_redrive: bool = False,
) -> aws.sqs.QueuePolicy:
    """The queue's policy: deny every request made without TLS (aws:SecureTransport false)
    and, with ``deny_native_redrive``, the native move task out of it."""
    document = iam.deny_insecure_transport("sqs", queue.arn)
    if deny_native_redrive:
        document["Statement"].append(deny_message_move_statement(queue.arn))
    return aws.sqs.QueuePolicy(
        resource_name,
        queue_url=queue.url,
        policy=pulumi.Output.json_dumps(document),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def tls_only_policy(
    resource_name: str, queue: aws.sqs.Queue, *, parent: pulumi.Resource
) -> aws.sqs.QueuePolicy:
    """The queue's policy: deny every request made without TLS (aws:SecureTransport false)."""
    return queue_policy(resource_name, queue, parent=parent)


def create_queue_pair(
    resource_name: str, spec: QueuePairSpec, *, parent: pulumi.Resource
) -> QueuePair:
    opts = pulumi.ResourceOptions(parent=parent)
    tags = dict(spec.tags or {})
    data_opts = data_options(parent, spec.protect_data)
    kms = spec.kms_master_key_id
    # High-throughput FIFO = both settings together (AWS's definition of the mode).
    high_throughput = spec.fifo and spec.high_throughput
    dedup_scope = "messageGroup" if high_throughput else None
    throughput_limit = "perMessageGroupId" if high_throughput else None
    dlq_full = f"{spec.queue_name}-dlq"
    dlq_name = physical_queue_name(dlq_full, spec.fifo)
    queue_name = physical_queue_name(spec.queue_name, spec.fifo)
    dlq = aws.sqs.Queue(
        f"{resource_name}-dlq",
        name=dlq_name,
        message_retention_seconds=spec.dlq_message_retention_seconds,
        # The largest SQS allows, so never smaller than the source's: a copy of any source
        # message still fits with the runtime's reason attributes (SQS counts them).
        max_message_size=limits.SQS_MAX_MESSAGE_BYTES,
        # Quarantined and redriven messages are handled by people and tools, not Lambda.
        visibility_timeout_seconds=spec.visibility_timeout_seconds,
        tags=data_tags(
            names.tagged(tags, dlq_full, dlq_name, fifo=spec.fifo),
            spec.dlq_role,
            protect_data=spec.protect_data,
        ),
        opts=data_opts,
        fifo_queue=True if spec.fifo else None,
        deduplication_scope=dedup_scope,
        fifo_throughput_limit=throughput_limit,
        # SSE always: SQS-managed keys unless a KMS key is given.
        sqs_managed_sse_enabled=True if kms is None else None,
        kms_master_key_id=kms,
        kms_data_key_reuse_period_seconds=300 if kms is not None else None,
    )
    queue = aws.sqs.Queue(
        resource_name,
        name=queue_name,
        message_retention_seconds=spec.message_retention_seconds,
        visibility_timeout_seconds=spec.visibility_timeout_seconds,
        content_based_deduplication=spec.content_based_deduplication if spec.fifo else None,
        redrive_policy=dlq.arn.apply(lambda arn: redrive_policy(arn, spec.max_receive_count)),
        # Long polling: fewer empty receives for tools that poll the queue directly.
        receive_wait_time_seconds=20,
        tags=data_tags(
            names.tagged(tags, spec.queue_name, queue_name, fifo=spec.fifo),
            spec.queue_role,
            protect_data=spec.protect_data,
        ),
        opts=data_opts,
        fifo_queue=True if spec.fifo else None,
        deduplication_scope=dedup_scope,
        fifo_throughput_limit=throughput_limit,
        # SSE always: SQS-managed keys unless a KMS key is given.
        sqs_managed_sse_enabled=True if kms is None else None,
        kms_master_key_id=kms,
        kms_data_key_reuse_period_seconds=300 if kms is not None else None,
    )
    redrive_allow = aws.sqs.RedriveAllowPolicy(
        f"{resource_name}-dlq-redrive-allow",
        queue_url=dlq.url,
        redrive_allow_policy=queue.arn.apply(
            lambda arn: json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [arn]})
        ),
        opts=opts,
    )
    policies = [
        tls_only_policy(f"{resource_name}-tls-only", queue, parent=parent),
        # Same logical name as before the deny: an update of the policy, not a replacement.
        queue_policy(
            f"{resource_name}-dlq-tls-only",
            dlq,
            parent=parent,
            deny_native_redrive=spec.deny_native_redrive,
        ),
    ]
    return QueuePair(queue=queue, dlq=dlq, redrive_allow=redrive_allow, policies=policies)
