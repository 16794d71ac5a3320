"""A consumer state table recognised by its purpose tag, with TTL disabled.

AWS facts: idempotency records only matter within the retry window; without DynamoDB TTL they
are never deleted (DynamoDB Developer Guide, "Time to Live"). The table's name ("ledger") says
nothing, but its tag purpose=idempotency states what it is: TTL is demanded.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("dynamodb-idempotency-table-has-ttl", "ledger")],
}

table = aws.dynamodb.Table(
    "ledger",
    hash_key="pk",
    range_key="sk",
    attributes=[{"name": "pk", "type": "S"}, {"name": "sk", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    point_in_time_recovery={"enabled": True},
    tags={"purpose": "idempotency", "team": "payments"},
)
aws.lambda_.Function(
    "ledger-writer",
    role="arn:aws:iam::123456789012:role/ledger",
    runtime="python3.12",
    handler="l.handler",
    code=pulumi.AssetArchive({}),
    environment={"variables": {"LEDGER_TABLE": table.name}},
)
