"""Standard queue and standard DLQ both at the 14-day maximum retention.

AWS facts: a standard queue's message keeps its original enqueue timestamp in the DLQ (SQS
Developer Guide, "Setting up dead-letter queue retention"), so a DLQ retention equal to the
source's expires a dead-lettered message as soon as it arrives. The source already keeps the
maximum (1209600 s), so the only fix is a shorter source retention.
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
        ("sqs-dlq-retention-exceeds-source", "invoices-dlq"),
        ("sqs-queue-tls-only", "invoices-dlq"),
        ("sqs-queue-tls-only", "invoices"),
    ],
}

topic = aws.sns.Topic("ops", kms_master_key_id=aws.kms.Key("ops-key", policy=TOPIC_KEY_POLICY).arn)
dlq = aws.sqs.Queue("invoices-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "invoices",
    message_retention_seconds=1209600,
    visibility_timeout_seconds=60,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 4}),
)
aws.cloudwatch.MetricAlarm(
    "invoices-dlq-visible",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=300,
    evaluation_periods=1,
    threshold=0,
    comparison_operator="GreaterThanThreshold",
    alarm_actions=[topic.arn],
)
