"""A queue policy that lets anyone send messages (Principal "*", no condition).

AWS facts: Principal "*" in a resource-based policy grants access to every AWS account and to
anonymous requests unless a condition limits it (IAM User Guide, "AWS JSON policy elements:
Principal", "All principals"; SQS Developer Guide, queue policy examples). Anyone can inject
messages into the pipeline.
"""

import json

import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("resource-policy-no-public-principal", "webhooks"),
        ("sqs-queue-tls-only", "webhooks"),
    ],
}

aws.sqs.Queue(
    "webhooks",
    name="webhooks",
    sqs_managed_sse_enabled=True,
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "PublicSend",
                    "Effect": "Allow",
                    "Principal": "*",
                    "Action": "sqs:SendMessage",
                    "Resource": "arn:aws:sqs:eu-west-1:123456789012:webhooks",
                }
            ],
        }
    ),
)
