"""A vendored component with a fixed visibility timeout, fixed per instance by a transform.

Pulumi facts (docs, "Resource option: transforms"): `ResourceOptions(transforms=[...])` on a
component applies to the component and ALL its children; the engine runs a resource's own
transforms, then its parent's, then the stack's, before anything sees the inputs. AWS facts:
Lambda refuses an SQS event source whose queue visibility timeout is below the function
timeout, and advises at least 6x (Lambda Developer Guide, "Using Lambda with Amazon SQS").
The vendored `Worker` hard-codes 30 s for a 60 s function. The "billing" instance carries a
transform raising its queue to 6 x 60 = 360 s: correct. The "reports" instance has none and is
reported (both the refusal and the 6x advice). The offline engine used to ignore transforms,
so it reported "billing" too.
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sqs-visibility-timeout-covers-lambda-timeout", "reports-queue"),
        ("sqs-visibility-timeout-6x-lambda-timeout", "reports-queue"),
    ],
}

TLS_ONLY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sqs:*",
            "Resource": "*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
    ],
}


class Worker(pulumi.ComponentResource):
    """Vendored from another team's repository; its queue settings are not parameters."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("vendor:workers:Worker", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.dlq = aws.sqs.Queue(
            f"{name}-dlq",
            message_retention_seconds=1209600,
            sqs_managed_sse_enabled=True,
            policy=json.dumps(TLS_ONLY),
            opts=child,
        )
        self.queue = aws.sqs.Queue(
            f"{name}-queue",
            visibility_timeout_seconds=30,
            sqs_managed_sse_enabled=True,
            policy=json.dumps(TLS_ONLY),
            redrive_policy=pulumi.Output.json_dumps(
                {"deadLetterTargetArn": self.dlq.arn, "maxReceiveCount": 5}
            ),
            opts=child,
        )
        fn = aws.lambda_.Function(
            f"{name}-fn",
            role=f"arn:aws:iam::123456789012:role/{name}",
            runtime="python3.12",
            handler="worker.handler",
            code=pulumi.AssetArchive({}),
            timeout=60,
            opts=child,
        )
        aws.lambda_.EventSourceMapping(
            f"{name}-esm",
            event_source_arn=self.queue.arn,
            function_name=fn.arn,
            function_response_types=["ReportBatchItemFailures"],
            opts=child,
        )
        self.register_outputs({})


def visibility_for(function_timeout: int):
    def transform(args: pulumi.ResourceTransformArgs):
        if args.type_ == "aws:sqs/queue:Queue" and not args.name.endswith("-dlq"):
            props = {**args.props, "visibilityTimeoutSeconds": 6 * function_timeout}
            return pulumi.ResourceTransformResult(props, args.opts)
        return None

    return transform


alerts = aws.sns.Topic(
    "worker-alerts",
    kms_master_key_id=aws.kms.Key(
        "worker-alerts-key",
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
workers = {
    "billing": Worker("billing", pulumi.ResourceOptions(transforms=[visibility_for(60)])),
    "reports": Worker("reports"),
}
for name, worker in workers.items():
    aws.cloudwatch.MetricAlarm(
        f"{name}-dlq-visible",
        namespace="AWS/SQS",
        metric_name="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": worker.dlq.name},
        statistic="Maximum",
        period=60,
        evaluation_periods=1,
        threshold=1,
        comparison_operator="GreaterThanOrEqualToThreshold",
        alarm_actions=[alerts],
    )
