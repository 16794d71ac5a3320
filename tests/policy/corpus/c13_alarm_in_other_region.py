"""The DLQ lives in us-east-1 (pulumi-aws v7 `region` argument), its alarm in eu-west-1.

AWS facts: CloudWatch metrics are regional: an alarm in eu-west-1 on QueueName=X watches the
queue X of eu-west-1, not the one in us-east-1 (CloudWatch User Guide, "Regions and
namespaces"; SQS publishes metrics in the queue's region). The us-east-1 DLQ has no alarm. Every
resource states its region explicitly, so a preview knows it as well.
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


REGION = "eu-west-1"
EXPECTED = {
    "both": [
        ("sqs-dlq-has-alarm", "exports-dlq"),
        ("sqs-queue-tls-only", "exports-dlq"),
        ("sqs-queue-tls-only", "exports"),
    ],
}

topic = aws.sns.Topic(
    "exports-alerts",
    region="eu-west-1",
    kms_master_key_id=aws.kms.Key("exports-key", policy=TOPIC_KEY_POLICY).arn,
)
dlq = aws.sqs.Queue(
    "exports-dlq",
    name="exports-dlq",
    region="us-east-1",
    message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True,
)
aws.sqs.Queue(
    "exports",
    name="exports",
    region="us-east-1",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
aws.cloudwatch.MetricAlarm(
    "exports-dlq-depth",
    region="eu-west-1",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": "exports-dlq"},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
