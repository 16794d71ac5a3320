"""A web service on awsx's remote components (VPC, load balancer, ECR repository and image,
Fargate service) next to a plain SQS work queue consumed by a Lambda function.

The awsx components are multi-language components: their plugin builds their children, which
cannot run offline. The report must list each as not checked, `up` mode must not crash on
their outputs (`lb.load_balancer.dns_name`, `vpc.private_subnet_ids[0]`), and the plain
resources are still checked."""

import json

import pulumi
import pulumi_aws as aws
import pulumi_awsx as awsx

vpc = awsx.ec2.Vpc("web", number_of_availability_zones=2)
cluster = aws.ecs.Cluster("web")
lb = awsx.lb.ApplicationLoadBalancer("web", subnet_ids=vpc.public_subnet_ids)
repo = awsx.ecr.Repository("web", force_delete=True)
image = awsx.ecr.Image("web", repository_url=repo.url, context="./app", platform="linux/amd64")
awsx.ecs.FargateService(
    "web",
    cluster=cluster.arn,
    network_configuration={"subnets": vpc.private_subnet_ids, "assign_public_ip": False},
    task_definition_args={
        "container": {
            "name": "web",
            "image": image.image_uri,
            "cpu": 256,
            "memory": 512,
            "essential": True,
            "port_mappings": [{"container_port": 80, "target_group": lb.default_target_group}],
        }
    },
)
role = aws.iam.Role(
    "jobs",
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
jobs = aws.sqs.Queue("jobs", visibility_timeout_seconds=30, sqs_managed_sse_enabled=True)
worker = aws.lambda_.Function(
    "jobs",
    runtime="python3.12",
    handler="j.handler",
    role=role.arn,
    timeout=60,
    code=pulumi.AssetArchive({"j.py": pulumi.StringAsset("def handler(e, c):\n    return {}\n")}),
)
aws.lambda_.EventSourceMapping("jobs", event_source_arn=jobs.arn, function_name=worker.name)
pulumi.export("url", pulumi.Output.concat("http://", lb.load_balancer.dns_name))
pulumi.export("first_private_subnet", vpc.private_subnet_ids.apply(lambda ids: ids[0]))
