"""SNS -> Lambda with a subscription DLQ and an async on-failure destination.

AWS facts: the subscription's redrive policy keeps messages SNS could not deliver (SNS
Developer Guide, "Amazon SNS dead-letter queues"; the DLQ's policy must let sns.amazonaws.com
send); the function's on-failure destination keeps events it failed on after Lambda's async
retries (Lambda Developer Guide, "Asynchronous invocation"). Both DLQs are alarmed on visible
messages; the alarm topic is unencrypted (advisory).
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
        ("sqs-queue-tls-only", "thumbs-failures"),
        ("sns-topic-encrypted", "media-alerts"),
    ],
    "up_only": [
        (
            "sqs-queue-tls-only",
            "thumbs-sub-dlq",
            "its queue policy is built from the queue and topic ARNs, unknown in a preview",
        ),
    ],
}

key = aws.kms.Key("media-key", policy=TOPIC_KEY_POLICY, enable_key_rotation=True)
uploads = aws.sns.Topic("media-uploads", kms_master_key_id=key.arn)
alerts = aws.sns.Topic("media-alerts")
sub_dlq = aws.sqs.Queue(
    "thumbs-sub-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
aws.sqs.QueuePolicy(
    "thumbs-sub-dlq-policy",
    queue_url=sub_dlq.id,
    policy=pulumi.Output.all(sub_dlq.arn, uploads.arn).apply(
        lambda args: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "sns.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": args[0],
                        "Condition": {"ArnEquals": {"aws:SourceArn": args[1]}},
                    }
                ],
            }
        )
    ),
)
failures = aws.sqs.Queue(
    "thumbs-failures", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
fn = aws.lambda_.Function(
    "thumbs",
    role="arn:aws:iam::123456789012:role/thumbs",
    runtime="python3.12",
    handler="t.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
aws.lambda_.FunctionEventInvokeConfig(
    "thumbs-async",
    function_name=fn.name,
    destination_config={"on_failure": {"destination": failures.arn}},
)
aws.sns.TopicSubscription(
    "thumbs-sub",
    topic=uploads.arn,
    protocol="lambda",
    endpoint=fn.arn,
    redrive_policy=sub_dlq.arn.apply(lambda arn: json.dumps({"deadLetterTargetArn": arn})),
)
aws.lambda_.Permission(
    "thumbs-invoke",
    action="lambda:InvokeFunction",
    function=fn.name,
    principal="sns.amazonaws.com",
    source_arn=uploads.arn,
)
for name, q in (("thumbs-sub-dlq", sub_dlq), ("thumbs-failures", failures)):
    aws.cloudwatch.MetricAlarm(
        f"{name}-depth",
        namespace="AWS/SQS",
        metric_name="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": q.name},
        statistic="Maximum",
        period=60,
        evaluation_periods=1,
        threshold=1,
        comparison_operator="GreaterThanOrEqualToThreshold",
        alarm_actions=[alerts.arn],
    )
