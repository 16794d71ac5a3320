"""The same consumer in two regions, alerting a topic another stack owns, tuned from SSM.

AWS facts: a standard queue's messages keep their ORIGINAL enqueue timestamp when moved to a
dead-letter queue, so a DLQ whose retention is not longer than its source's deletes
dead-lettered messages early (SQS Developer Guide, "Using dead-letter queues"); Lambda refuses
an SQS event source whose visibility timeout is below the function timeout. Pulumi facts: each
region's data sources run through that region's provider (`InvokeOptions(provider=...)`); a
StackReference's outputs are another stack's (unknown offline, absent at `up`), and the SSM
parameters are read for real by a preview, unknown offline. Here each region's DLQ retention
comes from that region's Parameter Store: unknown, so the retention rule stays undecided. The
engine used to answer "1" (1 s DLQ retention against 4 days at the source: a mandatory finding
in both regions) although the real parameter says 14 days. The alarm topic ARN comes from the
shared "observability" stack; the ARNs name each queue's own region.
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [],
}

REGIONS = ("eu-west-1", "us-east-1")
shared = pulumi.StackReference(f"acme/observability/{pulumi.get_stack()}")
me = aws.get_caller_identity()


def tls_only(arn: str) -> str:
    document = aws.iam.get_policy_document(
        statements=[
            {
                "effect": "Deny",
                "principals": [{"type": "*", "identifiers": ["*"]}],
                "actions": ["sqs:*"],
                "resources": [arn],
                "conditions": [
                    {"test": "Bool", "variable": "aws:SecureTransport", "values": ["false"]}
                ],
            }
        ]
    )
    return document.json


for region in REGIONS:
    provider = aws.Provider(f"aws-{region}", region=region)
    in_region = pulumi.ResourceOptions(provider=provider)
    retention = aws.ssm.get_parameter(
        name="/messaging/dlq-retention-seconds", opts=pulumi.InvokeOptions(provider=provider)
    )
    dlq = aws.sqs.Queue(
        f"orders-dlq-{region}",
        message_retention_seconds=int(retention.value),
        sqs_managed_sse_enabled=True,
        opts=in_region,
    )
    queue = aws.sqs.Queue(
        f"orders-{region}",
        visibility_timeout_seconds=360,
        message_retention_seconds=345600,
        sqs_managed_sse_enabled=True,
        redrive_policy=pulumi.Output.json_dumps(
            {"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}
        ),
        opts=in_region,
    )
    for q, label in ((queue, "orders"), (dlq, "orders-dlq")):
        aws.sqs.QueuePolicy(
            f"{label}-{region}-tls",
            queue_url=q.url,
            policy=q.arn.apply(tls_only),
            opts=in_region,
        )
    fn = aws.lambda_.Function(
        f"orders-fn-{region}",
        role=me.arn.replace(":user/offline", ":role/orders"),
        runtime="python3.12",
        handler="orders.handler",
        code=pulumi.AssetArchive({}),
        timeout=60,
        opts=in_region,
    )
    aws.lambda_.EventSourceMapping(
        f"orders-esm-{region}",
        event_source_arn=queue.arn,
        function_name=fn.arn,
        function_response_types=["ReportBatchItemFailures"],
        opts=in_region,
    )
    aws.cloudwatch.MetricAlarm(
        f"orders-dlq-visible-{region}",
        namespace="AWS/SQS",
        metric_name="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": dlq.name},
        statistic="Maximum",
        period=60,
        evaluation_periods=1,
        threshold=1,
        comparison_operator="GreaterThanOrEqualToThreshold",
        alarm_actions=[shared.get_output(f"alarmTopicArn-{region}")],
        opts=in_region,
    )
    pulumi.export(f"queue-{region}", queue.arn)
pulumi.export("account", json.dumps({"id": me.account_id}))
