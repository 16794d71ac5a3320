"""Kinesis Data Firehose delivering to S3 with a role allowed to write the bucket; the role
policy is rendered with `get_policy_document_output` over computed ARNs."""

import json

import pulumi
import pulumi_aws as aws

bucket = aws.s3.Bucket("clickstream")
role = aws.iam.Role(
    "firehose",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "sts:AssumeRole",
                    "Principal": {"Service": "firehose.amazonaws.com"},
                }
            ],
        }
    ),
)
doc = aws.iam.get_policy_document_output(
    statements=[
        {
            "actions": ["s3:PutObject", "s3:GetBucketLocation", "s3:ListBucket"],
            "resources": [bucket.arn, bucket.arn.apply(lambda a: f"{a}/*")],
        }
    ]
)
aws.iam.RolePolicy("firehose-s3", role=role.id, policy=doc.json)
stream = aws.kinesis.FirehoseDeliveryStream(
    "clicks",
    destination="extended_s3",
    extended_s3_configuration={
        "role_arn": role.arn,
        "bucket_arn": bucket.arn,
        "buffering_interval": 60,
        "compression_format": "GZIP",
        "prefix": "clicks/",
    },
)
pulumi.export("stream", stream.arn)
