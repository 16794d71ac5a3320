"""A consumer limited correctly: maximum concurrency 10 under reserved concurrency 25.

AWS facts: maximum concurrency on an SQS mapping (2..1000) caps the poller without throttling
when it stays at or below the function's reserved concurrency (Lambda Developer Guide,
"Configuring maximum concurrency for Amazon SQS event sources"); reserved 25 >= 5 concurrent
batches the poller starts with. Everything else is correct; the alarm topic is unencrypted
(advisory: SNS stores its messages unencrypted at rest).
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("sns-topic-encrypted", "tax-alerts")],
}

alerts = aws.sns.Topic("tax-alerts")
dlq = aws.sqs.Queue("tax-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "tax",
    visibility_timeout_seconds=540,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 6}),
)
for name, q in (("tax", queue), ("tax-dlq", dlq)):
    aws.sqs.QueuePolicy(
        f"{name}-tls",
        queue_url=q.id,
        policy=q.arn.apply(
            lambda arn: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Deny",
                            "Principal": {"AWS": "*"},
                            "Action": "sqs:*",
                            "Resource": arn,
                            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                        }
                    ],
                }
            )
        ),
    )
fn = aws.lambda_.Function(
    "tax-fn",
    role="arn:aws:iam::123456789012:role/tax",
    runtime="python3.12",
    handler="t.handler",
    code=pulumi.AssetArchive({}),
    timeout=90,
    reserved_concurrent_executions=25,
)
aws.lambda_.EventSourceMapping(
    "tax-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    batch_size=10,
    scaling_config={"maximum_concurrency": 10},
    function_response_types=["ReportBatchItemFailures"],
)
aws.cloudwatch.MetricAlarm(
    "tax-dlq-depth",
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
