"""An SNS subscription's DLQ whose policy does not admit SNS: redriven messages are lost.

AWS facts: when SNS cannot deliver to a subscription's endpoint it moves the message to the
subscription's DLQ itself, as sns.amazonaws.com on behalf of the topic; the DLQ's queue policy
must allow sns.amazonaws.com sqs:SendMessage (with aws:SourceArn of the topic), or the message
is lost (SNS Developer Guide, "Configuring an Amazon SNS dead-letter queue for a
subscription"). The endpoint queue's policy is right; the DLQ has none, and so no TLS-only
statement either (advisory). The DLQ is alarmed (NumberOfMessagesSent counts SNS's sends).
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
                "Sid": "CloudWatchPublishesToTheEncryptedTopic",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                "Resource": "*",
            },
        ],
    }
)

EXPECTED = {
    "both": [
        # delivery-permission-granted: SNS redrives into `invoices-sub-dlq`, whose (absent)
        # policy does not let sns.amazonaws.com send.
        ("delivery-permission-granted", "invoices-sub-dlq"),
        ("sqs-queue-tls-only", "invoices-sub-dlq"),
    ],
}

key = aws.kms.Key("invoices-key", policy=TOPIC_KEY_POLICY)
topic = aws.sns.Topic("invoices", kms_master_key_id=key.arn)
alerts = aws.sns.Topic("invoices-alerts", kms_master_key_id=key.arn)
inbox = aws.sqs.Queue("invoices-inbox", sqs_managed_sse_enabled=True)
dlq = aws.sqs.Queue(
    "invoices-sub-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
aws.sqs.QueuePolicy(
    "invoices-inbox-policy",
    queue_url=inbox.id,
    policy=pulumi.Output.json_dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "TopicSends",
                    "Effect": "Allow",
                    "Principal": {"Service": "sns.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": inbox.arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": topic.arn}},
                },
                {
                    "Sid": "TlsOnly",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sqs:*",
                    "Resource": inbox.arn,
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
            ],
        }
    ),
)
aws.sns.TopicSubscription(
    "invoices-sub",
    topic=topic.arn,
    protocol="sqs",
    endpoint=inbox.arn,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn}),
)
aws.cloudwatch.MetricAlarm(
    "invoices-sub-dlq-sent",
    namespace="AWS/SQS",
    metric_name="NumberOfMessagesSent",
    dimensions={"QueueName": dlq.name},
    statistic="Sum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alerts.arn],
)
