"""SQS event source mappings, each with one setting Lambda refuses for SQS sources.

AWS facts (Lambda API reference, CreateEventSourceMapping; each parameter's scope as botocore's
model of the API documents it): StartingPosition is a stream position; DestinationConfig,
MaximumRetryAttempts, MaximumRecordAgeInSeconds and BisectBatchOnFunctionError are valid for
Kinesis, DynamoDB Streams, Amazon MSK and self-managed Kafka; ParallelizationFactor and
TumblingWindowInSeconds for Kinesis and DynamoDB Streams only; ScalingConfig's
MaximumConcurrency lies in 2..1000. Each of these mappings fails `up`, and a preview knows the
values (they are inputs). `good-esm` uses only SQS settings: no finding.
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sns-topic-encrypted", "ledger-alarms"),
        ("sqs-esm-config-valid", "starting-position-esm"),
        ("sqs-esm-config-valid", "on-success-esm"),
        ("sqs-esm-config-valid", "parallel-esm"),
        ("sqs-esm-config-valid", "bisect-esm"),
        ("sqs-esm-config-valid", "retries-esm"),
        ("sqs-esm-config-valid", "record-age-esm"),
        ("sqs-esm-config-valid", "tumbling-esm"),
        ("sqs-esm-config-valid", "concurrency-1-esm"),
        ("sqs-queue-tls-only", "ledger"),
        ("sqs-queue-tls-only", "ledger-dlq"),
    ],
}

dlq = aws.sqs.Queue("ledger-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True)
queue = aws.sqs.Queue(
    "ledger",
    visibility_timeout_seconds=360,
    sqs_managed_sse_enabled=True,
    redrive_policy=dlq.arn.apply(
        lambda arn: json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})
    ),
)
notify = aws.sns.Topic("ledger-done", kms_master_key_id="alias/aws/sns")
fn = aws.lambda_.Function(
    "ledger-writer",
    role="arn:aws:iam::123456789012:role/ledger",
    runtime="python3.12",
    handler="ledger.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
alarm_topic = aws.sns.Topic("ledger-alarms")
aws.cloudwatch.MetricAlarm(
    "ledger-dlq-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alarm_topic.arn],
)
BAD = {
    "starting-position-esm": {"starting_position": "LATEST"},
    "on-success-esm": {"destination_config": {"on_success": {"destination_arn": notify.arn}}},
    "parallel-esm": {"parallelization_factor": 2},
    "bisect-esm": {"bisect_batch_on_function_error": True},
    "retries-esm": {"maximum_retry_attempts": 3},
    "record-age-esm": {"maximum_record_age_in_seconds": 3600},
    "tumbling-esm": {"tumbling_window_in_seconds": 60},
    "concurrency-1-esm": {"scaling_config": {"maximum_concurrency": 1}},
    "good-esm": {"scaling_config": {"maximum_concurrency": 2}, "batch_size": 10},
}
for name, settings in BAD.items():
    aws.lambda_.EventSourceMapping(
        name,
        event_source_arn=queue.arn,
        function_name=fn.arn,
        function_response_types=["ReportBatchItemFailures"],
        **settings,
    )
