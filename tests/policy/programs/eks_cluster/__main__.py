"""EKS cluster and managed node group in a new VPC; a kubeconfig rendered from the cluster's
computed `endpoint` and `certificate_authority.data` (an object output)."""

import json

import pulumi
import pulumi_aws as aws

zones = aws.get_availability_zones(state="available")
vpc = aws.ec2.Vpc("eks", cidr_block="10.0.0.0/16", enable_dns_hostnames=True)
subnets = [
    aws.ec2.Subnet(
        f"eks-{i}",
        vpc_id=vpc.id,
        cidr_block=f"10.0.{i}.0/24",
        availability_zone=zones.names[i % len(zones.names)],
    )
    for i in range(2)
]


def service_role(name, service, policies):
    role = aws.iam.Role(
        name,
        assume_role_policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "sts:AssumeRole",
                        "Principal": {"Service": service},
                    }
                ],
            }
        ),
    )
    for i, arn in enumerate(policies):
        aws.iam.RolePolicyAttachment(f"{name}-{i}", role=role, policy_arn=arn)
    return role


cluster_role = service_role(
    "eks-cluster", "eks.amazonaws.com", ["arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"]
)
node_role = service_role(
    "eks-nodes",
    "ec2.amazonaws.com",
    [
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    ],
)
cluster = aws.eks.Cluster(
    "main",
    role_arn=cluster_role.arn,
    vpc_config={"subnet_ids": [s.id for s in subnets]},
)
aws.eks.NodeGroup(
    "main",
    cluster_name=cluster.name,
    node_role_arn=node_role.arn,
    subnet_ids=[s.id for s in subnets],
    scaling_config={"desired_size": 2, "min_size": 1, "max_size": 3},
)
kubeconfig = pulumi.Output.all(
    cluster.endpoint, cluster.certificate_authority.data, cluster.name
).apply(
    lambda a: json.dumps(
        {
            "apiVersion": "v1",
            "clusters": [
                {"name": a[2], "cluster": {"server": a[0], "certificate-authority-data": a[1]}}
            ],
            "contexts": [{"name": a[2], "context": {"cluster": a[2], "user": a[2]}}],
            "current-context": a[2],
            "users": [
                {
                    "name": a[2],
                    "user": {
                        "exec": {
                            "command": "aws",
                            "args": ["eks", "get-token", "--cluster-name", a[2]],
                        }
                    },
                }
            ],
        }
    )
)
pulumi.export("kubeconfig", pulumi.Output.secret(kubeconfig))
pulumi.export("oidc_issuer", cluster.identities[0].oidcs[0].issuer)
