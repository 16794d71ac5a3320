"""A team's own consumer component, instantiated in a loop over config, tuned from SSM.

AWS/Pulumi facts: `aws.ssm.get_parameter_output(...)` is an Output-returning invoke; in a
preview the engine reads the parameter for real, offline its value is unknown, so the Output
is unknown and the `.apply(int)` over it never runs (as for any computed value in a preview):
the visibility timeout the component derives from it is unknown, and the visibility rules stay
undecided (Lambda refuses an SQS event source whose visibility timeout is below the function
timeout; AWS advises 6x). The engine used to run the callback on the placeholder "1" and
report a mandatory violation for each consumer. The "audit" consumer is genuinely wrong and
stays reported: its visibility timeout is the literal 30 s for a 60 s function, and it does
not report partial batch failures (a failed record makes Lambda retry the whole batch).
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sqs-visibility-timeout-covers-lambda-timeout", "audit-queue"),
        ("sqs-visibility-timeout-6x-lambda-timeout", "audit-queue"),
        ("lambda-sqs-esm-reports-batch-item-failures", "audit-esm"),
    ],
}

DEFAULT_CONSUMERS = {
    "orders": {"timeout": 60, "tuned": True},
    "refunds": {"timeout": 120, "tuned": True},
    "audit": {"timeout": 60, "tuned": False},
}


class Consumer(pulumi.ComponentResource):
    """Queue + DLQ + function + mapping, the way the platform team packages it."""

    def __init__(self, name, *, timeout, visibility, partial_failures, opts=None):
        super().__init__("acme:messaging:Consumer", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.dlq = aws.sqs.Queue(
            f"{name}-dlq",
            message_retention_seconds=1209600,
            sqs_managed_sse_enabled=True,
            opts=child,
        )
        self.queue = aws.sqs.Queue(
            f"{name}-queue",
            visibility_timeout_seconds=visibility,
            message_retention_seconds=345600,
            sqs_managed_sse_enabled=True,
            redrive_policy=self.dlq.arn.apply(
                lambda arn: json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})
            ),
            opts=child,
        )
        for queue, suffix in ((self.queue, "queue"), (self.dlq, "dlq")):
            aws.sqs.QueuePolicy(
                f"{name}-{suffix}-tls",
                queue_url=queue.url,
                policy=queue.arn.apply(
                    lambda arn: json.dumps(
                        {
                            "Version": "2012-10-17",
                            "Statement": [
                                {
                                    "Effect": "Deny",
                                    "Principal": "*",
                                    "Action": "sqs:*",
                                    "Resource": arn,
                                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                }
                            ],
                        }
                    )
                ),
                opts=child,
            )
        self.function = aws.lambda_.Function(
            f"{name}-fn",
            role=f"arn:aws:iam::123456789012:role/{name}",
            runtime="python3.12",
            handler="app.handler",
            code=pulumi.AssetArchive({}),
            timeout=timeout,
            opts=child,
        )
        aws.lambda_.EventSourceMapping(
            f"{name}-esm",
            event_source_arn=self.queue.arn,
            function_name=self.function.arn,
            batch_size=10,
            function_response_types=["ReportBatchItemFailures"] if partial_failures else None,
            opts=child,
        )
        self.register_outputs({"queue_url": self.queue.url})


config = pulumi.Config()
consumers = config.get_object("consumers") or DEFAULT_CONSUMERS
alerts = aws.sns.Topic(
    "consumer-alerts",
    kms_master_key_id=aws.kms.Key(
        "consumer-alerts-key",
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
for name, spec in consumers.items():
    if spec["tuned"]:
        visibility = aws.ssm.get_parameter_output(
            name=f"/consumers/{name}/visibility-timeout"
        ).value.apply(int)
    else:
        visibility = 30
    consumer = Consumer(
        name,
        timeout=spec["timeout"],
        visibility=visibility,
        partial_failures=spec["tuned"],
    )
    aws.cloudwatch.MetricAlarm(
        f"{name}-dlq-visible",
        namespace="AWS/SQS",
        metric_name="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": consumer.dlq.name},
        statistic="Maximum",
        period=60,
        evaluation_periods=1,
        threshold=1,
        comparison_operator="GreaterThanOrEqualToThreshold",
        alarm_actions=[alerts],
    )
