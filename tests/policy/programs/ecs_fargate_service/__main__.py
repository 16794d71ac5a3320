"""ECS Fargate service behind an application load balancer, in the default VPC.

Exercises: data sources answered by their result types (`get_vpc(default=True).id`,
`get_subnets(...).ids`), a container definition JSON built from the ECR repository URL,
the load balancer's computed `dns_name` exported."""

import json

import pulumi
import pulumi_aws as aws

vpc = aws.ec2.get_vpc(default=True)
subnets = aws.ec2.get_subnets(filters=[{"name": "vpc-id", "values": [vpc.id]}])
repo = aws.ecr.Repository("web", image_tag_mutability="IMMUTABLE")
cluster = aws.ecs.Cluster("web")
exec_role = aws.iam.Role(
    "task-exec",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "sts:AssumeRole",
                    "Principal": {"Service": "ecs-tasks.amazonaws.com"},
                }
            ],
        }
    ),
)
aws.iam.RolePolicyAttachment(
    "task-exec-policy",
    role=exec_role.name,
    policy_arn="arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy",
)
sg = aws.ec2.SecurityGroup(
    "web",
    vpc_id=vpc.id,
    ingress=[{"protocol": "tcp", "from_port": 80, "to_port": 80, "cidr_blocks": ["0.0.0.0/0"]}],
    egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"]}],
)
lb = aws.lb.LoadBalancer(
    "web", load_balancer_type="application", security_groups=[sg.id], subnets=subnets.ids
)
tg = aws.lb.TargetGroup("web", port=80, protocol="HTTP", target_type="ip", vpc_id=vpc.id)
listener = aws.lb.Listener(
    "web",
    load_balancer_arn=lb.arn,
    port=80,
    default_actions=[{"type": "forward", "target_group_arn": tg.arn}],
)
task = aws.ecs.TaskDefinition(
    "web",
    family="web",
    cpu="256",
    memory="512",
    network_mode="awsvpc",
    requires_compatibilities=["FARGATE"],
    execution_role_arn=exec_role.arn,
    container_definitions=repo.repository_url.apply(
        lambda url: json.dumps(
            [
                {
                    "name": "web",
                    "image": f"{url}:1.0.0",
                    "essential": True,
                    "portMappings": [{"containerPort": 80, "protocol": "tcp"}],
                }
            ]
        )
    ),
)
aws.ecs.Service(
    "web",
    cluster=cluster.arn,
    task_definition=task.arn,
    desired_count=2,
    launch_type="FARGATE",
    network_configuration={
        "subnets": subnets.ids,
        "security_groups": [sg.id],
        "assign_public_ip": True,
    },
    load_balancers=[{"target_group_arn": tg.arn, "container_name": "web", "container_port": 80}],
    opts=pulumi.ResourceOptions(depends_on=[listener]),
)
pulumi.export("url", lb.dns_name.apply(lambda d: f"http://{d}"))
