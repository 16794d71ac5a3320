"""A VPC with public and private subnets over the available zones, an internet gateway, a
NAT gateway on an Elastic IP, and route tables; subnet ids exported as lists."""

import pulumi
import pulumi_aws as aws

zones = aws.get_availability_zones(state="available").names[:2]
vpc = aws.ec2.Vpc(
    "core", cidr_block="10.30.0.0/16", enable_dns_support=True, enable_dns_hostnames=True
)
igw = aws.ec2.InternetGateway("core", vpc_id=vpc.id)
public_rt = aws.ec2.RouteTable(
    "public", vpc_id=vpc.id, routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}]
)
public, private = [], []
for i, zone in enumerate(zones):
    pub = aws.ec2.Subnet(
        f"public-{i}",
        vpc_id=vpc.id,
        availability_zone=zone,
        cidr_block=f"10.30.{i}.0/24",
        map_public_ip_on_launch=True,
    )
    aws.ec2.RouteTableAssociation(f"public-{i}", subnet_id=pub.id, route_table_id=public_rt.id)
    public.append(pub)
    private.append(
        aws.ec2.Subnet(
            f"private-{i}", vpc_id=vpc.id, availability_zone=zone, cidr_block=f"10.30.{10 + i}.0/24"
        )
    )
eip = aws.ec2.Eip("nat", domain="vpc")
nat = aws.ec2.NatGateway("core", allocation_id=eip.id, subnet_id=public[0].id)
private_rt = aws.ec2.RouteTable(
    "private", vpc_id=vpc.id, routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}]
)
for i, sub in enumerate(private):
    aws.ec2.RouteTableAssociation(f"private-{i}", subnet_id=sub.id, route_table_id=private_rt.id)
pulumi.export("vpc_id", vpc.id)
pulumi.export("private_subnet_ids", [s.id for s in private])
pulumi.export("nat_ip", eip.public_ip)
