"""An age alarm whose threshold lies beyond the DLQ's retention never fires.

AWS facts: SQS deletes a message once it is older than the queue's retention period (here
4 days, the default, 345600 s), so ApproximateAgeOfOldestMessage never exceeds it; an alarm
at 400000 s cannot fire (SQS Developer Guide, message retention and CloudWatch metrics). The
DLQ therefore has no working alarm. The DLQ retention (4 d default) also does not exceed the
source's 4 d default retention: standard queues keep the original enqueue time.
"""

import json

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
        ("sqs-dlq-has-alarm", "audit-dlq"),
        ("sqs-dlq-retention-exceeds-source", "audit-dlq"),
        ("sqs-queue-tls-only", "audit-dlq"),
        ("sqs-queue-tls-only", "audit"),
    ],
}

topic = aws.sns.Topic(
    "audit-alerts", kms_master_key_id=aws.kms.Key("audit-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("audit-dlq", sqs_managed_sse_enabled=True)
aws.sqs.Queue(
    "audit",
    sqs_managed_sse_enabled=True,
    redrive_policy=dlq.arn.apply(
        lambda arn: '{"deadLetterTargetArn": "' + arn + '", "maxReceiveCount": 3}'
    ),
)
aws.cloudwatch.MetricAlarm(
    "audit-dlq-age",
    namespace="AWS/SQS",
    metric_name="ApproximateAgeOfOldestMessage",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=300,
    evaluation_periods=1,
    threshold=400000,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
