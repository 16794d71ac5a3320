"""A consumer whose queue's visibility timeout comes from a platform stack.

AWS facts: Lambda refuses an SQS mapping whose queue's visibility timeout is below the function
timeout (CreateEventSourceMapping), and without a value SQS applies 30 s. But the value is not
absent: `visibility_timeout_seconds` is the platform stack's output (pulumi.StackReference), a
value this stack does not own, compared with the function's 60 s. Offline it cannot be read, in
`up` as in a preview, so it stays unknown (an answers file may pin it), never SQS's default; the
pack judges what this stack sets: a DLQ, an alarm, ReportBatchItemFailures. The queue
`shared-in`, read with `Queue.get` from an id the platform stack exports, is judged by nothing
this stack sets on it.
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sns-topic-encrypted", "payouts-alarms"),
        ("sqs-queue-tls-only", "payouts"),
        ("sqs-queue-tls-only", "payouts-dlq"),
    ],
}

platform = pulumi.StackReference("acme/platform/prod")
dlq = aws.sqs.Queue("payouts-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "payouts",
    visibility_timeout_seconds=platform.get_output("payoutsVisibilityTimeout"),
    sqs_managed_sse_enabled=True,
    redrive_policy=dlq.arn.apply(
        lambda arn: json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})
    ),
)
fn = aws.lambda_.Function(
    "payouts-fn",
    role="arn:aws:iam::123456789012:role/payouts",
    runtime="python3.12",
    handler="payouts.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
aws.lambda_.EventSourceMapping(
    "payouts-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    function_response_types=["ReportBatchItemFailures"],
)
shared = aws.sqs.Queue.get("shared-in", platform.require_output("sharedInboxUrl"))
aws.lambda_.EventSourceMapping(
    "shared-esm",
    event_source_arn=shared.arn,
    function_name=fn.arn,
    function_response_types=["ReportBatchItemFailures"],
)
alarm_topic = aws.sns.Topic("payouts-alarms")
aws.cloudwatch.MetricAlarm(
    "payouts-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alarm_topic.arn],
)
