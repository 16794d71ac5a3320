"""The DLQ alarm's QueueName dimension is the DLQ's ARN instead of its name.

AWS facts: SQS metrics carry the dimension QueueName = the queue's name (SQS Developer Guide,
"Available CloudWatch metrics"); an ARN there matches no metric, so the alarm never fires. In
`up` the ARN is a known string that is not the name. In a preview the ARN is unknown while the
DLQ's name is known: an apply over the known name would be known, so an unknown value derived
from the DLQ cannot be its name, and the preview flags it too.
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
        ("sqs-dlq-has-alarm", "claims-dlq"),
        ("sqs-queue-tls-only", "claims-dlq"),
        ("sqs-queue-tls-only", "claims"),
    ],
}

topic = aws.sns.Topic(
    "claims-alerts", kms_master_key_id=aws.kms.Key("claims-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "claims-dlq", name="claims-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
aws.sqs.Queue(
    "claims",
    name="claims",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
aws.cloudwatch.MetricAlarm(
    "claims-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.arn},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
