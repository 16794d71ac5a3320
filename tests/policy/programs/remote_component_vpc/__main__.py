"""A VPC from a multi-language (remote) component, in the style of awsx's `ec2.Vpc`, with a
security group and a Lambda function placed in it.

The component's SDK lives in `pulumi_netkit/` beside this program, shaped like a generated
SDK (a `ComponentResource` registered with `remote=True`). Offline the component's plugin
cannot run, so its children are not expanded: the report must list it as not checked, and
`up` mode must not crash on its outputs."""

import json

import pulumi
import pulumi_aws as aws
import pulumi_netkit as netkit

vpc = netkit.ec2.Vpc("app", cidr_block="10.20.0.0/16", number_of_availability_zones=2)
sg = aws.ec2.SecurityGroup("app", vpc_id=vpc.vpc_id)
role = aws.iam.Role(
    "app",
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
aws.lambda_.Function(
    "app",
    runtime="python3.12",
    handler="a.handler",
    role=role.arn,
    code=pulumi.AssetArchive({"a.py": pulumi.StringAsset("def handler(e, c):\n    return {}\n")}),
    vpc_config={
        "subnet_ids": vpc.private_subnet_ids.apply(lambda ids: ids[:2]),
        "security_group_ids": [sg.id],
    },
)
pulumi.export("first_private_subnet", vpc.private_subnet_ids.apply(lambda ids: ids[0]))
