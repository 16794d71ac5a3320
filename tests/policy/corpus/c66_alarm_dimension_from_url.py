"""A DLQ alarm whose QueueName is cut from the DLQ's URL: right at `up`, flagged in a preview.

AWS facts: an SQS queue URL ends with the queue name (SQS Developer Guide, "Queue and message
identifiers"), so the dimension equals the name once the URL is known and the alarm works. In a
preview the URL is unknown while the DLQ's (explicit) name is known; an apply over the known
name would be known, so the pack takes the unknown value for the ARN or URL and flags it. Using
`dlq.name` avoids the false alarm.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sqs-queue-tls-only", "kyc-dlq"),
        ("sqs-queue-tls-only", "kyc"),
        ("sns-topic-encrypted", "kyc-alerts"),
    ],
    "preview_only": [
        (
            "sqs-dlq-has-alarm",
            "kyc-dlq",
            "the dimension is an apply over the DLQ's URL, unknown in a preview while the DLQ's "
            "name is known: an unknown value derived from the DLQ is taken for its ARN or URL",
        ),
    ],
}

alerts = aws.sns.Topic("kyc-alerts")
dlq = aws.sqs.Queue(
    "kyc-dlq", name="kyc-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
aws.sqs.Queue(
    "kyc",
    name="kyc",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
aws.cloudwatch.MetricAlarm(
    "kyc-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.url.apply(lambda url: url.rsplit("/", 1)[-1])},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alerts.arn],
)
