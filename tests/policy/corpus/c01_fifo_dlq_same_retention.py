"""FIFO orders queue and its FIFO DLQ, both keeping messages 14 days.

AWS facts: a FIFO queue's message gets a new enqueue timestamp when SQS moves it to the DLQ
(SQS Developer Guide, "Setting up dead-letter queue retention"); only standard queues keep the
original timestamp. So a FIFO pair at 14 d / 14 d loses nothing: no retention violation.
Everything else is configured as AWS advises (visibility 6x the timeout, partial batch
responses, a DLQ alarm with an action on a topic with a customer-managed key).
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


REGION = "eu-west-1"
EXPECTED = {
    "both": [
        ("sqs-queue-tls-only", "orders-dlq"),
        ("sqs-queue-tls-only", "orders"),
    ],
    "up_only": [],
}

key = aws.kms.Key("alerts-key", policy=TOPIC_KEY_POLICY, enable_key_rotation=True)
alerts = aws.sns.Topic("alerts", kms_master_key_id=key.arn)
dlq = aws.sqs.Queue(
    "orders-dlq",
    name="orders-dlq.fifo",
    fifo_queue=True,
    message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True,
)
queue = aws.sqs.Queue(
    "orders",
    name="orders.fifo",
    fifo_queue=True,
    content_based_deduplication=True,
    visibility_timeout_seconds=180,
    message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
role = aws.iam.Role(
    "worker-role",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    ),
)
fn = aws.lambda_.Function(
    "worker",
    role=role.arn,
    runtime="python3.12",
    handler="app.handler",
    code=pulumi.AssetArchive({}),
    timeout=30,
)
aws.lambda_.EventSourceMapping(
    "worker-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    batch_size=10,
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "orders-dlq-depth",
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
