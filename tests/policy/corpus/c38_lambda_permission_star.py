"""A Lambda permission for principal "*" with no source ARN or account.

AWS facts: AddPermission with Principal "*" and no SourceArn/SourceAccount/PrincipalOrgID lets
any AWS account invoke the function (Lambda Developer Guide, "Working with resource-based IAM
policies in Lambda"). The function is invoked by nobody asynchronously in this stack.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("resource-policy-no-public-principal", "report-invoke-any")],
}

fn = aws.lambda_.Function(
    "report",
    role="arn:aws:iam::123456789012:role/report",
    runtime="python3.13",
    handler="r.handler",
    code=pulumi.AssetArchive({}),
)
aws.lambda_.Permission(
    "report-invoke-any", action="lambda:InvokeFunction", function=fn.name, principal="*"
)
