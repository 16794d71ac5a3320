"""An EventBridge rule -> Lambda pipeline with every failure path.

AWS facts: the target's retry policy bounds EventBridge's retries and its DLQ keeps undelivered
events; the queue policy must let events.amazonaws.com send, conditioned on the rule's ARN
(EventBridge User Guide, "Using dead-letter queues"). Lambda's async failures go to the
on-failure destination of the FunctionEventInvokeConfig (Lambda Developer Guide, "Asynchronous
invocation"). Both queues are alarmed (NumberOfMessagesSent is valid: both services send with
the API). Permission principal is the events service with the rule as source.
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
        ("sqs-queue-tls-only", "sync-failures"),
    ],
    "up_only": [
        (
            "sqs-queue-tls-only",
            "sync-target-dlq",
            "its queue policy is an apply over the queue and rule ARNs, unknown in a preview, so "
            "whether it denies non-TLS access cannot be read",
        ),
    ],
}

alerts = aws.sns.Topic(
    "sync-alerts", kms_master_key_id=aws.kms.Key("sync-key", policy=TOPIC_KEY_POLICY).arn
)
target_dlq = aws.sqs.Queue(
    "sync-target-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
failures = aws.sqs.Queue(
    "sync-failures", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
fn = aws.lambda_.Function(
    "sync-fn",
    role="arn:aws:iam::123456789012:role/sync",
    runtime="python3.12",
    handler="sync.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
aws.lambda_.FunctionEventInvokeConfig(
    "sync-async",
    function_name=fn.name,
    maximum_retry_attempts=2,
    maximum_event_age_in_seconds=3600,
    destination_config={"on_failure": {"destination": failures.arn}},
)
rule = aws.cloudwatch.EventRule(
    "sync-rule",
    event_pattern=json.dumps({"source": ["acme.crm"]}),
)
aws.cloudwatch.EventTarget(
    "sync-target",
    rule=rule.name,
    arn=fn.arn,
    retry_policy={"maximum_retry_attempts": 4, "maximum_event_age_in_seconds": 3600},
    dead_letter_config={"arn": target_dlq.arn},
)
aws.sqs.QueuePolicy(
    "sync-target-dlq-policy",
    queue_url=target_dlq.id,
    policy=pulumi.Output.all(target_dlq.arn, rule.arn).apply(
        lambda args: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": args[0],
                        "Condition": {"ArnEquals": {"aws:SourceArn": args[1]}},
                    }
                ],
            }
        )
    ),
)
aws.lambda_.Permission(
    "sync-invoke",
    action="lambda:InvokeFunction",
    function=fn.name,
    principal="events.amazonaws.com",
    source_arn=rule.arn,
)
for name, q in (("sync-target-dlq", target_dlq), ("sync-failures", failures)):
    aws.cloudwatch.MetricAlarm(
        f"{name}-sent",
        namespace="AWS/SQS",
        metric_name="NumberOfMessagesSent",
        dimensions={"QueueName": q.name},
        statistic="Sum",
        period=60,
        evaluation_periods=1,
        threshold=1,
        comparison_operator="GreaterThanOrEqualToThreshold",
        alarm_actions=[alerts.arn],
    )
