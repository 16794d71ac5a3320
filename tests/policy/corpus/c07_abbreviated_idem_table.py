"""An idempotency table with abbreviated names: `payments-idem`, env IDEM_TABLE.

AWS facts: an idempotency record is only needed for the retry window; without DynamoDB TTL
(DynamoDB Developer Guide, "Time to Live") every processed event stays forever. The table's lone
string hash key `id` is the Powertools idempotency key layout, and both its name and the env
var say "idem": it is an idempotency table and lacks TTL.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("dynamodb-idempotency-table-has-ttl", "payments-idem")],
}

idem = aws.dynamodb.Table(
    "payments-idem",
    hash_key="id",
    attributes=[{"name": "id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    point_in_time_recovery={"enabled": True},
)
aws.lambda_.Function(
    "payments",
    role="arn:aws:iam::123456789012:role/payments",
    runtime="python3.12",
    handler="payments.handler",
    code=pulumi.AssetArchive({}),
    environment={"variables": {"IDEM_TABLE": idem.name}},
)
