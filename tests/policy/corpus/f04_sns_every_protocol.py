"""SNS subscriptions of every protocol, only one of them with a redrive policy.

AWS facts: SNS defines a delivery policy per protocol; "when the delivery policy is exhausted,
Amazon SNS stops retrying the delivery and discards the message, unless a dead-letter queue is
attached to the subscription" (SNS Developer Guide, "Amazon SNS message delivery retries"), for
HTTP/S, email, SMS, mobile push and Firehose endpoints as for SQS and Lambda. Advisory for each
subscription without one; `webhook-kept` has a DLQ its policy lets SNS send to, alarmed.
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sns-subscription-has-redrive", "webhook-https"),
        ("sns-subscription-has-redrive", "webhook-http"),
        ("sns-subscription-has-redrive", "ops-email"),
        ("sns-subscription-has-redrive", "ops-email-json"),
        ("sns-subscription-has-redrive", "oncall-sms"),
        ("sns-subscription-has-redrive", "mobile-push"),
        ("sns-subscription-has-redrive", "archive-firehose"),
        ("sns-topic-encrypted", "notices"),
    ],
    "up_only": [
        (
            "sqs-queue-tls-only",
            "webhook-dlq",
            "its queue policy is an Output over the queue and topic ARNs, unknown in a preview, "
            "so whether it denies plain HTTP cannot be read",
        ),
    ],
}

topic = aws.sns.Topic("notices")
dlq = aws.sqs.Queue("webhook-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
aws.sqs.QueuePolicy(
    "webhook-dlq-policy",
    queue_url=dlq.id,
    policy=pulumi.Output.json_dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "sns.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": dlq.arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": topic.arn}},
                }
            ],
        }
    ),
)
aws.cloudwatch.MetricAlarm(
    "webhook-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
aws.sns.TopicSubscription(
    "webhook-kept",
    topic=topic.arn,
    protocol="https",
    endpoint="https://hooks.example.com/notices",
    redrive_policy=dlq.arn.apply(lambda arn: json.dumps({"deadLetterTargetArn": arn})),
)
for name, protocol, endpoint in (
    ("webhook-https", "https", "https://partner.example.com/notices"),
    ("webhook-http", "http", "http://legacy.example.com/notices"),
    ("ops-email", "email", "ops@example.com"),
    ("ops-email-json", "email-json", "ops-json@example.com"),
    ("oncall-sms", "sms", "+15555550100"),
    ("mobile-push", "application", "arn:aws:sns:eu-west-1:123456789012:endpoint/GCM/app/1"),
):
    aws.sns.TopicSubscription(name, topic=topic.arn, protocol=protocol, endpoint=endpoint)
aws.sns.TopicSubscription(
    "archive-firehose",
    topic=topic.arn,
    protocol="firehose",
    endpoint="arn:aws:firehose:eu-west-1:123456789012:deliverystream/notices",
    subscription_role_arn="arn:aws:iam::123456789012:role/sns-firehose",
)
