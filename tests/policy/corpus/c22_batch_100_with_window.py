"""A correct high-volume consumer: batch size 100 with a 5 s batching window.

AWS facts: batch sizes above 10 are valid for standard queues with
MaximumBatchingWindowInSeconds >= 1 (Lambda API Reference, CreateEventSourceMapping). AWS
advises a visibility timeout of at least 6x the function timeout; the batching window adds to
the time a batch is in flight: 6 x 30 + 5 = 185 <= 200 s. DLQ with 14-day retention, alarmed.
Queue policies deny non-TLS access; the TLS statement is a Deny with a condition, not a grant.
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
    "both": [],
}

alerts = aws.sns.Topic(
    "views-alerts", kms_master_key_id=aws.kms.Key("views-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue("views-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "views",
    visibility_timeout_seconds=200,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
for name, q in (("views", queue), ("views-dlq", dlq)):
    aws.sqs.QueuePolicy(
        f"{name}-tls",
        queue_url=q.id,
        policy=q.arn.apply(
            lambda arn: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "DenyInsecureTransport",
                            "Effect": "Deny",
                            "Principal": "*",
                            "Action": "sqs:*",
                            "Resource": arn,
                            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                        }
                    ],
                }
            )
        ),
    )
fn = aws.lambda_.Function(
    "views-fn",
    role="arn:aws:iam::123456789012:role/views",
    runtime="python3.12",
    handler="h.handler",
    code=pulumi.AssetArchive({}),
    timeout=30,
)
aws.lambda_.EventSourceMapping(
    "views-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    batch_size=100,
    maximum_batching_window_in_seconds=5,
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "views-dlq-depth",
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
