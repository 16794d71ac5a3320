"""A queue with SSE-SQS switched off and a table without point-in-time recovery.

AWS facts: with sqs_managed_sse_enabled=False and no KMS key SQS stores messages unencrypted
(SQS Developer Guide, "Encryption at rest"); DynamoDB PITR is off by default and without it a
bad write cannot be rolled back (DynamoDB Developer Guide, "Point-in-time recovery"). Both are
advisories. The table is a business table (customer profiles): no TTL demanded.
"""

import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sqs-queue-encrypted", "profile-updates"),
        ("sqs-queue-tls-only", "profile-updates"),
        ("dynamodb-table-pitr-enabled", "profiles"),
    ],
}

aws.sqs.Queue("profile-updates", sqs_managed_sse_enabled=False)
aws.dynamodb.Table(
    "profiles",
    hash_key="customer_id",
    attributes=[{"name": "customer_id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
)
