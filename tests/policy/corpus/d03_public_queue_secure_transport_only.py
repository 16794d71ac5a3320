"""A queue policy open to Principal "*" whose only condition is aws:SecureTransport.

AWS facts: aws:SecureTransport is true when the request came over TLS (IAM User Guide, "AWS
global condition context keys"); it says HOW a request is made, not WHO makes it. With
Principal "*" and no condition naming the caller (aws:SourceArn, aws:SourceAccount,
aws:PrincipalOrgID, ...), every AWS account and anonymous callers may send messages into the
pipeline over TLS. The queue also denies plain HTTP (so the TLS-only rule passes); nothing
consumes it, so no pipeline rule applies.
"""

import json

import pulumi_aws as aws

EXPECTED = {
    "both": [
        # resource-policy-no-public-principal: the Allow statement's only condition is
        # aws:SecureTransport, which limits transport, not the caller.
        ("resource-policy-no-public-principal", "intake"),
    ],
}

ARN = "arn:aws:sqs:eu-west-1:123456789012:intake"
aws.sqs.Queue(
    "intake",
    name="intake",
    sqs_managed_sse_enabled=True,
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "AnyoneOverTls",
                    "Effect": "Allow",
                    "Principal": "*",
                    "Action": "sqs:SendMessage",
                    "Resource": ARN,
                    "Condition": {"Bool": {"aws:SecureTransport": "true"}},
                },
                {
                    "Sid": "TlsOnly",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sqs:*",
                    "Resource": ARN,
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
            ],
        }
    ),
)
