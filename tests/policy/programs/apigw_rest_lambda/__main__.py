"""REST API (API Gateway v1) proxying to a Lambda function.

Exercises: resource objects passed as inputs (`role=lambda_role`, `rest_api=api`,
`function=fn`), and computed outputs used in `up` mode (`execution_arn + "/*/*"`,
`root_resource_id`, the stage's `invoke_url`)."""

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
    "hello",
    runtime="python3.12",
    handler="app.handler",
    role=lambda_role.arn,
    timeout=10,
    code=pulumi.AssetArchive({"app.py": pulumi.StringAsset("def handler(e, c):\n    return {}\n")}),
)
api = aws.apigateway.RestApi("api", description="hello api")
resource = aws.apigateway.Resource(
    "hello", rest_api=api, parent_id=api.root_resource_id, path_part="hello"
)
method = aws.apigateway.Method(
    "get", rest_api=api, resource_id=resource, http_method="GET", authorization="NONE"
)
integration = aws.apigateway.Integration(
    "get",
    rest_api=api,
    resource_id=resource,
    http_method=method.http_method,
    integration_http_method="POST",
    type="AWS_PROXY",
    uri=fn.invoke_arn,
)
deployment = aws.apigateway.Deployment(
    "deployment", rest_api=api, opts=pulumi.ResourceOptions(depends_on=[integration])
)
stage = aws.apigateway.Stage("prod", rest_api=api, deployment=deployment, stage_name="prod")
aws.lambda_.Permission(
    "api-invoke",
    action="lambda:InvokeFunction",
    function=fn,
    principal="apigateway.amazonaws.com",
    source_arn=api.execution_arn.apply(lambda arn: arn + "/*/*"),
)
pulumi.export("url", stage.invoke_url.apply(lambda url: url + "/hello"))
