"""A DLQ fed by a redrive policy, watched only by NumberOfMessagesSent.

AWS facts: NumberOfMessagesSent counts messages added by SendMessage/SendMessageBatch; messages
moved to a DLQ by a redrive policy are not counted (SQS Developer Guide, "Available CloudWatch
metrics": "if you send a message to a dead-letter queue manually, it is captured by
NumberOfMessagesSent; messages moved by the redrive policy are not"). The alarm stays at 0
while the DLQ fills: the DLQ has no working alarm.
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
        ("sqs-dlq-has-alarm", "shipments-dlq"),
        ("sqs-queue-tls-only", "shipments-dlq"),
        ("sqs-queue-tls-only", "shipments"),
    ],
}

topic = aws.sns.Topic(
    "ship-alerts", kms_master_key_id=aws.kms.Key("ship-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "shipments-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
aws.sqs.Queue(
    "shipments",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
aws.cloudwatch.MetricAlarm(
    "shipments-dlq-sent",
    namespace="AWS/SQS",
    metric_name="NumberOfMessagesSent",
    dimensions={"QueueName": dlq.name},
    statistic="Sum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
