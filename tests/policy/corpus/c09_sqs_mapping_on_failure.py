"""An SQS event source mapping with an on-failure destination.

AWS facts: Lambda accepts `DestinationConfig.OnFailure` on event source mappings for Kinesis,
DynamoDB Streams and Kafka sources only; for SQS the queue's redrive policy is the failure path
(Lambda Developer Guide, "Using Lambda with Amazon SQS" / CreateEventSourceMapping
DestinationConfig). The mapping is rejected: a deploy-time error, known in a preview. The queue
it names as destination receives nothing, so no DLQ alarm is demanded for it.
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
        ("sqs-esm-config-valid", "orders-esm"),
        ("sqs-queue-tls-only", "orders"),
        ("sqs-queue-tls-only", "orders-dlq"),
        ("sqs-queue-tls-only", "orders-failures"),
    ],
}

alerts = aws.sns.Topic(
    "alerts", kms_master_key_id=aws.kms.Key("alerts-key", policy=TOPIC_KEY_POLICY).arn
)
failures = aws.sqs.Queue(
    "orders-failures", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
dlq = aws.sqs.Queue("orders-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "orders",
    visibility_timeout_seconds=300,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
fn = aws.lambda_.Function(
    "orders-fn",
    role="arn:aws:iam::123456789012:role/orders-fn",
    runtime="python3.12",
    handler="h.handler",
    code=pulumi.AssetArchive({}),
    timeout=30,
)
aws.lambda_.EventSourceMapping(
    "orders-esm",
    event_source_arn=queue.arn,
    function_name=fn.name,
    function_response_types=["ReportBatchItemFailures"],
    destination_config={"on_failure": {"destination_arn": failures.arn}},
)
aws.cloudwatch.MetricAlarm(
    "orders-dlq-alarm",
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
