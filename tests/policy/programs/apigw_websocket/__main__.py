"""WebSocket API: connect/disconnect routes on a Lambda, the callback URL derived from the
API endpoint (`wss://` replaced by `https://`)."""

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
    "ws-handler",
    runtime="python3.12",
    handler="ws.handler",
    role=lambda_role.arn,
    code=pulumi.AssetArchive({"ws.py": pulumi.StringAsset("def handler(e, c):\n    return {}\n")}),
)
api = aws.apigatewayv2.Api(
    "ws", protocol_type="WEBSOCKET", route_selection_expression="$request.body.action"
)
integration = aws.apigatewayv2.Integration(
    "ws-lambda", api_id=api.id, integration_type="AWS_PROXY", integration_uri=fn.invoke_arn
)
for route in ("$connect", "$disconnect", "$default"):
    aws.apigatewayv2.Route(
        f"route{route.replace('$', '-')}",
        api_id=api.id,
        route_key=route,
        target=pulumi.Output.concat("integrations/", integration.id),
    )
stage = aws.apigatewayv2.Stage("live", api_id=api.id, name="live", auto_deploy=True)
callback = pulumi.Output.all(api.api_endpoint, stage.name).apply(
    lambda args: args[0].replace("wss://", "https://") + "/" + args[1]
)
pulumi.export("callback_url", callback)
