"""The correct pipeline of c42 with nothing protecting its data: advised, resource by resource.

Enables the opt-in advisory stateful-pipeline-resource-protected (ENABLED_RULES). AWS and Pulumi
facts: deleting an SQS queue deletes the messages in it (SQS Developer Guide, DeleteQueue), and
deleting a DynamoDB table deletes its items (DynamoDB Developer Guide, DeleteTable). Pulumi
replaces a queue whose `fifoQueue` or `name` changes and a table whose key schema or `name`
changes (delete of the old resource included); only the `protect` resource option makes the
engine refuse that ("Resource options: protect"). The source queue (read by the mapping, with a
redrive policy) holds in-flight messages, the DLQ (its redrive target) dead letters, and the
table (env IDEMPOTENCY_TABLE, Powertools' variable) the idempotency claims: all three are
unprotected. The scratch queue carries nothing the pipeline owns (no mapping reads it, no
redrive names it) and is not advised.
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
    "both": [
        ("stateful-pipeline-resource-protected", "payments"),
        ("stateful-pipeline-resource-protected", "payments-dlq"),
        ("stateful-pipeline-resource-protected", "payments-idempotency"),
    ],
}

key = aws.kms.Key("alarms-key", policy=TOPIC_KEY_POLICY, enable_key_rotation=True)
alarms = aws.sns.Topic("alarms", kms_master_key_id=key.arn)
dlq = aws.sqs.Queue(
    "payments-dlq",
    message_retention_seconds=1209600,
    sqs_managed_sse_enabled=True,
)
queue = aws.sqs.Queue(
    "payments",
    visibility_timeout_seconds=180,
    message_retention_seconds=345600,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
# A scratch queue nobody consumes, with no redrive and no source dead-lettering into it:
# it carries no pipeline data, so it is not stateful and needs no protection.
scratch = aws.sqs.Queue("payments-scratch", sqs_managed_sse_enabled=True)
for name, q in (("payments", queue), ("payments-dlq", dlq), ("payments-scratch", scratch)):
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
