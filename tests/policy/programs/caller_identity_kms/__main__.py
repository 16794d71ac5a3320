"""A customer-managed KMS key whose policy names the account root from
`get_caller_identity`, with the region and partition from `get_region` / `get_partition`;
an SNS topic encrypted with it, and the AWS-managed SNS key looked up with `kms.get_alias`."""

import json

import pulumi
import pulumi_aws as aws

me = aws.get_caller_identity()
region = aws.get_region()
partition = aws.get_partition()
key = aws.kms.Key(
    "events",
    enable_key_rotation=True,
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "root",
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:{partition.partition}:iam::{me.account_id}:root"},
                    "Action": "kms:*",
                    "Resource": "*",
                },
                {
                    "Sid": "cloudwatch",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudwatch.amazonaws.com"},
                    "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                    "Resource": "*",
                    "Condition": {"StringEquals": {"aws:SourceAccount": me.account_id}},
                },
            ],
        }
    ),
)
aws.kms.Alias("events", name="alias/events", target_key_id=key.key_id)
topic = aws.sns.Topic("events", kms_master_key_id=key.arn)
managed = aws.kms.get_alias(name="alias/aws/sns")
pulumi.export("managed_sns_key", managed.target_key_arn)
pulumi.export("where", f"{me.account_id}/{region.region}")
