"""A cross-stack SQS consumer with batch size 100 and no batching window.

AWS facts: `scaling_config` (maximum concurrency) exists for SQS event sources only, and a
batch size above 10 on an SQS source requires MaximumBatchingWindowInSeconds >= 1 (Lambda
Developer Guide, "Using Lambda with Amazon SQS", batching behavior); Lambda rejects the mapping.
The source ARN comes from a StackReference: the mapping's own properties say SQS.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("sqs-esm-config-valid", "bulk-esm")],
}

upstream = pulumi.StackReference("acme/ingest/prod")
fn = aws.lambda_.Function(
    "bulk",
    role="arn:aws:iam::123456789012:role/bulk",
    runtime="python3.12",
    handler="bulk.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
aws.lambda_.EventSourceMapping(
    "bulk-esm",
    event_source_arn=upstream.require_output("queue_arn"),
    function_name=fn.name,
    batch_size=100,
    scaling_config={"maximum_concurrency": 10},
    function_response_types=["ReportBatchItemFailures"],
)
