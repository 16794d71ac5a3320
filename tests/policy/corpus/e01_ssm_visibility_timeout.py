"""A complete pipeline whose queue visibility timeout comes from an SSM parameter.

AWS/Pulumi facts: during `pulumi preview` a data source runs for real (the engine calls
ssm:GetParameter), so the visibility timeout is the parameter's value; offline it cannot be
known, and a value the checker cannot know is unknown, exactly as a preview treats unknowns:
the visibility rules (Lambda refuses an event source whose queue visibility timeout is below
the function timeout; AWS advises 6x) stay undecided rather than judging an invented value.
The engine used to answer every SSM value with "1", so this valid program got a mandatory
"visibility 1 s < function timeout 30 s" and the gate blocked it. `--answers` pins the real
value (then it is judged). Everything else is as in c42 (correct).
"""

import json

import pulumi
import pulumi_aws as aws

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

stage = pulumi.get_stack()
# The platform team publishes the tuned timeouts per stage in Parameter Store.
visibility = int(aws.ssm.get_parameter(name=f"/payments/{stage}/visibility-timeout").value)
function_timeout = 30

key = aws.kms.Key("alarms-key", policy=TOPIC_KEY_POLICY, enable_key_rotation=True)
alarms = aws.sns.Topic("alarms", kms_master_key_id=key.arn)
dlq = aws.sqs.Queue("payments-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "payments",
    visibility_timeout_seconds=visibility,
    message_retention_seconds=345600,
    sqs_managed_sse_enabled=True,
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
    timeout=function_timeout,
    environment={"variables": {"IDEMPOTENCY_TABLE": idempotency.name}},
)
aws.lambda_.EventSourceMapping(
    "payments-consumer-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    batch_size=10,
    function_response_types=["ReportBatchItemFailures"],
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
