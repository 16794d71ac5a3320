"""Implementation (b): Powertools the textbook way, per record.

``BatchProcessor`` + ``process_partial_response`` drive a record handler decorated with
``idempotent_function`` over a ``DynamoDBPersistenceLayer``; inside it, the business write
(PutItem of the order row) and the notification (``sns.publish`` of the orders contract's
notification, the one ours publishes: bench.workload.order_publish). The usual configuration: the
key is the producer's event id from the body (never the messageId), 90-day expiry,
``register_lambda_context`` called on every invocation.

Per fresh message that is four calls (persistence PutItem INPROGRESS, business PutItem, Publish,
persistence UpdateItem COMPLETED); a duplicate costs the one conditional PutItem that returns
the stored record. The persistence layer is constructed with only a table name, as the
Powertools examples do: it creates its own boto3 session and client (which the bench counts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import boto3
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from bench.baseline_per_record_transaction import order_item
from bench.workload import order_publish

NINETY_DAYS_S = 90 * 24 * 3600
POWERTOOLS_KEY_ATTR = "id"  # DynamoDBPersistenceLayer's default partition key


@dataclass(frozen=True)
class PowertoolsSettings:
    idempotency_table: str
    order_records_table: str
    topic_arn: str


def build_handler(settings: PowertoolsSettings) -> Any:
    """The textbook module body, in a factory so each benchmark run gets fresh state."""
    persistence_layer = DynamoDBPersistenceLayer(table_name=settings.idempotency_table)
    config = IdempotencyConfig(
        event_key_jmespath='powertools_json(body)."event_id"',
        expires_after_seconds=NINETY_DAYS_S,
    )
    processor = BatchProcessor(event_type=EventType.SQS)
    dynamodb = boto3.client("dynamodb")
    sns = boto3.client("sns")

    @idempotent_function(
        data_keyword_argument="record", persistence_store=persistence_layer, config=config
    )
    def process_order(record: SQSRecord) -> dict[str, str]:
        message = json.loads(record.body)
        order = message["order"]
        dynamodb.put_item(TableName=settings.order_records_table, Item=order_item(order))
        sns.publish(TopicArn=settings.topic_arn, **order_publish(message, message["event_id"]))
        return {"event_id": message["event_id"], "order_id": str(order["order_id"])}

    def record_handler(record: SQSRecord) -> dict[str, str]:
        result: dict[str, str] = process_order(record=record)
        return result

    def handler(event: dict[str, Any], context: Any) -> Any:
        config.register_lambda_context(context)
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

    return handler
