"""A custom event bus routing order events to an SQS queue; the queue policy (rendered by
`get_policy_document_output`) lets only that rule send."""

import pulumi
import pulumi_aws as aws

bus = aws.cloudwatch.EventBus("orders")
dlq = aws.sqs.Queue(
    "order-events-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
queue = aws.sqs.Queue(
    "order-events",
    sqs_managed_sse_enabled=True,
    redrive_policy=dlq.arn.apply(
        lambda arn: f'{{"deadLetterTargetArn": "{arn}", "maxReceiveCount": 5}}'
    ),
)
rule = aws.cloudwatch.EventRule(
    "order-placed",
    event_bus_name=bus.name,
    event_pattern='{"source": ["shop.orders"], "detail-type": ["OrderPlaced"]}',
)
aws.cloudwatch.EventTarget("order-placed", rule=rule.name, event_bus_name=bus.name, arn=queue.arn)
policy = aws.iam.get_policy_document_output(
    statements=[
        {
            "effect": "Allow",
            "principals": [{"type": "Service", "identifiers": ["events.amazonaws.com"]}],
            "actions": ["sqs:SendMessage"],
            "resources": [queue.arn],
            "conditions": [
                {"test": "ArnEquals", "variable": "aws:SourceArn", "values": [rule.arn]}
            ],
        }
    ]
)
aws.sqs.QueuePolicy("order-events", queue_url=queue.id, policy=policy.json)
aws.cloudwatch.MetricAlarm(
    "order-events-dlq",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=0,
    comparison_operator="GreaterThanThreshold",
)
pulumi.export("bus", bus.arn)
