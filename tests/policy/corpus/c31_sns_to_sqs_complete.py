"""SNS -> SQS fan-out done right: queue policy for the topic, subscription redrive, DLQ alarm.

AWS facts: the queue policy allows sns.amazonaws.com sqs:SendMessage on condition
aws:SourceArn = the topic (SNS Developer Guide, "Sending messages to an SQS queue"); the
subscription's redrive policy sends undeliverable messages to a DLQ whose policy lets SNS send
too ("Amazon SNS dead-letter queues"); SNS sends to the DLQ with the API, so
NumberOfMessagesSent counts them. The topic's key is customer-managed.
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
    "both": [],
    "up_only": [
        (
            "sqs-queue-tls-only",
            "billing-inbox",
            "its queue policy is built from the queue and topic ARNs, unknown in a preview",
        ),
        (
            "sqs-queue-tls-only",
            "billing-inbox-dlq",
            "its queue policy is built from the queue and topic ARNs, unknown in a preview",
        ),
    ],
}

key = aws.kms.Key("events-key", policy=TOPIC_KEY_POLICY, enable_key_rotation=True)
topic = aws.sns.Topic("billing-events", kms_master_key_id=key.arn)
dlq = aws.sqs.Queue(
    "billing-inbox-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
inbox = aws.sqs.Queue("billing-inbox", sqs_managed_sse_enabled=True)
for name, q in (("billing-inbox", inbox), ("billing-inbox-dlq", dlq)):
    aws.sqs.QueuePolicy(
        f"{name}-policy",
        queue_url=q.id,
        policy=pulumi.Output.all(q.arn, topic.arn).apply(
            lambda args: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "AllowTopic",
                            "Effect": "Allow",
                            "Principal": {"Service": "sns.amazonaws.com"},
                            "Action": "sqs:SendMessage",
                            "Resource": args[0],
                            "Condition": {"ArnEquals": {"aws:SourceArn": args[1]}},
                        }
                    ],
                }
            )
        ),
    )
aws.sns.TopicSubscription(
    "billing-inbox-sub",
    topic=topic.arn,
    protocol="sqs",
    endpoint=inbox.arn,
    raw_message_delivery=True,
    redrive_policy=dlq.arn.apply(lambda arn: json.dumps({"deadLetterTargetArn": arn})),
)
alerts = aws.sns.Topic("billing-alerts", kms_master_key_id=key.arn)
aws.cloudwatch.MetricAlarm(
    "billing-inbox-dlq-sent",
    namespace="AWS/SQS",
    metric_name="NumberOfMessagesSent",
    dimensions={"QueueName": dlq.name},
    statistic="Sum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alerts.arn],
)
