"""The platform team's shared pieces, vendored beside the program (a local package)."""

import pulumi
import pulumi_aws as aws


def baseline(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Every queue encrypted, every taggable AWS resource tagged with its cost centre."""
    props = dict(args.props)
    if args.type_ == "aws:sqs/queue:Queue":
        props.setdefault("sqsManagedSseEnabled", True)
    if args.type_ in TAGGABLE:
        props["tags"] = {**(props.get("tags") or {}), "cost-centre": "platform"}
    return pulumi.ResourceTransformResult(props, args.opts)


TAGGABLE = {
    "aws:sqs/queue:Queue",
    "aws:lambda/function:Function",
    "aws:ec2/instance:Instance",
    "aws:ec2/securityGroup:SecurityGroup",
}


class WorkerFleet(pulumi.ComponentResource):
    """Instances sized from Parameter Store, one per configured subnet."""

    def __init__(self, name: str, subnet_ids: list[str], opts=None) -> None:
        super().__init__("platform:index:WorkerFleet", name, None, opts)
        size = int(aws.ssm.get_parameter(name=f"/platform/{name}/size").value)
        ami = aws.ec2.get_ami(
            most_recent=True,
            owners=["amazon"],
            filters=[{"name": "name", "values": ["al2023-ami-*-x86_64"]}],
        )
        group = aws.ec2.SecurityGroup(
            f"{name}-sg", description=f"{name} workers", opts=pulumi.ResourceOptions(parent=self)
        )
        self.instances = [
            aws.ec2.Instance(
                f"{name}-{i}",
                ami=ami.id,
                instance_type="t3.small" if size < 4 else "m7i.large",
                subnet_id=subnet_ids[i % len(subnet_ids)],
                vpc_security_group_ids=[group.id],
                metadata_options={"http_tokens": "required"},
                opts=pulumi.ResourceOptions(parent=self),
            )
            for i in range(max(size, 1))
        ]
        self.register_outputs({"count": len(self.instances)})
