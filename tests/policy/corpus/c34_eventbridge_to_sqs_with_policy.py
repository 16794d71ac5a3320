"""An EventBridge rule delivers to an SQS queue whose policy allows events.amazonaws.com.

AWS facts: EventBridge sends to an SQS target only when the queue policy allows
events.amazonaws.com sqs:SendMessage (EventBridge User Guide, "Permissions for Amazon SQS");
the condition names the rule's ARN, so other rules cannot send. The target has a retry policy
and a DLQ (the same queue kind, also allowed); the DLQ is alarmed. The worker consuming the
queue is correct.
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
    "up_only": [
        (
            "sqs-queue-tls-only",
            "partner-events",
            "its queue policy is built from queue and rule ARNs, unknown in a preview",
        ),
        (
            "sqs-queue-tls-only",
            "partner-events-dlq",
            "its queue policy is built from queue and rule ARNs, unknown in a preview",
        ),
    ],
}

alerts = aws.sns.Topic(
    "partner-alerts", kms_master_key_id=aws.kms.Key("partner-key", policy=TOPIC_KEY_POLICY).arn
)
dlq = aws.sqs.Queue(
    "partner-events-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
queue = aws.sqs.Queue(
    "partner-events",
    visibility_timeout_seconds=120,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
rule = aws.cloudwatch.EventRule(
    "partner-rule", event_pattern=json.dumps({"source": ["partner.acme"]})
)
for name, q in (("partner-events", queue), ("partner-events-dlq", dlq)):
    aws.sqs.QueuePolicy(
        f"{name}-policy",
        queue_url=q.id,
        policy=pulumi.Output.all(q.arn, rule.arn).apply(
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
aws.cloudwatch.EventTarget(
    "partner-target",
    rule=rule.name,
    arn=queue.arn,
    retry_policy={"maximum_retry_attempts": 10, "maximum_event_age_in_seconds": 7200},
    dead_letter_config={"arn": dlq.arn},
)
fn = aws.lambda_.Function(
    "partner-worker",
    role="arn:aws:iam::123456789012:role/partner-worker",
    runtime="python3.12",
    handler="w.handler",
    code=pulumi.AssetArchive({}),
    timeout=20,
)
aws.lambda_.EventSourceMapping(
    "partner-worker-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "partner-events-dlq-depth",
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
