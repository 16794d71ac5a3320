"""An age alarm whose threshold lies beyond the DLQ's retention never fires.

AWS facts: SQS deletes a message once it is older than the queue's retention period (here
4 days, the default, 345600 s), so ApproximateAgeOfOldestMessage never exceeds it; an alarm
at 400000 s cannot fire (SQS Developer Guide, message retention and CloudWatch metrics). The
DLQ therefore has no working alarm. The DLQ retention (4 d default) also does not exceed the
source's 4 d default retention: standard queues keep the original enqueue time.
"""

import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sqs-dlq-has-alarm", "audit-dlq"),
        ("sqs-dlq-retention-exceeds-source", "audit-dlq"),
        ("sqs-queue-tls-only", "audit-dlq"),
        ("sqs-queue-tls-only", "audit"),
    ],
}

topic = aws.sns.Topic("audit-alerts", kms_master_key_id=aws.kms.Key("audit-key").arn)
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
