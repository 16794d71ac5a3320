"""A queue consumed by Lambda with no redrive policy.

AWS facts: without a redrive policy a message that always fails is received again and again
until its retention period ends, then deleted (SQS Developer Guide, "Using dead-letter
queues"); it is lost and burns invocations meanwhile. The queue is not a DLQ of anything.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sqs-lambda-source-has-dlq", "emails"),
        ("sqs-queue-tls-only", "emails"),
    ],
}

queue = aws.sqs.Queue("emails", visibility_timeout_seconds=60, sqs_managed_sse_enabled=True)
fn = aws.lambda_.Function(
    "emails-fn",
    role="arn:aws:iam::123456789012:role/emails",
    runtime="python3.12",
    handler="e.handler",
    code=pulumi.AssetArchive({}),
    timeout=10,
)
aws.lambda_.EventSourceMapping(
    "emails-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    function_response_types=["ReportBatchItemFailures"],
)
