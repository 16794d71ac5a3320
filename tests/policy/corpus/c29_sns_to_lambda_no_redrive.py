"""An SNS topic fans out to a Lambda function: no subscription redrive, no async destination.

AWS facts: SNS invokes Lambda asynchronously; after Lambda's own retries the event is discarded
unless the function has an on-failure destination or DLQ (Lambda Developer Guide, "Asynchronous
invocation"). A subscription without a redrive policy loses messages SNS cannot deliver after
its retries (SNS Developer Guide, "Amazon SNS dead-letter queues") — advisory.
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
    "both": [
        ("lambda-async-has-failure-destination", "notify-fn"),
        ("sns-subscription-has-redrive", "notify-sub"),
    ],
}

topic = aws.sns.Topic(
    "orders-events", kms_master_key_id=aws.kms.Key("events-key", policy=TOPIC_KEY_POLICY).arn
)
fn = aws.lambda_.Function(
    "notify-fn",
    role="arn:aws:iam::123456789012:role/notify",
    runtime="nodejs22.x",
    handler="index.handler",
    code=pulumi.AssetArchive({}),
)
aws.sns.TopicSubscription("notify-sub", topic=topic.arn, protocol="lambda", endpoint=fn.arn)
aws.lambda_.Permission(
    "notify-invoke",
    action="lambda:InvokeFunction",
    function=fn.name,
    principal="sns.amazonaws.com",
    source_arn=topic.arn,
)
