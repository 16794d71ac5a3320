"""An SQS consumer reserved at 2 concurrent executions.

AWS facts: Lambda's SQS poller starts with five concurrent batches (Lambda Developer Guide,
"Scaling behavior" for SQS event sources); with reserved concurrency 2 the surplus is throttled
and those messages return with a higher receive count. Advisory: the mapping's maximum
concurrency (minimum 2) is the tool to limit a consumer.
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
        ("lambda-sqs-reserved-concurrency-at-least-5", "export-fn"),
        ("sqs-queue-tls-only", "export"),
        ("sqs-queue-tls-only", "export-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "export-alerts", kms_master_key_id=aws.kms.Key("export-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("export-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "export",
    visibility_timeout_seconds=360,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 8}),
)
fn = aws.lambda_.Function(
    "export-fn",
    role="arn:aws:iam::123456789012:role/export",
    runtime="python3.12",
    handler="h.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
    reserved_concurrent_executions=2,
)
aws.lambda_.EventSourceMapping(
    "export-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "export-dlq-depth",
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
