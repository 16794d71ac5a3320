"""The queue's visibility timeout (30 s, AWS default) is below the function timeout (120 s).

AWS facts: Lambda rejects an SQS event source whose queue visibility timeout is less than the
function timeout (Lambda Developer Guide, "Using Lambda with Amazon SQS": "set the source
queue's visibility timeout to at least six times the function timeout"; CreateEventSourceMapping
fails below 1x). The 6x advisory also applies.
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
        ("sqs-visibility-timeout-covers-lambda-timeout", "uploads"),
        ("sqs-visibility-timeout-6x-lambda-timeout", "uploads"),
        ("sqs-queue-tls-only", "uploads"),
        ("sqs-queue-tls-only", "uploads-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "uploads-alerts", kms_master_key_id=aws.kms.Key("uploads-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("uploads-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "uploads",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
fn = aws.lambda_.Function(
    "uploads-fn",
    role="arn:aws:iam::123456789012:role/uploads",
    runtime="python3.12",
    handler="u.handler",
    code=pulumi.AssetArchive({}),
    timeout=120,
)
aws.lambda_.EventSourceMapping(
    "uploads-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "uploads-dlq-depth",
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
