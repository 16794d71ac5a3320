"""The queue policy lets SNS send only on behalf of another topic (a copy-paste slip).

AWS facts: with Condition ArnEquals aws:SourceArn = topic A, SQS refuses SendMessage from
topic B (IAM User Guide, aws:SourceArn; SNS Developer Guide, "Sending messages to an SQS
queue"); B's deliveries are lost. The subscribed topic's ARN is known only at `up` (a new
topic's ARN is unknown in a preview), so only `up` can compare it with the condition.
"""

import json

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
    "both": [
        ("sns-subscription-has-redrive", "refunds-sub"),
    ],
    "up_only": [
        (
            "delivery-permission-granted",
            "refunds-inbox",
            "the subscribed topic's ARN is unknown in a preview, so the condition naming the "
            "legacy topic cannot be compared with it",
        ),
        (
            "sqs-queue-tls-only",
            "refunds-inbox",
            "its queue policy is built from the queue's ARN, unknown in a preview",
        ),
    ],
}

topic = aws.sns.Topic(
    "refund-events", kms_master_key_id=aws.kms.Key("refund-key", policy=TOPIC_KEY_POLICY).arn
)
inbox = aws.sqs.Queue("refunds-inbox", sqs_managed_sse_enabled=True)
aws.sqs.QueuePolicy(
    "refunds-inbox-policy",
    queue_url=inbox.id,
    policy=inbox.arn.apply(
        lambda arn: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "sns.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": arn,
                        "Condition": {
                            "ArnEquals": {
                                "aws:SourceArn": "arn:aws:sns:eu-west-1:123456789012:legacy-refunds"
                            }
                        },
                    }
                ],
            }
        )
    ),
)
aws.sns.TopicSubscription("refunds-sub", topic=topic.arn, protocol="sqs", endpoint=inbox.arn)
