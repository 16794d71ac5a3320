"""The DLQ alarm's topic is encrypted with a customer-managed key left at its default policy.

AWS facts: CloudWatch publishes to an encrypted topic only if the key policy lets
cloudwatch.amazonaws.com use the key (kms:GenerateDataKey*, kms:Decrypt); the default key
policy grants the account's IAM principals only (KMS Developer Guide, "Default key policy";
SNS Developer Guide, "Enable compatibility between event sources from AWS services and
encrypted topics"). The alarm's notification is never delivered: the DLQ has no working alarm.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sqs-dlq-has-alarm", "loans-dlq"),
        ("sqs-queue-tls-only", "loans"),
        ("sqs-queue-tls-only", "loans-dlq"),
    ],
}

key = aws.kms.Key("loans-key", description="loans alerts", enable_key_rotation=True)
topic = aws.sns.Topic("loans-alerts", kms_master_key_id=key.id)
dlq = aws.sqs.Queue("loans-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
aws.sqs.Queue(
    "loans",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
aws.cloudwatch.MetricAlarm(
    "loans-dlq-depth",
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
