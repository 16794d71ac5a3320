"""Principal "*" limited by aws:SourceArn and aws:SourceAccount: an accepted pattern.

AWS facts: a condition on aws:SourceArn / aws:SourceAccount restricts a "*" principal to
requests made on behalf of that resource (IAM User Guide, global condition keys; SNS Developer
Guide queue-policy example uses Principal "*" with aws:SourceArn). The topic may send; nobody
else. The queue also denies non-TLS access.
"""

import json

import pulumi_aws as aws

EXPECTED = {
    "both": [],
}

aws.sqs.Queue(
    "inbound",
    name="inbound",
    sqs_managed_sse_enabled=True,
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": "*",
                    "Action": "sqs:SendMessage",
                    "Resource": "arn:aws:sqs:eu-west-1:123456789012:inbound",
                    "Condition": {
                        "ArnEquals": {"aws:SourceArn": "arn:aws:sns:eu-west-1:123456789012:orders"},
                        "StringEquals": {"aws:SourceAccount": "123456789012"},
                    },
                },
                {
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sqs:*",
                    "Resource": "arn:aws:sqs:eu-west-1:123456789012:inbound",
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
            ],
        }
    ),
)
