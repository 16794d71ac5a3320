"""Mapping maximum concurrency 50 against a function reserved at 10.

AWS facts: when a function's reserved concurrency is below the mapping's maximum concurrency,
Lambda throttles the extra invocations; throttled batches return to the queue and each receive
counts toward maxReceiveCount, so healthy messages can be dead-lettered (Lambda Developer
Guide, "Configuring maximum concurrency for Amazon SQS event sources": do not set maximum
concurrency above reserved concurrency).
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
        ("lambda-sqs-max-concurrency-within-reserved", "signups-esm"),
        ("sqs-queue-tls-only", "signups"),
        ("sqs-queue-tls-only", "signups-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "signups-alerts", kms_master_key_id=aws.kms.Key("signups-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("signups-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "signups",
    visibility_timeout_seconds=180,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
fn = aws.lambda_.Function(
    "signups-fn",
    role="arn:aws:iam::123456789012:role/signups",
    runtime="python3.12",
    handler="h.handler",
    code=pulumi.AssetArchive({}),
    timeout=30,
    reserved_concurrent_executions=10,
)
aws.lambda_.EventSourceMapping(
    "signups-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    scaling_config={"maximum_concurrency": 50},
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "signups-dlq-depth",
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
