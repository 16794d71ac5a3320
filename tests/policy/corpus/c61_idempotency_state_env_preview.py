"""Our runtime's env name IDEMPOTENCY_STATE_TABLE given the table's ARN, TTL missing.

AWS facts: idempotency records expire only with DynamoDB TTL (DynamoDB Developer Guide, "Time
to Live"). The function names the table by ARN: unknown in a preview, yet the environment
depends on the table and only that variable is unknown, so the preview recognises it too. A
second, business table under ORDERS_TABLE (known name) is not an idempotency table.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("dynamodb-idempotency-table-has-ttl", "consumer-state")],
}

state = aws.dynamodb.Table(
    "consumer-state",
    hash_key="event_id",
    attributes=[{"name": "event_id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    point_in_time_recovery={"enabled": True},
)
orders = aws.dynamodb.Table(
    "orders",
    name="orders",
    hash_key="order_id",
    attributes=[{"name": "order_id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    point_in_time_recovery={"enabled": True},
)
aws.lambda_.Function(
    "orders-consumer",
    role="arn:aws:iam::123456789012:role/orders-consumer",
    runtime="python3.12",
    handler="c.handler",
    code=pulumi.AssetArchive({}),
    environment={"variables": {"IDEMPOTENCY_STATE_TABLE": state.arn, "ORDERS_TABLE": orders.name}},
)
