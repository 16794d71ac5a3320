"""A CRM table of duplicate-contact matches is business data, not an idempotency store.

AWS facts: DynamoDB TTL deletes expired items (DynamoDB Developer Guide, "Time to Live"); the
CRM's record of which contacts were matched as duplicates must persist. Its name and env var
say "dedup", but its key (contact_id, candidate_id) is a relation, not an idempotency key, and
nothing else marks it: no TTL demanded.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [],
}

matches = aws.dynamodb.Table(
    "crm-dedup-matches",
    hash_key="contact_id",
    range_key="candidate_id",
    attributes=[
        {"name": "contact_id", "type": "S"},
        {"name": "candidate_id", "type": "S"},
    ],
    billing_mode="PAY_PER_REQUEST",
    point_in_time_recovery={"enabled": True},
)
aws.lambda_.Function(
    "crm-matcher",
    role="arn:aws:iam::123456789012:role/crm-matcher",
    runtime="python3.12",
    handler="matcher.handler",
    code=pulumi.AssetArchive({}),
    environment={"variables": {"DEDUP_MATCHES_TABLE": matches.name}},
)
