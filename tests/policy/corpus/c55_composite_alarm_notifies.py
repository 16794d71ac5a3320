"""A DLQ metric alarm without actions, rolled up by a composite alarm that notifies.

AWS facts: a composite alarm's rule reads the state of its child alarms and its own actions
notify (CloudWatch User Guide, "Combining alarms"); a child alarm needs no action of its own.
The DLQ is watched and someone is told.
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
        ("sqs-queue-tls-only", "quotes"),
        ("sqs-queue-tls-only", "quotes-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "quotes-alerts", kms_master_key_id=aws.kms.Key("quotes-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("quotes-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
aws.sqs.Queue(
    "quotes",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
child = aws.cloudwatch.MetricAlarm(
    "quotes-dlq-depth",
    name="quotes-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
)
aws.cloudwatch.CompositeAlarm(
    "quotes-health",
    alarm_name="quotes-health",
    alarm_rule=child.name.apply(lambda n: f'ALARM("{n}")'),
    alarm_actions=[alerts.arn],
)
