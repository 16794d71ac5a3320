"""A Lambda function with a layer, a function URL and an async invoke config whose
failures go to an SQS destination."""

import json

import pulumi
import pulumi_aws as aws

role = aws.iam.Role(
    "webhook",
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

layer = aws.lambda_.LayerVersion(
    "deps",
    layer_name="webhook-deps",
    compatible_runtimes=["python3.12"],
    code=pulumi.AssetArchive({"python/deps.py": pulumi.StringAsset("X = 1\n")}),
)
fn = aws.lambda_.Function(
    "webhook",
    runtime="python3.12",
    handler="w.handler",
    role=role.arn,
    layers=[layer.arn],
    code=pulumi.AssetArchive({"w.py": pulumi.StringAsset("def handler(e, c):\n    return {}\n")}),
)
url = aws.lambda_.FunctionUrl("webhook", function_name=fn.name, authorization_type="AWS_IAM")
failed = aws.sqs.Queue(
    "webhook-failed", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
aws.lambda_.FunctionEventInvokeConfig(
    "webhook",
    function_name=fn.name,
    maximum_retry_attempts=1,
    maximum_event_age_in_seconds=3600,
    destination_config={"on_failure": {"destination": failed.arn}},
)
pulumi.export("url", url.function_url)
pulumi.export("layer_version", layer.version.apply(lambda v: int(v)))
