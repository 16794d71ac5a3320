"""SNS delivers to a queue encrypted with the AWS-managed key alias/aws/sqs: every delivery fails.

AWS facts: SNS sends to an encrypted queue as sns.amazonaws.com and needs kms:GenerateDataKey
and kms:Decrypt on the queue's key; the AWS-managed alias/aws/sqs key's policy cannot be edited
to allow it, so SNS (like EventBridge and S3) can only deliver to a queue encrypted with
SSE-SQS or a customer-managed key whose policy allows the service (SQS Developer Guide, "Key
management": "Enable compatibility between AWS services ... and encrypted queues"). The queue
policy itself is right (SNS, aws:SourceArn of the topic, TLS only). The subscription has no
redrive policy (advisory).
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        # delivery-permission-granted: the queue's AWS-managed key refuses sns.amazonaws.com.
        ("delivery-permission-granted", "orders-fanout"),
        ("sns-subscription-has-redrive", "orders-fanout-sub"),
    ],
}

topic = aws.sns.Topic("orders", kms_master_key_id=aws.kms.Key("orders-key").arn)
queue = aws.sqs.Queue("orders-fanout", kms_master_key_id="alias/aws/sqs")
aws.sqs.QueuePolicy(
    "orders-fanout-policy",
    queue_url=queue.id,
    policy=pulumi.Output.json_dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "TopicSends",
                    "Effect": "Allow",
                    "Principal": {"Service": "sns.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": queue.arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": topic.arn}},
                },
                {
                    "Sid": "TlsOnly",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sqs:*",
                    "Resource": queue.arn,
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
            ],
        }
    ),
)
aws.sns.TopicSubscription("orders-fanout-sub", topic=topic.arn, protocol="sqs", endpoint=queue.arn)
