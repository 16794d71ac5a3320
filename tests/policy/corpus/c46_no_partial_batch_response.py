"""An SQS mapping without ReportBatchItemFailures, written with args classes.

AWS facts: without FunctionResponseTypes=["ReportBatchItemFailures"], one failed message makes
the whole batch visible again and every message in it is processed again (Lambda Developer
Guide, "Handling errors for an SQS event source in Lambda", partial batch responses).
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
        ("lambda-sqs-esm-reports-batch-item-failures", "geo-esm"),
        ("sqs-queue-tls-only", "geo"),
        ("sqs-queue-tls-only", "geo-dlq"),
    ],
}

alerts = aws.sns.Topic(
    "geo-alerts", kms_master_key_id=aws.kms.Key("geo-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "geo-dlq",
    args=aws.sqs.QueueArgs(message_retention_seconds=1209600, sqs_managed_sse_enabled=True),
)
queue = aws.sqs.Queue(
    "geo",
    args=aws.sqs.QueueArgs(
        visibility_timeout_seconds=60,
        sqs_managed_sse_enabled=True,
        redrive_policy=pulumi.Output.json_dumps(
            {"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}
        ),
    ),
)
fn = aws.lambda_.Function(
    "geo-fn",
    args=aws.lambda_.FunctionArgs(
        role="arn:aws:iam::123456789012:role/geo",
        runtime="python3.12",
        handler="g.handler",
        code=pulumi.AssetArchive({}),
        timeout=10,
    ),
)
aws.lambda_.EventSourceMapping(
    "geo-esm",
    args=aws.lambda_.EventSourceMappingArgs(
        event_source_arn=queue.arn, function_name=fn.arn, batch_size=5
    ),
)
aws.cloudwatch.MetricAlarm(
    "geo-dlq-depth",
    args=aws.cloudwatch.MetricAlarmArgs(
        namespace="AWS/SQS",
        metric_name="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": dlq.name},
        statistic="Maximum",
        period=60,
        evaluation_periods=1,
        threshold=1,
        comparison_operator="GreaterThanOrEqualToThreshold",
        alarm_actions=[alerts.arn],
    ),
)
