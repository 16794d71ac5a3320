"""A business table named "dedupe" with a lone `id` key: no TTL demanded.

AWS facts: DynamoDB TTL deletes every item whose TTL attribute holds a past epoch (DynamoDB
Developer Guide, "Time to Live"). `pricing-dedupe-rules` holds the pricing team's
deduplication RULES (which fields make two offers duplicates), keyed by a rule `id`: business
data that must never expire. Neither its name ("dedupe"), its env var (DEDUPE_RULES_TABLE) nor
its key schema (a lone string `id`, like Powertools' idempotency table) says it is an
idempotency store; no tag or idempotency env var does. Demanding TTL would delete the rules.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [],
}

rules = aws.dynamodb.Table(
    "pricing-dedupe-rules",
    hash_key="id",
    attributes=[{"name": "id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    point_in_time_recovery={"enabled": True},
)
aws.lambda_.Function(
    "offer-matcher",
    role="arn:aws:iam::123456789012:role/offer-matcher",
    runtime="python3.12",
    handler="matcher.handler",
    code=pulumi.AssetArchive({}),
    layers=[
        "arn:aws:lambda:eu-west-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-x86_64:7"
    ],
    environment={"variables": {"DEDUPE_RULES_TABLE": rules.name}},
)
