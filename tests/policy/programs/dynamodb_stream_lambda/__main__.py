"""A DynamoDB table's stream processed by a Lambda function (a stream mapping with a
starting position, bisecting on error, and an on-failure SQS destination)."""

import json

import pulumi
import pulumi_aws as aws

role = aws.iam.Role(
    "stream",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "sts:AssumeRole",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                }
            ],
        }
    ),
)

table = aws.dynamodb.Table(
    "carts",
    hash_key="cart_id",
    attributes=[{"name": "cart_id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    stream_enabled=True,
    stream_view_type="NEW_AND_OLD_IMAGES",
    point_in_time_recovery={"enabled": True},
)
failures = aws.sqs.Queue(
    "cart-stream-failures", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
fn = aws.lambda_.Function(
    "cart-projector",
    runtime="python3.12",
    handler="p.handler",
    role=role.arn,
    code=pulumi.AssetArchive({"p.py": pulumi.StringAsset("def handler(e, c):\n    pass\n")}),
)
aws.lambda_.EventSourceMapping(
    "cart-projector",
    event_source_arn=table.stream_arn,
    function_name=fn.name,
    starting_position="LATEST",
    bisect_batch_on_function_error=True,
    maximum_retry_attempts=3,
    destination_config={"on_failure": {"destination_arn": failures.arn}},
)
pulumi.export("stream", table.stream_arn)
