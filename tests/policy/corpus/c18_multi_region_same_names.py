"""The same pipeline in two regions with the same queue names; only eu-west-1's DLQ has an alarm.

AWS facts: SQS queue names are unique per account and region, and CloudWatch metrics and alarms
are regional (SQS Developer Guide, queue naming; CloudWatch User Guide). The eu-west-1 alarm on
QueueName=payments-dlq watches the eu-west-1 DLQ only; the us-east-1 DLQ of the same name has
none. Resources are linked by region and name, never by name alone, whatever the order in which
they are declared (the us-east-1 queues come first here).
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
        ("sqs-dlq-has-alarm", "payments-dlq-use1"),
        ("sqs-queue-tls-only", "payments-dlq-use1"),
        ("sqs-queue-tls-only", "payments-use1"),
        ("sqs-queue-tls-only", "payments-dlq-euw1"),
        ("sqs-queue-tls-only", "payments-euw1"),
    ],
}

queues = {}
for suffix, region in (("use1", "us-east-1"), ("euw1", "eu-west-1")):
    dlq = aws.sqs.Queue(
        f"payments-dlq-{suffix}",
        name="payments-dlq",
        region=region,
        message_retention_seconds=1209600,
        sqs_managed_sse_enabled=True,
    )
    aws.sqs.Queue(
        f"payments-{suffix}",
        name="payments",
        region=region,
        sqs_managed_sse_enabled=True,
        redrive_policy=pulumi.Output.json_dumps(
            {"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}
        ),
    )
    queues[region] = dlq

topic = aws.sns.Topic(
    "payments-alerts",
    region="eu-west-1",
    kms_master_key_id=aws.kms.Key("payments-key", policy=TOPIC_KEY_POLICY).arn,
)
aws.cloudwatch.MetricAlarm(
    "payments-dlq-depth",
    region="eu-west-1",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": "payments-dlq"},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
