"""A consumer role allowing DynamoDB item writes and SQS receives on Resource "*".

AWS facts: dynamodb:PutItem/UpdateItem and sqs:ReceiveMessage/DeleteMessage support
resource-level permissions (Service Authorization Reference, DynamoDB and SQS actions tables),
so "*" needlessly covers every table and queue of the account: advisory. The role's other
statement names its log group's ARN and is fine.
"""

import json

import pulumi_aws as aws

LOG_GROUP_ARN = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/worker:*"
EXPECTED = {
    "both": [("iam-data-actions-name-resources", "worker-access")],
}

role = aws.iam.Role(
    "worker",
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
)
aws.iam.RolePolicy(
    "worker-access",
    role=role.id,
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": [
                        "dynamodb:PutItem",
                        "dynamodb:UpdateItem",
                        "sqs:ReceiveMessage",
                        "sqs:DeleteMessage",
                    ],
                    "Resource": "*",
                },
                {
                    "Effect": "Allow",
                    "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                    "Resource": LOG_GROUP_ARN,
                },
            ],
        }
    ),
)
