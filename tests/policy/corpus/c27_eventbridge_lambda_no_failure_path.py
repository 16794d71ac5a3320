"""An EventBridge rule invokes a Lambda function; no retry policy, no DLQ, no destination.

AWS facts: EventBridge invokes Lambda asynchronously; Lambda retries a failing event at most
twice and then discards it unless the function has an on-failure destination or a DLQ (Lambda
Developer Guide, "Asynchronous invocation"). An EventBridge target without a DLQ drops an event
it cannot deliver after 24 h / 185 attempts (EventBridge User Guide, "Event retry policy and
using dead-letter queues").
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("lambda-async-has-failure-destination", "sync-fn"),
        ("eventbridge-target-has-retry-and-dlq", "sync-target"),
    ],
}

fn = aws.lambda_.Function(
    "sync-fn",
    role="arn:aws:iam::123456789012:role/sync",
    runtime="python3.12",
    handler="sync.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
rule = aws.cloudwatch.EventRule(
    "sync-rule",
    event_pattern=json.dumps({"source": ["acme.crm"], "detail-type": ["ContactUpdated"]}),
)
aws.cloudwatch.EventTarget("sync-target", rule=rule.name, arn=fn.arn)
aws.lambda_.Permission(
    "sync-invoke",
    action="lambda:InvokeFunction",
    function=fn.name,
    principal="events.amazonaws.com",
    source_arn=rule.arn,
)
