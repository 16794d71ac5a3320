"""An EventBridge rule targets an SNS topic that keeps the default topic policy.

AWS facts: the default SNS topic policy allows only the owning account's principals; EventBridge
publishes as events.amazonaws.com and needs a topic policy statement allowing it sns:Publish
(EventBridge User Guide, "Permissions for Amazon SNS"). Every matched event is refused. The
target also has no retry policy and no DLQ.
"""

import json

import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("delivery-permission-granted", "ops-feed"),
        ("eventbridge-target-has-retry-and-dlq", "ops-feed-target"),
        ("sns-topic-encrypted", "ops-feed"),
    ],
}

topic = aws.sns.Topic("ops-feed")
rule = aws.cloudwatch.EventRule(
    "ec2-state",
    event_pattern=json.dumps(
        {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]}
    ),
)
aws.cloudwatch.EventTarget("ops-feed-target", rule=rule.name, arn=topic.arn)
