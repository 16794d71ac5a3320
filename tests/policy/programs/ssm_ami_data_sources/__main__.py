"""EC2 instances sized and imaged from data sources.

Exercises: plain (non-Output) invoke results: `int(get_parameter(...).value)` decides how
many instances to create; the AMI comes from the public SSM parameter and from `get_ami`;
`get_availability_zones().names` spreads them."""

import pulumi
import pulumi_aws as aws

count = int(aws.ssm.get_parameter(name="/shop/web/instance-count").value)
ami_from_ssm = aws.ssm.get_parameter(
    name="/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
).value
ami = aws.ec2.get_ami(
    most_recent=True,
    owners=["amazon"],
    filters=[{"name": "name", "values": ["al2023-ami-*-x86_64"]}],
)
zones = aws.get_availability_zones(state="available").names
for i in range(count):
    aws.ec2.Instance(
        f"web-{i}",
        ami=ami_from_ssm if i % 2 == 0 else ami.id,
        instance_type="t3.micro",
        availability_zone=zones[i % len(zones)],
        metadata_options={"http_tokens": "required"},
    )
pulumi.export("ami", ami.id)
