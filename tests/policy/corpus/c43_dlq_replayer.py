"""A DLQ drained by a replayer function: the DLQ itself needs no DLQ.

AWS facts: a dead-letter queue is an ordinary queue; a consumer may read it (here a replayer
re-sending to the source). Demanding a DLQ for the DLQ (as cdk-nag does) is a false alarm; the
replayer's mapping still needs visibility >= its timeout (Lambda rejects a queue whose
visibility timeout is below the function timeout) and partial batch responses. Visibility 90 s
< 6 x 30 s is advisory.
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
        ("sqs-visibility-timeout-6x-lambda-timeout", "jobs-dlq"),
        ("sqs-queue-tls-only", "jobs-dlq"),
        ("sqs-queue-tls-only", "jobs"),
    ],
}

alerts = aws.sns.Topic(
    "jobs-alerts", kms_master_key_id=aws.kms.Key("jobs-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "jobs-dlq",
    message_retention_seconds=1209600,
    visibility_timeout_seconds=90,
    sqs_managed_sse_enabled=True,
)
aws.sqs.Queue(
    "jobs",
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 4}),
)
replayer = aws.lambda_.Function(
    "jobs-replayer",
    role="arn:aws:iam::123456789012:role/jobs-replayer",
    runtime="python3.12",
    handler="replay.handler",
    code=pulumi.AssetArchive({}),
    timeout=30,
)
aws.lambda_.EventSourceMapping(
    "jobs-replayer-esm",
    event_source_arn=dlq.arn,
    function_name=replayer.arn,
    enabled=False,
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "jobs-dlq-depth",
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
