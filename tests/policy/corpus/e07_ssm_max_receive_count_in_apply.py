"""The redrive policy is built with json.dumps inside an apply, its maxReceiveCount from SSM.

AWS facts: maxReceiveCount is how many receives a message gets before SQS moves it to the
dead-letter queue; 1 dead-letters a message on its first transient failure (SQS Developer
Guide, "Using dead-letter queues": set it high enough to allow retries). Pulumi facts: the
value is an SSM parameter read for real by a preview; offline it is unknown, and a policy
document built from an unknown (here with json.dumps in the program's apply) is unknown too,
so the receive-count rule stays undecided instead of judging the placeholder the engine used
to give ("1": a mandatory "maxReceiveCount 1" finding for a parameter that says 5).
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [],
}


max_receive_count = int(aws.ssm.get_parameter(name="/orders/max-receive-count").value)
tls_deny = {
    "Effect": "Deny",
    "Principal": "*",
    "Action": "sqs:*",
    "Resource": "*",
    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
}
dlq = aws.sqs.Queue(
    "orders-dlq",
    message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True,
    policy=json.dumps({"Version": "2012-10-17", "Statement": [tls_deny]}),
)
queue = aws.sqs.Queue(
    "orders",
    visibility_timeout_seconds=360,
    message_retention_seconds=345600,
    sqs_managed_sse_enabled=True,
    policy=json.dumps({"Version": "2012-10-17", "Statement": [tls_deny]}),
    redrive_policy=dlq.arn.apply(
        lambda arn: json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": max_receive_count})
    ),
)
fn = aws.lambda_.Function(
    "orders-fn",
    role="arn:aws:iam::123456789012:role/orders",
    runtime="python3.12",
    handler="orders.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
aws.lambda_.EventSourceMapping(
    "orders-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    function_response_types=["ReportBatchItemFailures"],
)
alerts = aws.sns.Topic(
    "orders-alerts",
    kms_master_key_id=aws.kms.Key(
        "orders-alerts-key",
        policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                        "Action": "kms:*",
                        "Resource": "*",
                    },
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "cloudwatch.amazonaws.com"},
                        "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                        "Resource": "*",
                    },
                ],
            }
        ),
    ).arn,
)
aws.cloudwatch.MetricAlarm(
    "orders-dlq-visible",
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
