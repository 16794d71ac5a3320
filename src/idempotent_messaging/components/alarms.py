"""CloudWatch alarms and the alarm topic they notify.

Every alarm sends to the same actions on ALARM and on OK: an operator learns when a problem
starts and when it is over. Missing data is "not breaching": an idle queue is healthy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from idempotent_messaging import limits, names

from . import iam, protection
from .validation import check_emails

DEFAULT_PERIOD_S = 60
LAMBDA_NAMESPACE = "AWS/Lambda"
SQS_NAMESPACE = "AWS/SQS"

# Key administration without a wildcard action: the account root may manage and delete the key
# (so it can never become unmanageable) but the key grants no data access by itself. Only
# actions a key policy can grant: kms:ListAliases is an IAM-policy-only action (no resource
# type, AWS KMS developer guide, "Permissions reference"), so it is not here.
KMS_ADMIN_ACTIONS = (
    "kms:CancelKeyDeletion",
    "kms:CreateAlias",
    "kms:CreateGrant",
    "kms:DeleteAlias",
    "kms:DescribeKey",
    "kms:DisableKey",
    "kms:DisableKeyRotation",
    "kms:EnableKey",
    "kms:EnableKeyRotation",
    "kms:GetKeyPolicy",
    "kms:GetKeyRotationStatus",
    "kms:ListGrants",
    "kms:ListKeyPolicies",
    "kms:ListResourceTags",
    "kms:PutKeyPolicy",
    "kms:RevokeGrant",
    "kms:ScheduleKeyDeletion",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:UpdateAlias",
    "kms:UpdateKeyDescription",
)


@dataclass(frozen=True)
class AlarmTopic:
    """A created alarm topic, its KMS key, its email subscriptions and (with any) the queue
    that keeps what SNS could not deliver to them, with its alarm."""

    topic: aws.sns.Topic
    key: aws.kms.Key
    subscriptions: list[aws.sns.TopicSubscription]
    undelivered: aws.sqs.Queue | None = None
    undelivered_alarm: aws.cloudwatch.MetricAlarm | None = None


def alarm_topic_key_policy(
    account_id: pulumi.Input[str], partition: pulumi.Input[str] = "aws"
) -> pulumi.Output[str]:
    """Key policy for an alarm topic's key: CloudWatch may encrypt, the account may administer.

    CloudWatch cannot publish to a topic encrypted with the AWS-managed aws/sns key, so an
    encrypted alarm topic needs a customer-managed key whose policy names
    cloudwatch.amazonaws.com (SNS developer guide, "Enable compatibility between event sources
    from AWS services and encrypted topics"). In a KEY policy "Resource": "*" means "this key".
    CloudWatch may use it only for this account's alarms (``aws:SourceAccount``, and
    ``aws:SourceArn`` an alarm of the account: the IAM User Guide's cross-service confused
    deputy prevention); any region, so one helper serves a stack-wide topic too.
    """
    root = pulumi.Output.all(account_id, partition).apply(
        lambda values: f"arn:{values[1]}:iam::{values[0]}:root"
    )
    alarms_of_account = pulumi.Output.all(account_id, partition).apply(
        lambda values: f"arn:{values[1]}:cloudwatch:*:{values[0]}:alarm:*"
    )
    return pulumi.Output.json_dumps(
        iam.document(
            [
                {
                    "Sid": "AccountAdministersKey",
                    "Effect": "Allow",
                    "Principal": {"AWS": root},
                    "Action": list(KMS_ADMIN_ACTIONS),
                    "Resource": "*",
                },
                {
                    "Sid": "CloudWatchPublishesAlarms",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudwatch.amazonaws.com"},
                    "Action": list(iam.KMS_USE_ACTIONS),
                    "Resource": "*",
                    "Condition": {
                        "StringEquals": {"aws:SourceAccount": account_id},
                        "ArnLike": {"aws:SourceArn": alarms_of_account},
                    },
                },
            ]
        )
    )


def create_alarm_topic(
    resource_name: str,
    *,
    topic_name: str,
    account_id: pulumi.Input[str],
    partition: pulumi.Input[str] = "aws",
    emails: Sequence[str] = (),
    tags: Mapping[str, str] | None = None,
    parent: pulumi.Resource | None,
) -> AlarmTopic:
    """An SSE alarm topic (own KMS key, rotation on) with optional email subscriptions.

    ``parent=None`` puts it at the stack's top level (a topic shared by several components).
    """
    opts = pulumi.ResourceOptions(parent=parent)
    full_name = topic_name
    topic_name = names.fit(full_name, names.SNS_TOPIC)
    key = aws.kms.Key(
        f"{resource_name}-key",
        description=f"Encrypts alarm topic {topic_name} (CloudWatch may use it)",
        enable_key_rotation=True,
        deletion_window_in_days=30,
        policy=alarm_topic_key_policy(account_id, partition),
        tags=dict(tags or {}),
        opts=opts,
    )
    topic = aws.sns.Topic(
        resource_name,
        name=topic_name,
        kms_master_key_id=key.arn,
        tags=names.tagged(tags, full_name, topic_name),
        opts=opts,
    )
    if not emails:
        return AlarmTopic(topic=topic, key=key, subscriptions=[])
    # SNS discards a notification it cannot deliver to an address (a bouncing mailbox, an
    # unconfirmed or deleted subscription) once the email protocol's delivery policy is spent,
    # unless the subscription has a dead-letter queue (SNS Developer Guide, "Amazon SNS
    # dead-letter queues"). So every address redrives into one queue of undelivered alarms,
    # kept 14 days, which only this topic may send to; its own alarm notifies the same topic
    # (and so the same addresses): when those cannot receive either, the alarm's state in the
    # console and the queue's messages are what remains, and both say what was missed.
    undelivered = _undelivered_queue(
        f"{resource_name}-undelivered", f"{full_name}-undelivered", topic, tags, parent
    )
    subscriptions = [
        aws.sns.TopicSubscription(
            f"{resource_name}-email-{index}",
            topic=topic.arn,
            protocol="email",
            endpoint=email,
            redrive_policy=undelivered.arn.apply(
                lambda arn: json.dumps({"deadLetterTargetArn": arn})
            ),
            opts=opts,
        )
        for index, email in enumerate(emails)
    ]
    undelivered_alarm = metric_alarm(
        f"{resource_name}-undelivered-visible",
        alarm_name=f"{full_name}-undelivered-visible",
        description="An alarm notification could not be emailed: its copy waits in this queue "
        "(14 days). Check the subscriptions (confirmed? bouncing?) and read the copies.",
        namespace=SQS_NAMESPACE,
        metric_name="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": undelivered.name},
        statistic="Maximum",
        comparison_operator="GreaterThanOrEqualToThreshold",
        threshold=1,
        actions=[topic.arn],
        tags=tags,
        parent=parent,
    )
    return AlarmTopic(
        topic=topic,
        key=key,
        subscriptions=subscriptions,
        undelivered=undelivered,
        undelivered_alarm=undelivered_alarm,
    )


def _undelivered_queue(
    resource_name: str,
    full_name: str,
    topic: aws.sns.Topic,
    tags: Mapping[str, str] | None,
    parent: pulumi.Resource | None,
) -> aws.sqs.Queue:
    """The alarm topic's subscription DLQ: SSE-SQS (SNS may send to it, unlike one encrypted
    with the AWS-managed aws/sqs key), 14 days, TLS only, sends only from ``topic``."""
    opts = pulumi.ResourceOptions(parent=parent)
    queue_name = names.fit(full_name, names.SQS_QUEUE)
    queue = aws.sqs.Queue(
        resource_name,
        name=queue_name,
        sqs_managed_sse_enabled=True,
        message_retention_seconds=limits.SQS_MAX_RETENTION_S,
        # Copies of notifications whose alarms keep their own state and history: declared
        # disposable (protection.py), never a reason to block a replacement of the stack.
        tags=names.tagged(
            protection.data_tags(tags, protection.ROLE_UNDELIVERED_ALARMS, protect_data=False),
            full_name,
            queue_name,
        ),
        opts=opts,
    )
    tls_only = iam.deny_insecure_transport("sqs", queue.arn)
    aws.sqs.QueuePolicy(
        f"{resource_name}-policy",
        queue_url=queue.url,
        policy=pulumi.Output.json_dumps(
            iam.document(
                [
                    *tls_only["Statement"],
                    {
                        "Sid": "AlarmTopicDeadLetters",
                        "Effect": "Allow",
                        "Principal": {"Service": "sns.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": queue.arn,
                        "Condition": {"ArnEquals": {"aws:SourceArn": topic.arn}},
                    },
                ]
            )
        ),
        opts=opts,
    )
    return queue


def create_stack_alarm_topic(
    resource_name: str,
    *,
    topic_name: str,
    emails: Sequence[str] = (),
    tags: Mapping[str, str] | None = None,
) -> AlarmTopic:
    """One alarm topic for a whole stack, to pass as ``alarm_topic_arn`` to every component.

    Each created topic subscribes every address again, so on-call would confirm (and receive)
    one subscription per component; a shared topic needs one confirmation per address. The
    key policy names the deploying account (and its partition), read with
    ``aws.get_caller_identity``.
    """
    check_emails("alarm_emails", emails)  # before any resource, like the components' args
    identity = aws.get_caller_identity_output()
    return create_alarm_topic(
        resource_name,
        topic_name=topic_name,
        account_id=identity.account_id,
        partition=identity.arn.apply(lambda arn: arn.split(":")[1]),
        emails=emails,
        tags=tags,
        parent=None,
    )


def metric_alarm(
    resource_name: str,
    *,
    alarm_name: str,
    description: str,
    namespace: str,
    metric_name: str,
    dimensions: Mapping[str, pulumi.Input[str]],
    statistic: str,
    comparison_operator: str,
    threshold: float,
    actions: Sequence[pulumi.Input[str]],
    period: int = DEFAULT_PERIOD_S,
    evaluation_periods: int = 1,
    tags: Mapping[str, str] | None = None,
    parent: pulumi.Resource | None,
) -> aws.cloudwatch.MetricAlarm:
    """One alarm with the same actions on ALARM and OK."""
    if not actions:
        raise ValueError(f"alarm {alarm_name!r}: an alarm without actions notifies nobody")
    physical_name = names.fit(alarm_name, names.CLOUDWATCH_ALARM)
    return aws.cloudwatch.MetricAlarm(
        resource_name,
        name=physical_name,
        alarm_description=description,
        namespace=namespace,
        metric_name=metric_name,
        dimensions=dict(dimensions),
        statistic=statistic,
        comparison_operator=comparison_operator,
        threshold=threshold,
        period=period,
        evaluation_periods=evaluation_periods,
        treat_missing_data="notBreaching",
        alarm_actions=list(actions),
        ok_actions=list(actions),
        tags=names.tagged(tags, alarm_name, physical_name),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def dlq_visible_alarm(
    resource_name: str,
    *,
    alarm_name: str,
    dlq_name: pulumi.Input[str],
    actions: Sequence[pulumi.Input[str]],
    tags: Mapping[str, str] | None = None,
    parent: pulumi.Resource,
) -> aws.cloudwatch.MetricAlarm:
    """DLQ ApproximateNumberOfMessagesVisible >= 1: one dead-lettered message is news."""
    return metric_alarm(
        resource_name,
        alarm_name=alarm_name,
        description="A message reached the dead-letter queue: inspect, fix, then redrive.",
        namespace=SQS_NAMESPACE,
        metric_name="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": dlq_name},
        statistic="Maximum",
        comparison_operator="GreaterThanOrEqualToThreshold",
        threshold=1,
        actions=actions,
        tags=tags,
        parent=parent,
    )


CONFLICT_METRIC = "conflicting_duplicate"
"""The consumer runtime's EMF count of re-sent event ids whose content differs
(``runtime.env.CONFLICTING_DUPLICATE``; tests/infra keep the two equal)."""
SERVICE_DIMENSION = "service"
"""The dimension Powertools Metrics adds to every metric: the function's service name."""


