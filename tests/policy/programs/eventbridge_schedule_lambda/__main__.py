"""A nightly EventBridge rule invoking a Lambda function, with the permission scoped to the
rule's computed ARN and a DLQ for failed deliveries."""

import json

import pulumi
import pulumi_aws as aws

role = aws.iam.Role(
    "nightly",
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
fn = aws.lambda_.Function(
    "nightly-report",
    runtime="python3.12",
    handler="r.handler",
    role=role.arn,
    timeout=300,
    code=pulumi.AssetArchive({"r.py": pulumi.StringAsset("def handler(e, c):\n    pass\n")}),
)
dlq = aws.sqs.Queue("nightly-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
rule = aws.cloudwatch.EventRule("nightly", schedule_expression="cron(0 3 * * ? *)")
aws.cloudwatch.EventTarget(
    "nightly",
    rule=rule.name,
    arn=fn.arn,
    retry_policy={"maximum_retry_attempts": 2, "maximum_event_age_in_seconds": 3600},
    dead_letter_config={"arn": dlq.arn},
)
aws.lambda_.Permission(
    "nightly-invoke",
    action="lambda:InvokeFunction",
    function=fn,
    principal="events.amazonaws.com",
    source_arn=rule.arn,
)
aws.cloudwatch.MetricAlarm(
    "nightly-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=300,
    evaluation_periods=1,
    threshold=0,
    comparison_operator="GreaterThanThreshold",
)
