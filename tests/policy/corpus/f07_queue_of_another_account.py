"""A consumer of a partner account's queue, looked up by name through the partner's provider.

AWS facts: `sqs.get_queue` answers for the account its provider's credentials act in; a queue
is identified by its account as much as its name, and a DLQ, alarm or mapping links to it only
in that account (SQS Developer Guide, "Amazon SQS queue and message identifiers"). This stack
owns a queue also named `orders`, consumed by a fast function and well configured; the partner's
`orders` (looked up through a profile provider and through an assumed-role provider of account
999999999999) is consumed by a slow function, and is not this stack's queue to judge: its
visibility timeout is the partner's. No finding.
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sns-topic-encrypted", "orders-alarms"),
    ],
}

partner_profile = aws.Provider("partner-profile", region="eu-west-1", profile="partner")
partner_role = aws.Provider(
    "partner-role",
    region="eu-west-1",
    assume_roles=[{"role_arn": "arn:aws:iam::999999999999:role/consumer"}],
)
alarm_topic = aws.sns.Topic("orders-alarms")
dlq = aws.sqs.Queue(
    "orders-dlq", name="orders-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
own = aws.sqs.Queue(
    "orders",
    name="orders",
    visibility_timeout_seconds=60,
    sqs_managed_sse_enabled=True,
    redrive_policy=dlq.arn.apply(
        lambda arn: json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})
    ),
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sqs:*",
                    "Resource": "arn:aws:sqs:eu-west-1:123456789012:orders",
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        }
    ),
)
aws.sqs.QueuePolicy(
    "orders-dlq-policy",
    queue_url=dlq.id,
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sqs:*",
                    "Resource": "arn:aws:sqs:eu-west-1:123456789012:orders-dlq",
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        }
    ),
)
aws.cloudwatch.MetricAlarm(
    "orders-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": "orders-dlq"},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alarm_topic.arn],
)


def worker(name: str, timeout: int) -> aws.lambda_.Function:
    return aws.lambda_.Function(
        name,
        role="arn:aws:iam::123456789012:role/orders",
        runtime="python3.12",
        handler="orders.handler",
        code=pulumi.AssetArchive({}),
        timeout=timeout,
    )


fast, slow = worker("orders-fast", 10), worker("partner-slow", 600)
aws.lambda_.EventSourceMapping(
    "own-esm",
    event_source_arn=own.arn,
    function_name=fast.arn,
    function_response_types=["ReportBatchItemFailures"],
)
for name, provider in (("partner-profile", partner_profile), ("partner-role", partner_role)):
    theirs = aws.sqs.get_queue(name="orders", opts=pulumi.InvokeOptions(provider=provider))
    aws.lambda_.EventSourceMapping(
        f"{name}-esm",
        event_source_arn=theirs.arn,
        function_name=slow.arn,
        function_response_types=["ReportBatchItemFailures"],
    )
