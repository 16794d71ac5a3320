"""A DLQ alarm with its actions disabled.

AWS facts: with ActionsEnabled=false an alarm changes state but runs none of its actions
(CloudWatch API Reference, PutMetricAlarm ActionsEnabled); nobody is notified when the DLQ
receives a message.
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
        ("sqs-dlq-has-alarm", "fx-dlq"),
        ("sqs-queue-tls-only", "fx"),
        ("sqs-queue-tls-only", "fx-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "fx-alerts", kms_master_key_id=aws.kms.Key("fx-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("fx-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
aws.sqs.Queue(
    "fx",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
aws.cloudwatch.MetricAlarm(
    "fx-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    actions_enabled=False,
    alarm_actions=[alerts.arn],
)
