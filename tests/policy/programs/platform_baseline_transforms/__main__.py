"""A platform baseline the way teams write one: a stack transform from a local package, a
component sized from SSM (`int()` inside the package), data sources chained through an unknown
(`get_subnets` over `get_vpc().id`), an ECR login decoded from its token, a component method of
a remote component, and an invoke transform that pins lookups to the platform's naming.

Exercises: transforms (stack, invoke), typed unknown data-source results in plain and Output
form, the program's own package tracking unknowns, base64 placeholders, resource methods."""

import base64

import pulumi
import pulumi_aws as aws
from baseline_kit import WorkerFleet, baseline

pulumi.runtime.register_resource_transform(baseline)


def platform_names(args: pulumi.InvokeTransformArgs) -> pulumi.InvokeTransformResult | None:
    if args.token == "aws:sqs/getQueue:getQueue" and not args.args["name"].startswith("plat-"):
        return pulumi.InvokeTransformResult(
            {**args.args, "name": f"plat-{args.args['name']}"}, args.opts
        )
    return None


pulumi.runtime.register_invoke_transform(platform_names)

vpc = aws.ec2.get_vpc(default=True)
subnets = aws.ec2.get_subnets(filters=[{"name": "vpc-id", "values": [vpc.id]}])
fleet = WorkerFleet("batch", subnet_ids=subnets.ids)

jobs = aws.sqs.Queue("jobs", visibility_timeout_seconds=120)
audit = aws.sqs.get_queue(name="audit")
token = aws.ecr.get_authorization_token()
registry_user = base64.b64decode(token.authorization_token).decode().split(":", 1)[0]


class Mesh(pulumi.ComponentResource):
    def __init__(self, name: str, opts=None) -> None:
        super().__init__("mesh:index:Mesh", name, {"vpcId": vpc.id}, opts, remote=True)

    def endpoint(self) -> pulumi.Output[str]:
        return pulumi.runtime.call("mesh:index:Mesh/endpoint", {}, self)


pulumi.export("registry_user", registry_user)
pulumi.export("audit_queue", audit.arn)
pulumi.export("fleet_size", len(fleet.instances))
pulumi.export("mesh_endpoint", Mesh("mesh").endpoint())
pulumi.export("jobs_url", jobs.url)
