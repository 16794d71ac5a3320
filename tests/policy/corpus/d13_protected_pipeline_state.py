"""The pipeline of d12 with its queues and table protected: nothing to advise.

Enables the opt-in advisory stateful-pipeline-resource-protected (ENABLED_RULES). Pulumi facts:
with `protect=True` the engine refuses any update or destroy that would delete the resource
("Resource options: protect"): a replacement fails the preview until it is unprotected with
`pulumi state unprotect`; `retain_on_delete=True` leaves it in AWS should a delete still happen.
The source queue, its DLQ and the idempotency table (env IDEMPOTENCY_TABLE) are all protected,
so the advisory has nothing to say; the policy pack sees `protect` (PolicyResource.opts).
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


ENABLED_RULES = ["stateful-pipeline-resource-protected"]

EXPECTED = {
    "both": [],
}

key = aws.kms.Key("alarms-key", policy=TOPIC_KEY_POLICY, enable_key_rotation=True)
alarms = aws.sns.Topic("alarms", kms_master_key_id=key.arn)
dlq = aws.sqs.Queue(
    "payments-dlq",
    message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True,
    opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True),
)
queue = aws.sqs.Queue(
    "payments",
    visibility_timeout_seconds=180,
    message_retention_seconds=345600,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
    opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True),
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
    opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True),
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
