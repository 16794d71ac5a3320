"""A multi-tenant idempotency table (pk, sk) named by IDEMPOTENCY_TABLE_NAME, TTL missing.

AWS facts: idempotency records are kept only for the retry window and DynamoDB deletes nothing
without TTL (DynamoDB Developer Guide, "Time to Live"). The key layout is composite (tenant,
namespaced key), but the variable spells out what the table is for: TTL is demanded. The
reports table under REPORTS_TABLE is business data with PITR off (advisory only).
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("dynamodb-idempotency-table-has-ttl", "tenant-keys"),
        ("dynamodb-table-pitr-enabled", "reports"),
    ],
}

keys = aws.dynamodb.Table(
    "tenant-keys",
    hash_key="pk",
    range_key="sk",
    attributes=[{"name": "pk", "type": "S"}, {"name": "sk", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    point_in_time_recovery={"enabled": True},
)
reports = aws.dynamodb.Table(
    "reports",
    hash_key="report_id",
    attributes=[{"name": "report_id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
)
aws.lambda_.Function(
    "tenant-api",
    role="arn:aws:iam::123456789012:role/tenant-api",
    runtime="python3.12",
    handler="api.handler",
    code=pulumi.AssetArchive({}),
    environment={"variables": {"IDEMPOTENCY_TABLE_NAME": keys.name, "REPORTS_TABLE": reports.name}},
)
