from collections.abc import Sequence

import pulumi


class Vpc(pulumi.ComponentResource):
    """A VPC with public and private subnets, built by the `netkit` plugin."""

    def __init__(
        self,
        resource_name: str,
        cidr_block: str | None = None,
        number_of_availability_zones: int | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "cidr_block": cidr_block,
            "number_of_availability_zones": number_of_availability_zones,
            "vpc_id": None,
            "private_subnet_ids": None,
            "public_subnet_ids": None,
        }
        super().__init__("netkit:ec2:Vpc", resource_name, props, opts, remote=True)

    @property
    @pulumi.getter(name="vpcId")
    def vpc_id(self) -> pulumi.Output[str]:
        return pulumi.get(self, "vpc_id")

    @property
    @pulumi.getter(name="privateSubnetIds")
    def private_subnet_ids(self) -> pulumi.Output[Sequence[str]]:
        return pulumi.get(self, "private_subnet_ids")

    @property
    @pulumi.getter(name="publicSubnetIds")
    def public_subnet_ids(self) -> pulumi.Output[Sequence[str]]:
        return pulumi.get(self, "public_subnet_ids")
