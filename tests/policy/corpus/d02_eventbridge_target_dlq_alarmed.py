"""An EventBridge rule target whose DLQ is alarmed: the correct counterpart of d01.

AWS facts: EventBridge writes events it could not deliver to the target's DLQ (EventBridge User
Guide, "Using dead-letter queues to process undelivered events"); an alarm on
ApproximateNumberOfMessagesVisible >= 1 fires while one sits there. EventBridge sends to the
DLQ with the SQS API, so NumberOfMessagesSent would count too; the alarm's topic is encrypted
with a customer-managed key that lets CloudWatch publish (a default key policy would not). Both
queues let events.amazonaws.com send and deny plain HTTP: no finding at all.
"""

import json

import pulumi
import pulumi_aws as aws

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
                "Sid": "CloudWatchPublishesToTheEncryptedTopic",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                "Resource": "*",
            },
        ],
    }
)

EXPECTED = {
    "both": [],
}

alerts = aws.sns.Topic(
    "ops-alerts", kms_master_key_id=aws.kms.Key("ops-key", policy=TOPIC_KEY_POLICY).arn
)
rule = aws.cloudwatch.EventRule(
    "partner-rule", event_pattern=json.dumps({"source": ["partner.acme"]})
)
inbox = aws.sqs.Queue("partner-inbox", sqs_managed_sse_enabled=True)
dlq = aws.sqs.Queue(
    "partner-target-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
for name, q in (("partner-inbox", inbox), ("partner-target-dlq", dlq)):
    aws.sqs.QueuePolicy(
        f"{name}-policy",
        queue_url=q.id,
        policy=pulumi.Output.json_dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "EventBridgeSends",
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": q.arn,
                        "Condition": {"ArnEquals": {"aws:SourceArn": rule.arn}},
                    },
                    {
                        "Sid": "TlsOnly",
                        "Effect": "Deny",
                        "Principal": "*",
                        "Action": "sqs:*",
                        "Resource": q.arn,
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    },
                ],
            }
        ),
    )
aws.cloudwatch.EventTarget(
    "partner-target",
    rule=rule.name,
    arn=inbox.arn,
    retry_policy={"maximum_retry_attempts": 10, "maximum_event_age_in_seconds": 7200},
    dead_letter_config={"arn": dlq.arn},
)
aws.cloudwatch.MetricAlarm(
    "partner-target-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alerts.arn],
)
