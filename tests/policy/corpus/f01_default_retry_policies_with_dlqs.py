"""An EventBridge rule target and a Scheduler schedule, each with a DLQ and no retry policy.

AWS facts: without a retry policy EventBridge retries a target for 24 hours and up to 185 times,
then sends what it could not deliver to the target's DLQ (EventBridge User Guide, "Event retry
policy and using dead-letter queues": "By default, EventBridge retries sending the event for 24
hours and up to 185 times"); EventBridge Scheduler's defaults are the same (185 retries within
24 hours, RetryPolicy's ceilings in the Scheduler API reference) and it too sends a failed
invocation to the target's DLQ. A correct stack: the default retry policy is no missing setting.
Both DLQs let the services send (events.amazonaws.com by queue policy; Scheduler sends with its
execution role) and are alarmed; every queue denies plain HTTP. No finding at all.
"""

import json

import pulumi
import pulumi_aws as aws

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
                "Sid": "CloudWatchPublishes",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
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
    "billing-alerts", kms_master_key_id=aws.kms.Key("billing-key", policy=TOPIC_KEY_POLICY).arn
)
rule = aws.cloudwatch.EventRule(
    "invoices-rule", event_pattern=json.dumps({"source": ["acme.billing"]})
)
inbox = aws.sqs.Queue("invoices-inbox", sqs_managed_sse_enabled=True)
events_dlq = aws.sqs.Queue(
    "invoices-events-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
jobs = aws.sqs.Queue("billing-jobs", sqs_managed_sse_enabled=True)
schedule_dlq = aws.sqs.Queue(
    "billing-schedule-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)


def tls_only(q: aws.sqs.Queue) -> dict:
    return {
        "Sid": "TlsOnly",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sqs:*",
        "Resource": q.arn,
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }


for name, q in (("invoices-inbox", inbox), ("invoices-events-dlq", events_dlq)):
    aws.sqs.QueuePolicy(
        f"{name}-policy",
        queue_url=q.id,
        policy=pulumi.Output.json_dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "EventBridgeSends",
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": q.arn,
                        "Condition": {"ArnEquals": {"aws:SourceArn": rule.arn}},
                    },
                    tls_only(q),
                ],
            }
        ),
    )
for name, q in (("billing-jobs", jobs), ("billing-schedule-dlq", schedule_dlq)):
    aws.sqs.QueuePolicy(
        f"{name}-policy",
        queue_url=q.id,
        policy=pulumi.Output.json_dumps({"Version": "2012-10-17", "Statement": [tls_only(q)]}),
    )
# No retry_policy: EventBridge's default (24 h, 185 attempts), then the DLQ.
aws.cloudwatch.EventTarget(
    "invoices-target", rule=rule.name, arn=inbox.arn, dead_letter_config={"arn": events_dlq.arn}
)
scheduler_role = aws.iam.Role(
    "billing-scheduler",
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
# No retry_policy: Scheduler's default (185 retries within 24 h), then the DLQ.
aws.scheduler.Schedule(
    "billing-nightly",
    flexible_time_window={"mode": "OFF"},
    schedule_expression="cron(0 1 * * ? *)",
    target={
        "arn": jobs.arn,
        "role_arn": scheduler_role.arn,
        "dead_letter_config": {"arn": schedule_dlq.arn},
    },
)
for name, q in (("invoices-events-dlq", events_dlq), ("billing-schedule-dlq", schedule_dlq)):
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
