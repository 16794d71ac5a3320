"""The DLQ alarm notifies a topic encrypted with the AWS-managed `alias/aws/sns` key.

AWS facts: CloudWatch must call kms:GenerateDataKey/Decrypt to publish to an encrypted topic,
and the AWS-managed key's policy cannot be changed to allow cloudwatch.amazonaws.com (SNS
Developer Guide, "Encryption at rest", AWS services that publish to encrypted topics need a
customer managed key). The alarm fires but its notification is never delivered: no working
DLQ alarm.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sqs-dlq-has-alarm", "mail-dlq"),
        ("sqs-queue-tls-only", "mail-dlq"),
        ("sqs-queue-tls-only", "mail"),
    ],
}

topic = aws.sns.Topic("mail-alerts", kms_master_key_id="alias/aws/sns")
dlq = aws.sqs.Queue("mail-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
aws.sqs.Queue(
    "mail",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
aws.cloudwatch.MetricAlarm(
    "mail-dlq-depth",
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
