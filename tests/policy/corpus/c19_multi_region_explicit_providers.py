"""Two explicit providers (eu-west-1, us-east-1); the alarm sits with the eu-west-1 provider.

AWS facts: an explicit aws.Provider(region=...) places its resources in that region; CloudWatch
alarms watch metrics of their own region (CloudWatch User Guide). The us-east-1 DLQ has no alarm
in us-east-1. pulumi-aws v7 gives every regional resource a `region` property that the
provider's Check fills from the explicit provider, so a preview knows it too: both modes tell
the two same-named DLQs apart.
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
        ("sqs-queue-tls-only", "dlq-east"),
        ("sqs-queue-tls-only", "work-east"),
        ("sqs-queue-tls-only", "dlq-west"),
        ("sqs-queue-tls-only", "work-west"),
        ("sqs-dlq-has-alarm", "dlq-east"),
    ],
}

east = aws.Provider("east", region="us-east-1")
west = aws.Provider("west", region="eu-west-1")
alarms = aws.sns.Topic(
    "alarms",
    kms_master_key_id=aws.kms.Key(
        "alarms-key", policy=TOPIC_KEY_POLICY, opts=pulumi.ResourceOptions(provider=west)
    ).arn,
    opts=pulumi.ResourceOptions(provider=west),
)
for label, provider in (("east", east), ("west", west)):
    dlq = aws.sqs.Queue(
        f"dlq-{label}",
        name="work-dlq",
        message_retention_seconds=1209600,
        sqs_managed_sse_enabled=True,
        opts=pulumi.ResourceOptions(provider=provider),
    )
    aws.sqs.Queue(
        f"work-{label}",
        name="work",
        sqs_managed_sse_enabled=True,
        redrive_policy=pulumi.Output.json_dumps(
            {"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}
        ),
        opts=pulumi.ResourceOptions(provider=provider),
    )
aws.cloudwatch.MetricAlarm(
    "work-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": "work-dlq"},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alarms.arn],
    opts=pulumi.ResourceOptions(provider=west),
)
