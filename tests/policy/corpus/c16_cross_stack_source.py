"""A consumer whose queue lives in another stack (StackReference output, unknown offline).

AWS facts: an event source mapping for SQS takes no StartingPosition (Kinesis, DynamoDB Streams
and Kafka require one) and no broker settings (Lambda Developer Guide, CreateEventSourceMapping),
so this mapping reads SQS even though its source ARN is unknown. Without
FunctionResponseTypes=ReportBatchItemFailures one failing message makes Lambda retry the whole
batch ("Handling errors for an SQS event source").
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("lambda-sqs-esm-reports-batch-item-failures", "ingest-esm")],
}

shared = pulumi.StackReference("acme/messaging/prod")
fn = aws.lambda_.Function(
    "ingest",
    role="arn:aws:iam::123456789012:role/ingest",
    runtime="python3.12",
    handler="ingest.handler",
    code=pulumi.AssetArchive({}),
    timeout=10,
)
aws.lambda_.EventSourceMapping(
    "ingest-esm",
    event_source_arn=shared.get_output("ingest_queue_arn"),
    function_name=fn.name,
    batch_size=10,
)
