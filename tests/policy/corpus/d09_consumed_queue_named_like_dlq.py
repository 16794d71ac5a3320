"""A source queue whose name contains "dlq": Lambda consumes it, so it needs a DLQ.

AWS facts: a queue is a dead-letter queue because a redrive policy (or another service's
dead-letter setting) sends failed messages to it, not because of its name. `dlq-alerts-inbox`
receives the DLQ alerts of other systems and a Lambda function consumes it through an event
source mapping: without a redrive policy a message that keeps failing is retried until its
retention expires and is then lost (SQS Developer Guide, "Using dead-letter queues"). No
redrive targets it and no redrive-allow policy declares it a DLQ. The mapping and timeouts are
correct (visibility 360 s >= 6 x 60 s).
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        # sqs-lambda-source-has-dlq: consumed by `alerts-router-esm`, no redrive policy; the
        # name "dlq-..." is no evidence that it is itself a DLQ.
        ("sqs-lambda-source-has-dlq", "dlq-alerts-inbox"),
        ("sqs-queue-tls-only", "dlq-alerts-inbox"),
    ],
}

inbox = aws.sqs.Queue(
    "dlq-alerts-inbox",
    name="dlq-alerts-inbox",
    visibility_timeout_seconds=360,
    sqs_managed_sse_enabled=True,
)
router = aws.lambda_.Function(
    "alerts-router",
    role="arn:aws:iam::123456789012:role/alerts-router",
    runtime="python3.12",
    handler="router.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
aws.lambda_.EventSourceMapping(
    "alerts-router-esm",
    event_source_arn=inbox.arn,
    function_name=router.arn,
    batch_size=10,
    function_response_types=["ReportBatchItemFailures"],
)
