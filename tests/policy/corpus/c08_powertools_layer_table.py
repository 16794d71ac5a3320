"""A Powertools idempotency consumer: the layer, a generic TABLE_NAME, and an "idempotency" name.

AWS facts: Powertools for AWS Lambda (Python) keeps idempotency records in a table keyed by
`id` and expects TTL on its `expiration` attribute so records disappear (Powertools docs,
Idempotency, "Required resources"); DynamoDB deletes nothing without TTL enabled. The function
carries the Powertools layer and names the table; TTL is disabled: violation.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("dynamodb-idempotency-table-has-ttl", "IdempotencyTable")],
}

table = aws.dynamodb.Table(
    "IdempotencyTable",
    hash_key="id",
    attributes=[{"name": "id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    ttl={"attribute_name": "expiration", "enabled": False},
    point_in_time_recovery={"enabled": True},
)
aws.lambda_.Function(
    "checkout",
    role="arn:aws:iam::123456789012:role/checkout",
    runtime="python3.12",
    handler="checkout.handler",
    code=pulumi.AssetArchive({}),
    layers=[
        "arn:aws:lambda:eu-west-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-x86_64:7"
    ],
    environment={"variables": {"TABLE_NAME": table.name}},
)
