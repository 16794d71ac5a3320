"""A Cognito user pool guarding an HTTP API with a JWT authorizer; the issuer URL is built
from the pool's computed `endpoint`."""

import json

import pulumi
import pulumi_aws as aws

role = aws.iam.Role(
    "profile",
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

pool = aws.cognito.UserPool(
    "users", auto_verified_attributes=["email"], password_policy={"minimum_length": 12}
)
client = aws.cognito.UserPoolClient(
    "web",
    user_pool_id=pool.id,
    explicit_auth_flows=["ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"],
)
fn = aws.lambda_.Function(
    "profile",
    runtime="python3.12",
    handler="p.handler",
    role=role.arn,
    code=pulumi.AssetArchive({"p.py": pulumi.StringAsset("def handler(e, c):\n    return {}\n")}),
)
api = aws.apigatewayv2.Api("profile", protocol_type="HTTP")
authorizer = aws.apigatewayv2.Authorizer(
    "cognito",
    api_id=api.id,
    authorizer_type="JWT",
    identity_sources=["$request.header.Authorization"],
    jwt_configuration={
        "audiences": [client.id],
        "issuer": pool.endpoint.apply(lambda e: f"https://{e}"),
    },
)
integration = aws.apigatewayv2.Integration(
    "profile",
    api_id=api.id,
    integration_type="AWS_PROXY",
    integration_uri=fn.invoke_arn,
    payload_format_version="2.0",
)
aws.apigatewayv2.Route(
    "me",
    api_id=api.id,
    route_key="GET /me",
    authorization_type="JWT",
    authorizer_id=authorizer.id,
    target=pulumi.Output.concat("integrations/", integration.id),
)
aws.lambda_.Permission(
    "profile-api",
    action="lambda:InvokeFunction",
    function=fn,
    principal="apigateway.amazonaws.com",
    source_arn=api.execution_arn.apply(lambda a: f"{a}/*/*/me"),
)
pulumi.export("issuer", pool.endpoint)
