"""A Kinesis stream consumer whose stream ARN comes from another stack.

AWS facts: stream sources require StartingPosition (Lambda API Reference,
CreateEventSourceMapping), SQS sources take none, so this mapping is a stream mapping even
with an unknown source ARN: no ReportBatchItemFailures demand, and its on-failure destination
(valid for streams) is an SNS topic, not a queue.
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
    "both": [],
}

streams = pulumi.StackReference("acme/streams/prod")
failures = aws.sns.Topic(
    "clickstream-failures", kms_master_key_id=aws.kms.Key("cs-key", policy=TOPIC_KEY_POLICY).arn
)
fn = aws.lambda_.Function(
    "clickstream",
    role="arn:aws:iam::123456789012:role/clickstream",
    runtime="python3.12",
    handler="c.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
aws.lambda_.EventSourceMapping(
    "clickstream-esm",
    event_source_arn=streams.get_output("clickstream_arn"),
    function_name=fn.arn,
    starting_position="LATEST",
    batch_size=500,
    bisect_batch_on_function_error=True,
    maximum_retry_attempts=3,
    destination_config={"on_failure": {"destination_arn": failures.arn}},
)
