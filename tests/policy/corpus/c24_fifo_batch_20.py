"""A FIFO queue consumed with batch size 20.

AWS facts: for FIFO queues the maximum batch size is 10 (Lambda API Reference,
CreateEventSourceMapping, BatchSize: "Amazon SQS FIFO queues - Maximum: 10"); Lambda rejects
the mapping. The mapping also has no ReportBatchItemFailures.
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
        ("sqs-esm-config-valid", "trades-esm"),
        ("lambda-sqs-esm-reports-batch-item-failures", "trades-esm"),
        ("sqs-queue-tls-only", "trades"),
        ("sqs-queue-tls-only", "trades-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "trades-alerts", kms_master_key_id=aws.kms.Key("trades-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "trades-dlq", fifo_queue=True, name="trades-dlq.fifo", sqs_managed_sse_enabled=True
)
queue = aws.sqs.Queue(
    "trades",
    fifo_queue=True,
    name="trades.fifo",
    visibility_timeout_seconds=120,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3}),
)
fn = aws.lambda_.Function(
    "trades-fn",
    role="arn:aws:iam::123456789012:role/trades",
    runtime="python3.12",
    handler="h.handler",
    code=pulumi.AssetArchive({}),
    timeout=20,
)
aws.lambda_.EventSourceMapping(
    "trades-esm", event_source_arn=queue.arn, function_name=fn.arn, batch_size=20
)
aws.cloudwatch.MetricAlarm(
    "trades-dlq-depth",
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
