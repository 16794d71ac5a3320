"""A Scheduler schedule invoking Lambda with bounded retries, a DLQ and an async destination.

AWS facts: the schedule's retry policy bounds Scheduler's retries and its DLQ keeps events it
could not deliver (Scheduler User Guide); Scheduler writes to the DLQ with its execution role.
Lambda's async on-failure destination keeps events the function failed on (Lambda Developer
Guide, "Asynchronous invocation"). Both queues receive API sends: NumberOfMessagesSent alarms
work for them.
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
        ("sqs-queue-tls-only", "digest-schedule-dlq"),
        ("sqs-queue-tls-only", "digest-failures"),
    ],
}

key = aws.kms.Key("digest-key", policy=TOPIC_KEY_POLICY, enable_key_rotation=True)
alerts = aws.sns.Topic("digest-alerts", kms_master_key_id=key.arn)
schedule_dlq = aws.sqs.Queue(
    "digest-schedule-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
failures = aws.sqs.Queue(
    "digest-failures", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
fn = aws.lambda_.Function(
    "digest",
    role="arn:aws:iam::123456789012:role/digest",
    runtime="python3.12",
    handler="d.handler",
    code=pulumi.AssetArchive({}),
    timeout=120,
)
aws.lambda_.FunctionEventInvokeConfig(
    "digest-async",
    function_name=fn.name,
    maximum_retry_attempts=1,
    destination_config={"on_failure": {"destination": failures.arn}},
)
aws.scheduler.Schedule(
    "weekly-digest",
    schedule_expression="cron(0 7 ? * MON *)",
    flexible_time_window={"mode": "FLEXIBLE", "maximum_window_in_minutes": 15},
    target={
        "arn": fn.arn,
        "role_arn": "arn:aws:iam::123456789012:role/scheduler",
        "input": json.dumps({"kind": "weekly"}),
        "retry_policy": {"maximum_retry_attempts": 5, "maximum_event_age_in_seconds": 7200},
        "dead_letter_config": {"arn": schedule_dlq.arn},
    },
)
for name, q in (("digest-schedule-dlq", schedule_dlq), ("digest-failures", failures)):
    aws.cloudwatch.MetricAlarm(
        f"{name}-sent",
        namespace="AWS/SQS",
        metric_name="NumberOfMessagesSent",
        dimensions={"QueueName": q.name},
        statistic="Sum",
        period=300,
        evaluation_periods=1,
        threshold=0,
        comparison_operator="GreaterThanThreshold",
        alarm_actions=[alerts.arn],
    )
