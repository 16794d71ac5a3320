"""An EventBridge target whose DLQ has no queue policy for events.amazonaws.com.

AWS facts: EventBridge writes failed events to the target's DLQ as events.amazonaws.com and
needs the queue policy to allow sqs:SendMessage (EventBridge User Guide, "Granting permissions
to the dead-letter queue"); otherwise the events are lost. The target itself is an SNS topic
whose policy lets EventBridge publish. The DLQ is alarmed.
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
        ("delivery-permission-granted", "alerts-target-dlq"),
        ("sqs-queue-tls-only", "alerts-target-dlq"),
    ],
}

key = aws.kms.Key("alerts-key", policy=TOPIC_KEY_POLICY, enable_key_rotation=True)
topic = aws.sns.Topic("security-alerts", kms_master_key_id=key.arn)
aws.sns.TopicPolicy(
    "security-alerts-policy",
    arn=topic.arn,
    policy=topic.arn.apply(
        lambda arn: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sns:Publish",
                        "Resource": arn,
                    }
                ],
            }
        )
    ),
)
dlq = aws.sqs.Queue(
    "alerts-target-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
rule = aws.cloudwatch.EventRule(
    "guardduty-findings", event_pattern=json.dumps({"source": ["aws.guardduty"]})
)
aws.cloudwatch.EventTarget(
    "alerts-target",
    rule=rule.name,
    arn=topic.arn,
    retry_policy={"maximum_retry_attempts": 20, "maximum_event_age_in_seconds": 3600},
    dead_letter_config={"arn": dlq.arn},
)
aws.cloudwatch.MetricAlarm(
    "alerts-target-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
