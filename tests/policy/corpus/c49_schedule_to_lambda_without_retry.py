"""A Scheduler schedule invoking Lambda with neither retry policy nor DLQ, and no destination.

AWS facts: without a retry policy Scheduler retries for up to 24 h / 185 times and, without a
DLQ, drops the event (Scheduler User Guide, "Configuring retry policy" and "dead-letter
queue"); Scheduler invokes Lambda asynchronously, so the function also needs an on-failure
destination or DLQ (Lambda Developer Guide, "Asynchronous invocation").
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("scheduler-schedule-has-retry-and-dlq", "hourly-cleanup"),
        ("lambda-async-has-failure-destination", "cleanup"),
    ],
}

fn = aws.lambda_.Function(
    "cleanup",
    role="arn:aws:iam::123456789012:role/cleanup",
    runtime="python3.12",
    handler="c.handler",
    code=pulumi.AssetArchive({}),
    timeout=300,
)
aws.scheduler.Schedule(
    "hourly-cleanup",
    schedule_expression="rate(1 hour)",
    flexible_time_window={"mode": "OFF"},
    target={
        "arn": fn.arn,
        "role_arn": "arn:aws:iam::123456789012:role/scheduler",
        "input": json.dumps({}),
    },
)
