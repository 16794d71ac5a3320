"""A standard queue consumed with batch size 100 and no batching window.

AWS facts: for SQS sources, "when you set BatchSize to a value greater than 10, you must set
MaximumBatchingWindowInSeconds to at least 1" (Lambda API Reference, CreateEventSourceMapping).
The mapping is rejected at deploy time; its inputs are known in a preview. The queue's
visibility (900 s) covers 6 x 60 s + 0 s.
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
        ("sqs-esm-config-valid", "clicks-esm"),
        ("sqs-queue-tls-only", "clicks"),
        ("sqs-queue-tls-only", "clicks-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "clicks-alerts", kms_master_key_id=aws.kms.Key("clicks-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("clicks-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "clicks",
    visibility_timeout_seconds=900,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
fn = aws.lambda_.Function(
    "clicks-fn",
    role="arn:aws:iam::123456789012:role/clicks",
    runtime="python3.12",
    handler="h.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
aws.lambda_.EventSourceMapping(
    "clicks-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    batch_size=100,
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "clicks-dlq-depth",
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
