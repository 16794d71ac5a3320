"""FIFO source keeping 14 days with a FIFO DLQ keeping 4 days: correct for FIFO.

AWS facts: when SQS moves a FIFO message to its DLQ it resets the enqueue timestamp (SQS
Developer Guide, "Setting up dead-letter queue retention"), so the DLQ's 4 days count from the
move; no retention violation. The DLQ is alarmed on its oldest message age (1 day < 4 days).
"""

import json

import pulumi
import pulumi_aws as aws

# The key lets CloudWatch alarms and EventBridge publish to the encrypted topic (a default
# key policy admits only the account's IAM principals).
TOPIC_KEY_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Account",
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                "Action": "kms:*",
                "Resource": "*",
            },
            {
                "Sid": "ServicesPublishToTheEncryptedTopic",
                "Effect": "Allow",
                "Principal": {"Service": ["cloudwatch.amazonaws.com", "events.amazonaws.com"]},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                "Resource": "*",
            },
        ],
    }
)


EXPECTED = {
    "both": [
        ("sqs-queue-tls-only", "bookings"),
        ("sqs-queue-tls-only", "bookings-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "bookings-alerts", kms_master_key_id=aws.kms.Key("bookings-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "bookings-dlq",
    fifo_queue=True,
    name="bookings-dlq.fifo",
    message_retention_seconds=345600,
    sqs_managed_sse_enabled=True,
)
aws.sqs.Queue(
    "bookings",
    fifo_queue=True,
    name="bookings.fifo",
    content_based_deduplication=True,
    message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
aws.cloudwatch.MetricAlarm(
    "bookings-dlq-age",
    namespace="AWS/SQS",
    metric_name="ApproximateAgeOfOldestMessage",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=300,
    evaluation_periods=1,
    threshold=86400,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alerts.arn],
)
