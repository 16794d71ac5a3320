"""A DLQ alarm in a custom namespace watches a metric SQS never publishes.

AWS facts: SQS publishes its queue metrics in the `AWS/SQS` namespace only (SQS Developer
Guide, "Available CloudWatch metrics"); an alarm on `Custom/Queues` with the same metric name
and dimension stays INSUFFICIENT_DATA unless someone publishes there. The DLQ has no working
alarm.
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
        ("sqs-dlq-has-alarm", "billing-dlq"),
        ("sqs-queue-tls-only", "billing-dlq"),
        ("sqs-queue-tls-only", "billing"),
    ],
}

topic = aws.sns.Topic(
    "billing-alerts", kms_master_key_id=aws.kms.Key("billing-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("billing-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
aws.sqs.Queue(
    "billing",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
aws.cloudwatch.MetricAlarm(
    "billing-dlq-depth",
    namespace="Custom/Queues",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
