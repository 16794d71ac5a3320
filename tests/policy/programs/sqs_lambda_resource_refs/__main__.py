"""An SQS -> Lambda consumer written with resource objects everywhere an id or ARN goes:
`role=role` on the policy attachment, `function_name=fn` on the mapping, the queue object
in the redrive policy's Output. The pack must see ids, as the engine hands them over."""

import json

import pulumi
import pulumi_aws as aws

role = aws.iam.Role(
    "consumer",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "sts:AssumeRole",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                }
            ],
        }
    ),
)

aws.iam.RolePolicyAttachment(
    "consumer-sqs",
    role=role,
    policy_arn="arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole",
)
dlq = aws.sqs.Queue("jobs-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "jobs",
    visibility_timeout_seconds=180,
    message_retention_seconds=345600,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
fn = aws.lambda_.Function(
    "consumer",
    runtime="python3.12",
    handler="c.handler",
    role=role.arn,
    timeout=30,
    code=pulumi.AssetArchive({"c.py": pulumi.StringAsset("def handler(e, c):\n    return {}\n")}),
)
aws.lambda_.EventSourceMapping(
    "consumer",
    event_source_arn=queue.arn,
    function_name=fn,
    batch_size=10,
    function_response_types=["ReportBatchItemFailures"],
)
alerts = aws.sns.Topic("alerts")
aws.cloudwatch.MetricAlarm(
    "jobs-dlq-visible",
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
