"""DLQs whose redrive-allow policy refuses the source queue that names them.

AWS facts: a queue's RedriveAllowPolicy says which source queues may name it as their
dead-letter queue: allowAll (the default), denyAll, or byQueue with up to 10 sourceQueueArns
(SQS API reference, SetQueueAttributes, RedriveAllowPolicy); SQS refuses a source's
RedrivePolicy that names a DLQ refusing it, so `up` fails. `archive-dlq` denies all sources;
`billing-dlq` allows only `payments` (a literal ARN), not `billing`, whose name is known in a
preview too. `audit-dlq` allows `audit` through an aws.sqs.RedriveAllowPolicy over the source's
ARN: correct, and in a preview undecided (the ARN is unknown) and never reported.
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sns-topic-encrypted", "redrive-alarms"),
        ("sqs-dlq-allows-redrive-from-source", "archive"),
        ("sqs-dlq-allows-redrive-from-source", "billing"),
        ("sqs-queue-tls-only", "archive"),
        ("sqs-queue-tls-only", "archive-dlq"),
        ("sqs-queue-tls-only", "billing"),
        ("sqs-queue-tls-only", "billing-dlq"),
        ("sqs-queue-tls-only", "audit"),
        ("sqs-queue-tls-only", "audit-dlq"),
    ],
}


def redrive(dlq: aws.sqs.Queue) -> pulumi.Output:
    return dlq.arn.apply(lambda arn: json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5}))


alarms = aws.sns.Topic("redrive-alarms")


def alarmed(name: str, dlq: aws.sqs.Queue) -> None:
    aws.cloudwatch.MetricAlarm(
        f"{name}-depth",
        namespace="AWS/SQS",
        metric_name="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": dlq.name},
        statistic="Maximum",
        period=60,
        evaluation_periods=1,
        threshold=1,
        comparison_operator="GreaterThanOrEqualToThreshold",
        alarm_actions=[alarms.arn],
    )


archive_dlq = aws.sqs.Queue(
    "archive-dlq",
    message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True,
    redrive_allow_policy=json.dumps({"redrivePermission": "denyAll"}),
)
aws.sqs.Queue("archive", sqs_managed_sse_enabled=True, redrive_policy=redrive(archive_dlq))
alarmed("archive-dlq", archive_dlq)

billing_dlq = aws.sqs.Queue(
    "billing-dlq",
    message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True,
    redrive_allow_policy=json.dumps(
        {
            "redrivePermission": "byQueue",
            "sourceQueueArns": ["arn:aws:sqs:eu-west-1:123456789012:payments"],
        }
    ),
)
aws.sqs.Queue(
    "billing", name="billing", sqs_managed_sse_enabled=True, redrive_policy=redrive(billing_dlq)
)
alarmed("billing-dlq", billing_dlq)

audit_dlq = aws.sqs.Queue(
    "audit-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
audit = aws.sqs.Queue("audit", sqs_managed_sse_enabled=True, redrive_policy=redrive(audit_dlq))
aws.sqs.RedriveAllowPolicy(
    "audit-dlq-allow",
    queue_url=audit_dlq.id,
    redrive_allow_policy=pulumi.Output.json_dumps(
        {"redrivePermission": "byQueue", "sourceQueueArns": [audit.arn]}
    ),
)
alarmed("audit-dlq", audit_dlq)
