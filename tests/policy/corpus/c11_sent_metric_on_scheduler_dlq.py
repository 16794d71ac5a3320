"""A Scheduler DLQ watched by NumberOfMessagesSent: valid, the scheduler sends with the API.

AWS facts: EventBridge Scheduler delivers an event that exhausted its retries to the target's
dead-letter queue with SendMessage (Scheduler User Guide, "Configuring a dead-letter queue"),
which NumberOfMessagesSent counts (SQS Developer Guide, CloudWatch metrics). The schedule has a
bounded retry policy and a DLQ; its target is an SQS queue (not a Lambda function).
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
        ("sqs-queue-tls-only", "reports-dlq"),
        ("sqs-queue-tls-only", "reports"),
    ],
}

topic = aws.sns.Topic(
    "reports-alerts", kms_master_key_id=aws.kms.Key("reports-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("reports-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue("reports", sqs_managed_sse_enabled=True)
role = aws.iam.Role(
    "scheduler-role",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "scheduler.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    ),
)
aws.scheduler.Schedule(
    "nightly-report",
    schedule_expression="cron(0 2 * * ? *)",
    flexible_time_window={"mode": "OFF"},
    target={
        "arn": queue.arn,
        "role_arn": role.arn,
        "input": json.dumps({"report": "daily"}),
        "retry_policy": {"maximum_retry_attempts": 3, "maximum_event_age_in_seconds": 3600},
        "dead_letter_config": {"arn": dlq.arn},
    },
)
aws.cloudwatch.MetricAlarm(
    "reports-dlq-sent",
    namespace="AWS/SQS",
    metric_name="NumberOfMessagesSent",
    dimensions={"QueueName": dlq.name},
    statistic="Sum",
    period=300,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
