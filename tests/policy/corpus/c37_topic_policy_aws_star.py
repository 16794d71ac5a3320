"""A topic policy granting {"AWS": "*"} sns:Publish and sns:Subscribe without condition.

AWS facts: {"AWS": "*"} is equivalent to Principal "*" (IAM User Guide, "Principal": all
principals); any account can publish fake events and subscribe to read them. The topic also
has no KMS key (advisory).
"""

import json

import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("resource-policy-no-public-principal", "catalog-policy"),
        ("sns-topic-encrypted", "catalog"),
    ],
}

topic = aws.sns.Topic("catalog")
aws.sns.TopicPolicy(
    "catalog-policy",
    arn=topic.arn,
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": "*"},
                    "Action": ["sns:Publish", "sns:Subscribe"],
                    "Resource": "*",
                }
            ],
        }
    ),
)
