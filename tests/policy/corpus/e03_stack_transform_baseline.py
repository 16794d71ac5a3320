"""A stack transform applies the organisation's encryption baseline to every queue.

Pulumi facts (docs, "Resource option: transforms" / `register_resource_transform`): a stack
transform is a callback the engine invokes for every resource registered after it, before the
resource is checked or created; its result replaces the inputs, so what CrossGuard sees (and
what AWS gets) has the transform applied. Here it turns on SSE-SQS (`sqsManagedSseEnabled`,
SQS-managed encryption at rest) for every queue, and tags everything with the owning team.
The offline engine used to store transforms without running them, so both queues were
reported unencrypted though the deployed ones are encrypted.
"""

import json

import pulumi
import pulumi_aws as aws

# The key lets CloudWatch alarms and EventBridge publish to the encrypted topic (a default
# key policy admits only the account's IAM principals).
TOPIC_KEY_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Account",
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                "Action": "kms:*",
                "Resource": "*",
            },
            {
                "Sid": "ServicesPublishToTheEncryptedTopic",
                "Effect": "Allow",
                "Principal": {"Service": ["cloudwatch.amazonaws.com", "events.amazonaws.com"]},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                "Resource": "*",
            },
        ],
    }
)


EXPECTED = {
    "both": [],
}


def baseline(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """The platform baseline: queues encrypted with SSE-SQS, everything tagged."""
    props = dict(args.props)
    if args.type_ == "aws:sqs/queue:Queue" and "kmsMasterKeyId" not in props:
        props["sqsManagedSseEnabled"] = True
    if args.type_.startswith("aws:") and args.type_ not in UNTAGGED:
        props["tags"] = {**(props.get("tags") or {}), "team": "payments"}
    return pulumi.ResourceTransformResult(props, args.opts)


UNTAGGED = {"aws:sqs/queuePolicy:QueuePolicy", "aws:lambda/eventSourceMapping:EventSourceMapping"}
pulumi.runtime.register_resource_transform(baseline)

key = aws.kms.Key("alarms-key", policy=TOPIC_KEY_POLICY, enable_key_rotation=True)
alarms = aws.sns.Topic("alarms", kms_master_key_id=key.arn)
dlq = aws.sqs.Queue("payments-dlq", message_retention_seconds=1209600)
queue = aws.sqs.Queue(
    "payments",
    visibility_timeout_seconds=180,
    message_retention_seconds=345600,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
for name, q in (("payments", queue), ("payments-dlq", dlq)):
    aws.sqs.QueuePolicy(
        f"{name}-tls-only",
        queue_url=q.url,
        policy=q.arn.apply(
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
    )
idempotency = aws.dynamodb.Table(
    "payments-idempotency",
    hash_key="id",
    attributes=[{"name": "id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    ttl={"attribute_name": "expiration", "enabled": True},
    point_in_time_recovery={"enabled": True},
)
fn = aws.lambda_.Function(
    "payments-consumer",
    role="arn:aws:iam::123456789012:role/payments-consumer",
    runtime="python3.12",
    handler="consumer.handler",
    code=pulumi.AssetArchive({}),
    timeout=30,
    environment={"variables": {"IDEMPOTENCY_TABLE": idempotency.name}},
)
aws.lambda_.EventSourceMapping(
    "payments-consumer-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    batch_size=10,
    function_response_types=["ReportBatchItemFailures"],
    scaling_config={"maximum_concurrency": 20},
)
aws.cloudwatch.MetricAlarm(
    "payments-dlq-visible",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alarms.arn],
    ok_actions=[alarms.arn],
)
