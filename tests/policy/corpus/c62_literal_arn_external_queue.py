"""A consumer of a queue that exists outside the stack, referenced by literal ARN.

AWS facts: the mapping's source ARN names an SQS queue (service `sqs` in the ARN), so SQS rules
that need only the mapping apply: a batch size of 50 without a batching window is rejected by
Lambda (CreateEventSourceMapping: batch size > 10 needs a window >= 1 s). The queue's own
settings are not in this stack and are not judged.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("sqs-esm-config-valid", "legacy-esm")],
}

fn = aws.lambda_.Function(
    "legacy-consumer",
    role="arn:aws:iam::123456789012:role/legacy-consumer",
    runtime="python3.12",
    handler="l.handler",
    code=pulumi.AssetArchive({}),
    timeout=30,
)
aws.lambda_.EventSourceMapping(
    "legacy-esm",
    event_source_arn="arn:aws:sqs:eu-west-1:123456789012:legacy-orders",
    function_name=fn.arn,
    batch_size=50,
    function_response_types=["ReportBatchItemFailures"],
)
