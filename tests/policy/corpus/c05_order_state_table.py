"""An order-lifecycle state table referenced as STATE_TABLE is a business table.

AWS facts: DynamoDB TTL deletes items after the epoch in their TTL attribute (DynamoDB
Developer Guide, "Time to Live"); an order's lifecycle record must not expire, so demanding TTL
here would be wrong. Nothing marks the table as an idempotency store: its key is
(order_id, version), no idempotency tag, no Powertools layer, no idempotency env var.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [],
}

orders = aws.dynamodb.Table(
    "order-state",
    hash_key="order_id",
    range_key="version",
    attributes=[
        aws.dynamodb.TableAttributeArgs(name="order_id", type="S"),
        aws.dynamodb.TableAttributeArgs(name="version", type="N"),
    ],
    billing_mode="PAY_PER_REQUEST",
    point_in_time_recovery=aws.dynamodb.TablePointInTimeRecoveryArgs(enabled=True),
)
aws.lambda_.Function(
    "order-api",
    role="arn:aws:iam::123456789012:role/order-api",
    runtime="python3.12",
    handler="api.handler",
    code=pulumi.AssetArchive({}),
    environment=aws.lambda_.FunctionEnvironmentArgs(variables={"STATE_TABLE": orders.name}),
)
