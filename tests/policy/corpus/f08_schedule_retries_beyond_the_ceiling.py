"""A Scheduler schedule whose retry policy exceeds what Scheduler accepts.

AWS facts: a schedule's RetryPolicy takes MaximumRetryAttempts 0..185 and
MaximumEventAgeInSeconds 60..86400 (EventBridge Scheduler API reference, RetryPolicy); 185 and
86,400 are also its defaults. 200 attempts over two days is refused at deploy time. The schedule
has its DLQ (alarmed, and Scheduler sends with its role, so no queue policy is needed); the
function it invokes has an on-failure destination. The remediation of
`scheduler-schedule-has-retry-and-dlq` lowers both fields to the ceilings (limits).
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("scheduler-schedule-has-retry-and-dlq", "reindex-weekly"),
        ("sns-topic-encrypted", "reindex-alarms"),
        ("sqs-queue-tls-only", "reindex-dlq"),
        ("sqs-queue-tls-only", "reindex-failures"),
    ],
}

alarms = aws.sns.Topic("reindex-alarms")
dlq = aws.sqs.Queue("reindex-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
failures = aws.sqs.Queue(
    "reindex-failures", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
fn = aws.lambda_.Function(
    "reindex",
    role="arn:aws:iam::123456789012:role/reindex",
    runtime="python3.12",
    handler="reindex.handler",
    code=pulumi.AssetArchive({}),
    timeout=300,
)
aws.lambda_.FunctionEventInvokeConfig(
    "reindex-async",
    function_name=fn.name,
    destination_config={"on_failure": {"destination": failures.arn}},
)
role = aws.iam.Role(
    "reindex-scheduler",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "scheduler.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    ),
)
aws.scheduler.Schedule(
    "reindex-weekly",
    flexible_time_window={"mode": "OFF"},
    schedule_expression="cron(0 4 ? * SUN *)",
    target={
        "arn": fn.arn,
        "role_arn": role.arn,
        "retry_policy": {"maximum_retry_attempts": 200, "maximum_event_age_in_seconds": 172800},
        "dead_letter_config": {"arn": dlq.arn},
    },
)
for name, q in (("reindex-dlq", dlq), ("reindex-failures", failures)):
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
        alarm_actions=[alarms.arn],
    )
