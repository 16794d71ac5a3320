"""An EventBridge rule targets a topic encrypted with `alias/aws/sns`, policy allowing events.

AWS facts: EventBridge must use the topic's KMS key to publish; the AWS-managed alias/aws/sns
key's policy cannot grant events.amazonaws.com, so publishing fails even though the topic
policy allows sns:Publish (EventBridge User Guide, "Amazon SNS permissions": encrypted topics
need a customer managed key). The target has retry and DLQ settings; the DLQ allows EventBridge
and is alarmed on a separate, unencrypted topic (advisory).
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("delivery-permission-granted", "deploys"),
        ("sns-topic-encrypted", "deploys-alarms"),
    ],
    "up_only": [
        (
            "sqs-queue-tls-only",
            "deploys-target-dlq",
            "its queue policy is built from the queue and rule ARNs, unknown in a preview",
        ),
    ],
}

topic = aws.sns.Topic("deploys", kms_master_key_id="alias/aws/sns")
aws.sns.TopicPolicy(
    "deploys-policy",
    arn=topic.arn,
    policy=topic.arn.apply(
        lambda arn: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sns:Publish",
                        "Resource": arn,
                    }
                ],
            }
        )
    ),
)
rule = aws.cloudwatch.EventRule(
    "codepipeline-state", event_pattern=json.dumps({"source": ["aws.codepipeline"]})
)
dlq = aws.sqs.Queue(
    "deploys-target-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
aws.sqs.QueuePolicy(
    "deploys-target-dlq-policy",
    queue_url=dlq.id,
    policy=pulumi.Output.all(dlq.arn, rule.arn).apply(
        lambda args: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": args[0],
                        "Condition": {"ArnEquals": {"aws:SourceArn": args[1]}},
                    }
                ],
            }
        )
    ),
)
aws.cloudwatch.EventTarget(
    "deploys-target",
    rule=rule.name,
    arn=topic.arn,
    retry_policy={"maximum_retry_attempts": 5, "maximum_event_age_in_seconds": 3600},
    dead_letter_config={"arn": dlq.arn},
)
alarms = aws.sns.Topic("deploys-alarms")
aws.cloudwatch.MetricAlarm(
    "deploys-target-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alarms.arn],
)
