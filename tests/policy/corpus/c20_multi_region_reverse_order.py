"""Same-named DLQs in two regions declared west-first, with the alarm declared before both.

AWS facts: CloudWatch alarms and SQS metrics are regional (CloudWatch User Guide); the
us-east-1 alarm on QueueName=refunds-dlq covers the us-east-1 DLQ only, whatever the
declaration order: the eu-west-1 DLQ of the same name has no alarm.
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
        ("sqs-dlq-has-alarm", "refunds-dlq-west"),
        ("sqs-queue-tls-only", "refunds-dlq-west"),
        ("sqs-queue-tls-only", "refunds-west"),
        ("sqs-queue-tls-only", "refunds-dlq-east"),
        ("sqs-queue-tls-only", "refunds-east"),
    ],
}

topic = aws.sns.Topic(
    "refunds-alerts",
    region="us-east-1",
    kms_master_key_id=aws.kms.Key("refunds-key", policy=TOPIC_KEY_POLICY).arn,
)
aws.cloudwatch.MetricAlarm(
    "refunds-dlq-depth",
    region="us-east-1",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": "refunds-dlq"},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
for label, region in (("west", "eu-west-1"), ("east", "us-east-1")):
    dlq = aws.sqs.Queue(
        f"refunds-dlq-{label}",
        name="refunds-dlq",
        region=region,
        message_retention_seconds=1209600,
        sqs_managed_sse_enabled=True,
    )
    aws.sqs.Queue(
        f"refunds-{label}",
        name="refunds",
        region=region,
        sqs_managed_sse_enabled=True,
        redrive_policy=pulumi.Output.json_dumps(
            {"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}
        ),
    )
