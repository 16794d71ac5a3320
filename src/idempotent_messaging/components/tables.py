"""DynamoDB tables: the idempotency state table and declared business tables.

Both: on-demand billing (consumers burst with the queue), point-in-time recovery, SSE with
an AWS-managed key unless a KMS key ARN is given, a data role tag, and with ``protect_data``
deletion protection, Pulumi protection and retain-on-delete (protection.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from idempotent_messaging import names
from idempotent_messaging.runtime import env

from .protection import ROLE_IDEMPOTENCY_STATE, data_options, data_tags


@dataclass(frozen=True)
class KeySchema:
    hash_key: str
    hash_key_type: str = "S"
    range_key: str | None = None
    range_key_type: str = "S"


def state_key_schema(layout: str) -> KeySchema:
    """``event_id``: partition key event_id (the producer's event id). ``tenant``: pk = tenant,
    sk = namespace#key."""
    if layout == env.LAYOUT_EVENT_ID:
        return KeySchema(hash_key=env.EVENT_ID_KEY)
    if layout == env.LAYOUT_TENANT:
        return KeySchema(hash_key=env.TENANT_PARTITION_KEY, range_key=env.TENANT_SORT_KEY)
    raise ValueError(
        f"state_key_layout={layout!r}: must be one of {[env.LAYOUT_EVENT_ID, env.LAYOUT_TENANT]}"
    )


def create_table(
    resource_name: str,
    *,
    table_name: str,
    schema: KeySchema,
    role: str,
    protect_data: bool,
    ttl_attribute: str | None = None,
    kms_key_arn: pulumi.Input[str] | None = None,
    tags: Mapping[str, str] | None = None,
    parent: pulumi.Resource,
) -> aws.dynamodb.Table:
    """One table, tagged with its data ``role``; ``protect_data`` turns on all three guards
    (and off: deletion protection is then set false, so a stage can really be torn down).
    ``table_name`` is the full name, fitted to DynamoDB's limit (names.fit)."""
    physical_name = names.fit(table_name, names.DYNAMODB_TABLE)
    attributes = [aws.dynamodb.TableAttributeArgs(name=schema.hash_key, type=schema.hash_key_type)]
    if schema.range_key is not None:
        attributes.append(
            aws.dynamodb.TableAttributeArgs(name=schema.range_key, type=schema.range_key_type)
        )
    return aws.dynamodb.Table(
        resource_name,
        name=physical_name,
        billing_mode="PAY_PER_REQUEST",
        hash_key=schema.hash_key,
        range_key=schema.range_key,
        attributes=attributes,
        ttl=(
            aws.dynamodb.TableTtlArgs(attribute_name=ttl_attribute, enabled=True)
            if ttl_attribute is not None
            else None
        ),
        point_in_time_recovery=aws.dynamodb.TablePointInTimeRecoveryArgs(enabled=True),
        server_side_encryption=aws.dynamodb.TableServerSideEncryptionArgs(
            enabled=True, kms_key_arn=kms_key_arn
        ),
        deletion_protection_enabled=protect_data,
        tags=data_tags(
            names.tagged(tags, table_name, physical_name), role, protect_data=protect_data
        ),
        opts=data_options(parent, protect_data),
    )


def create_state_table(
    resource_name: str,
    *,
    table_name: str,
    layout: str,
    ttl_attribute: str,
    protect_data: bool,
    kms_key_arn: pulumi.Input[str] | None = None,
    tags: Mapping[str, str] | None = None,
    parent: pulumi.Resource,
) -> aws.dynamodb.Table:
    """The claim table, tagged so the policy pack recognises it as idempotency state, and with
    ``STATUS_NOTE_TAG``: a team reading the source article's ``status`` (``pending`` = not yet
    published) finds, on the table itself and at no write cost, that a receipt now records
    publication."""
    return create_table(
        resource_name,
        table_name=table_name,
        schema=state_key_schema(layout),
        role=ROLE_IDEMPOTENCY_STATE,
        protect_data=protect_data,
        ttl_attribute=ttl_attribute,
        kms_key_arn=kms_key_arn,
        tags={**(tags or {}), STATUS_NOTE_TAG: STATUS_NOTE},
        parent=parent,
    )


STATUS_NOTE_TAG = "idempotent-messaging:status"
STATUS_NOTE = (
    "A claim stays pending once published: the receipt item named by its receipt attribute then "
    "lists it. Pending and not listed = notification owed. docs/runtime.md: Publication receipts"
)
"""A tag value: at most 256 characters, letters, digits, spaces and + - = . _ : / only
(DynamoDB Developer Guide, "Tagging restrictions"); the tag costs no write."""
