"""An SNS topic fans out to a Lambda function: no subscription redrive, no async destination.

AWS facts: SNS invokes Lambda asynchronously; after Lambda's own retries the event is discarded
unless the function has an on-failure destination or DLQ (Lambda Developer Guide, "Asynchronous
invocation"). A subscription without a redrive policy loses messages SNS cannot deliver after
its retries (SNS Developer Guide, "Amazon SNS dead-letter queues") — advisory.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("lambda-async-has-failure-destination", "notify-fn"),
        ("sns-subscription-has-redrive", "notify-sub"),
    ],
}

topic = aws.sns.Topic("orders-events", kms_master_key_id=aws.kms.Key("events-key").arn)
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
