"""An SNS topic subscribes an SQS queue whose queue has no policy at all.

AWS facts: SNS can deliver to an SQS queue only if the queue policy allows the topic (service
principal sns.amazonaws.com, aws:SourceArn = topic ARN) sqs:SendMessage (SNS Developer Guide,
"Sending Amazon SNS messages to an Amazon SQS queue", step 2); without it every delivery is
refused. The subscription also has no redrive policy (advisory).
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
        ("delivery-permission-granted", "audit-events"),
        ("sns-subscription-has-redrive", "audit-events-sub"),
        ("sqs-queue-tls-only", "audit-events"),
    ],
}

topic = aws.sns.Topic(
    "domain-events", kms_master_key_id=aws.kms.Key("events-key", policy=TOPIC_KEY_POLICY).arn
)
queue = aws.sqs.Queue("audit-events", sqs_managed_sse_enabled=True)
aws.sns.TopicSubscription("audit-events-sub", topic=topic.arn, protocol="sqs", endpoint=queue.arn)
