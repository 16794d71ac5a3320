"""A role with sqs:* on its queue and the AWS managed AmazonSQSFullAccess policy.

AWS facts: a service wildcard grants every current and future action of the service (IAM User
Guide, "Grant least privilege"); AmazonSQSFullAccess grants sqs:*. Advisory. The statement
names its queue, so the data-action rule has nothing to say.
"""

import json

import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("iam-no-wildcard-actions", "poller"),
        ("iam-no-wildcard-actions", "poller-sqs"),
    ],
}

role = aws.iam.Role(
    "poller",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    ),
    managed_policy_arns=["arn:aws:iam::aws:policy/AmazonSQSFullAccess"],
)
aws.iam.RolePolicy(
    "poller-sqs",
    role=role.id,
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "sqs:*",
                    "Resource": "arn:aws:sqs:eu-west-1:123456789012:poller-input",
                }
            ],
        }
    ),
)