def conflict_alarm(
    resource_name: str,
    *,
    alarm_name: str,
    metrics_namespace: str,
    service_name: str,
    actions: Sequence[pulumi.Input[str]],
    tags: Mapping[str, str] | None = None,
    parent: pulumi.Resource,
) -> aws.cloudwatch.MetricAlarm:
    """The runtime's ``conflicting_duplicate`` count > 0: an event id came again with other
    content; the first effect stood and the copy is in the DLQ (a producer bug to look at)."""
    return metric_alarm(
        resource_name,
        alarm_name=alarm_name,
        description=(
            "An event id was re-sent with different content: the first effect stands, the "
            "copy is in the DLQ (failure_kind conflicting_duplicate). Ask the producer."
        ),
        namespace=metrics_namespace,
        metric_name=CONFLICT_METRIC,
        dimensions={SERVICE_DIMENSION: service_name},
        statistic="Sum",
        comparison_operator="GreaterThanThreshold",
        threshold=0,
        actions=actions,
        tags=tags,
        parent=parent,
    )


def oldest_message_age_alarm(
    resource_name: str,
    *,
    alarm_name: str,
    queue_name: pulumi.Input[str],
    threshold_seconds: int,
    actions: Sequence[pulumi.Input[str]],
    tags: Mapping[str, str] | None = None,
    parent: pulumi.Resource,
) -> aws.cloudwatch.MetricAlarm:
    """Source ApproximateAgeOfOldestMessage > threshold: the consumer is falling behind."""
    return metric_alarm(
        resource_name,
        alarm_name=alarm_name,
        description=(
            f"The oldest message is older than {threshold_seconds} s: the consumer is stuck or "
            "too slow, and messages will expire at the retention period."
        ),
        namespace=SQS_NAMESPACE,
        metric_name="ApproximateAgeOfOldestMessage",
        dimensions={"QueueName": queue_name},
        statistic="Maximum",
        comparison_operator="GreaterThanThreshold",
        threshold=threshold_seconds,
        actions=actions,
        tags=tags,
        parent=parent,
    )


def function_alarms(
    resource_name: str,
    *,
    alarm_name_prefix: str,
    function_name: pulumi.Input[str],
    actions: Sequence[pulumi.Input[str]],
    tags: Mapping[str, str] | None = None,
    parent: pulumi.Resource,
) -> list[aws.cloudwatch.MetricAlarm]:
    """Function Errors >= 1 and Throttles >= 1 (per minute)."""
    alarms = []
    for metric, why in (
        ("Errors", "The function failed an invocation: a whole batch returns to the queue."),
        ("Throttles", "The function was throttled: raise reserved concurrency or lower "
                      "maximum_concurrency on the mapping."),
    ):  # fmt: skip
        alarms.append(
            metric_alarm(
                f"{resource_name}-{metric.lower()}",
                alarm_name=f"{alarm_name_prefix}-{metric.lower()}",
                description=why,
                namespace=LAMBDA_NAMESPACE,
                metric_name=metric,
                dimensions={"FunctionName": function_name},
                statistic="Sum",
                comparison_operator="GreaterThanOrEqualToThreshold",
                threshold=1,
                actions=actions,
                tags=tags,
                parent=parent,
            )
        )
    return alarms
