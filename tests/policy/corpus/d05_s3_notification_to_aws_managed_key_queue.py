"""S3 event notifications to a queue encrypted with alias/aws/sqs, and to one without a policy.

AWS facts: S3 sends event notifications as s3.amazonaws.com; the destination queue's policy
must allow it sqs:SendMessage (S3 User Guide, "Granting permissions to publish event
notification messages to a destination"), and an encrypted queue's KMS key must let it use the
key, which the AWS-managed alias/aws/sqs key never does (SQS Developer Guide, "Key
management"). S3 tests the destination when the notification configuration is put, so the
deployment fails. `uploads-encrypted` has the right policy but the AWS-managed key;
`uploads-plain` uses SSE-SQS but has no policy for S3.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        # delivery-permission-granted: the AWS-managed key refuses s3.amazonaws.com.
        ("delivery-permission-granted", "uploads-encrypted"),
        # delivery-permission-granted: no queue policy lets s3.amazonaws.com send.
        ("delivery-permission-granted", "uploads-plain"),
        ("sqs-queue-tls-only", "uploads-plain"),
    ],
}

bucket = aws.s3.Bucket("uploads")
encrypted = aws.sqs.Queue("uploads-encrypted", kms_master_key_id="alias/aws/sqs")
plain = aws.sqs.Queue("uploads-plain", sqs_managed_sse_enabled=True)
aws.sqs.QueuePolicy(
    "uploads-encrypted-policy",
    queue_url=encrypted.id,
    policy=pulumi.Output.json_dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "BucketSends",
                    "Effect": "Allow",
                    "Principal": {"Service": "s3.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": encrypted.arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": bucket.arn}},
                },
                {
                    "Sid": "TlsOnly",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sqs:*",
                    "Resource": encrypted.arn,
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
            ],
        }
    ),
)
aws.s3.BucketNotification(
    "uploads-notifications",
    bucket=bucket.id,
    queues=[
        {"queue_arn": encrypted.arn, "events": ["s3:ObjectCreated:*"], "filter_prefix": "in/"},
        {"queue_arn": plain.arn, "events": ["s3:ObjectRemoved:*"]},
    ],
)
