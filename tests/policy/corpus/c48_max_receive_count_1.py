"""A redrive policy with maxReceiveCount 1, held by a separate RedrivePolicy resource.

AWS facts: with maxReceiveCount 1 the first failed receive (a throttle, a timeout, a cold start)
moves the message to the DLQ (SQS Developer Guide, "Using dead-letter queues"; AWS advises a
count high enough for retries). Literal JSON with known ARNs: a preview reads it as well.
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
        ("sqs-max-receive-count-in-range", "rates-redrive"),
        ("sqs-queue-tls-only", "rates"),
        ("sqs-queue-tls-only", "rates-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "rates-alerts", kms_master_key_id=aws.kms.Key("rates-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "rates-dlq", name="rates-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
queue = aws.sqs.Queue("rates", name="rates", sqs_managed_sse_enabled=True)
aws.sqs.RedrivePolicy(
    "rates-redrive",
    queue_url=queue.id,
    redrive_policy=json.dumps(
        {
            "deadLetterTargetArn": "arn:aws:sqs:eu-west-1:123456789012:rates-dlq",
            "maxReceiveCount": 1,
        }
    ),
)
aws.cloudwatch.MetricAlarm(
    "rates-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": "rates-dlq"},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alerts.arn],
)
