"""A FIFO queue consumed with a batching window.

AWS facts: MaximumBatchingWindowInSeconds is not supported for FIFO queues (Lambda Developer
Guide, "Using Lambda with Amazon SQS": "Batching window ... not supported for FIFO queues");
Lambda rejects the mapping. The FIFO DLQ's shorter retention is fine: FIFO messages get a new
enqueue timestamp in the DLQ.
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
        ("sqs-esm-config-valid", "ledger-esm"),
        ("sqs-queue-tls-only", "ledger"),
        ("sqs-queue-tls-only", "ledger-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "ledger-alerts", kms_master_key_id=aws.kms.Key("ledger-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "ledger-dlq", fifo_queue=True, name="ledger-dlq.fifo", sqs_managed_sse_enabled=True
)
queue = aws.sqs.Queue(
    "ledger",
    fifo_queue=True,
    name="ledger.fifo",
    visibility_timeout_seconds=200,
    message_retention_seconds=604800,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
fn = aws.lambda_.Function(
    "ledger-fn",
    role="arn:aws:iam::123456789012:role/ledger",
    runtime="python3.12",
    handler="h.handler",
    code=pulumi.AssetArchive({}),
    timeout=30,
)
aws.lambda_.EventSourceMapping(
    "ledger-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    batch_size=10,
    maximum_batching_window_in_seconds=5,
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "ledger-dlq-depth",
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
