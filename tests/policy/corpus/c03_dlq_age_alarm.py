"""A DLQ watched by an age-of-oldest-message alarm.

AWS facts: ApproximateAgeOfOldestMessage (namespace AWS/SQS, dimension QueueName) is the age
of the oldest message in the queue; with a threshold of 1 hour, below the DLQ's 14-day
retention, the alarm fires while a dead-lettered message still sits in the DLQ (SQS Developer
Guide, "Available CloudWatch metrics for Amazon SQS"). With an action it is a working DLQ
alarm. The consumer's mapping and queue are otherwise correct.
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
        ("sqs-queue-tls-only", "events-dlq"),
        ("sqs-queue-tls-only", "events"),
    ],
}

pager = aws.sns.Topic(
    "pager", kms_master_key_id=aws.kms.Key("pager-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "events-dlq", message_retention_seconds=1209600, kms_master_key_id="alias/aws/sqs"
)
queue = aws.sqs.Queue(
    "events",
    visibility_timeout_seconds=120,
    kms_master_key_id="alias/aws/sqs",
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
fn = aws.lambda_.Function(
    "events-handler",
    role="arn:aws:iam::123456789012:role/events-handler",
    runtime="python3.13",
    handler="main.handler",
    code=pulumi.AssetArchive({}),
    timeout=20,
)
aws.lambda_.EventSourceMapping(
    "events-handler-sqs",
    event_source_arn=queue.arn,
    function_name=fn.name,
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "events-dlq-age",
    namespace="AWS/SQS",
    metric_name="ApproximateAgeOfOldestMessage",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=300,
    evaluation_periods=1,
    threshold=3600,
    comparison_operator="GreaterThanThreshold",
    alarm_actions=[pager.arn],
)
