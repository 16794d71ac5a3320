"""HTTP API (API Gateway v2) with a Lambda integration and a default stage.

Exercises: `api_endpoint` concatenation, `api_id` from a resource object, `execution_arn`
formatting with `Output.concat`."""

import json

import pulumi
import pulumi_aws as aws

lambda_role = aws.iam.Role(
    "fn-role",
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
aws.iam.RolePolicyAttachment(
    "fn-logs",
    role=lambda_role,  # a resource where a role name is expected
    policy_arn="arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
)

fn = aws.lambda_.Function(
    "http-handler",
    runtime="python3.12",
    handler="app.handler",
    role=lambda_role.arn,
    code=pulumi.AssetArchive({"app.py": pulumi.StringAsset("def handler(e, c):\n    return {}\n")}),
)
api = aws.apigatewayv2.Api("http", protocol_type="HTTP")
integration = aws.apigatewayv2.Integration(
    "lambda",
    api_id=api.id,
    integration_type="AWS_PROXY",
    integration_uri=fn.invoke_arn,
    payload_format_version="2.0",
)
aws.apigatewayv2.Route(
    "get-items",
    api_id=api.id,
    route_key="GET /items",
    target=integration.id.apply(lambda i: f"integrations/{i}"),
)
aws.apigatewayv2.Stage("default", api_id=api.id, name="$default", auto_deploy=True)
aws.lambda_.Permission(
    "http-invoke",
    action="lambda:InvokeFunction",
    function=fn.name,
    principal="apigateway.amazonaws.com",
    source_arn=pulumi.Output.concat(api.execution_arn, "/*/*"),
)
pulumi.export("endpoint", api.api_endpoint.apply(lambda e: e + "/items"))
