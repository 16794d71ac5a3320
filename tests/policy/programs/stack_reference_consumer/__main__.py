"""A queue consumer deployed into a network owned by another stack.

Exercises: StackReference outputs (unknown offline) used as VPC config and as an existing
queue's ARN, `require_output` and `get_output`, and a callback that indexes a structured
output (`settings["worker"]["timeout"]`), which cannot run on an absent value."""

import json

import pulumi
import pulumi_aws as aws

network = pulumi.StackReference("acme/network/prod")
subnet_ids = network.require_output("private_subnet_ids")
shared_queue_arn = network.get_output("jobs_queue_arn")
role = aws.iam.Role(
    "worker",
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
sg = aws.ec2.SecurityGroup("worker", vpc_id=network.require_output("vpc_id"))
fn = aws.lambda_.Function(
    "worker",
    runtime="python3.12",
    handler="w.handler",
    role=role.arn,
    timeout=network.get_output("settings").apply(lambda s: int(s["worker"]["timeout"])),
    code=pulumi.AssetArchive({"w.py": pulumi.StringAsset("def handler(e, c):\n    return {}\n")}),
    vpc_config={"subnet_ids": subnet_ids, "security_group_ids": [sg.id]},
)
aws.lambda_.EventSourceMapping(
    "worker",
    event_source_arn=shared_queue_arn,
    function_name=fn.arn,
    batch_size=10,
    function_response_types=["ReportBatchItemFailures"],
)
pulumi.export("function", fn.name)
