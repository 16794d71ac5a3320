"""The runtime's clients skip botocore's client-side parameter validation (CPU per item;
idempotent_messaging/runtime/clients.py). That is only sound if every request the runtime
builds passes it: here every branch (fresh, in-batch duplicate, `sent` and `pending`
duplicates, a clash with another event's row, poison to the DLQ), on both claim placements and
both queue kinds, is run with botocore's own validator on each request."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.validate import ParamValidator

from idempotent_messaging.runtime import env
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    STATE_TABLE,
    Aws,
    FakeContext,
    order_body,
    put_legacy_row,
    record,
    separate_claim_orders,
    single_item_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration


def validating(world: Aws) -> list[str]:
    """Run botocore's validator on every request of the world's clients; returns the reports."""
    reports: list[str] = []
    validator = ParamValidator()

    def check(params: dict[str, Any], model: Any, **_: Any) -> None:
        report = validator.validate(params, model.input_shape)
        if report.has_errors():
            reports.append(f"{model.name}: {report.generate_report()}")

    for client in (world.dynamodb, world.sns, world.sqs):
        client.meta.events.register_first("before-parameter-build", check)
    return reports


def set_pending(world: Aws, event_id: str, claims_in_items: bool) -> None:
    table, status = (
        (BUSINESS_TABLE, env.ITEM_CLAIM_STATUS) if claims_in_items else (STATE_TABLE, "status")
    )
    event_attribute = env.ITEM_CLAIM_EVENT_ID if claims_in_items else "event_id"
    (item,) = [
        i
        for i in world.dynamodb.scan(TableName=table)["Items"]
        if event_id in i.get(event_attribute, {}).get("S", "")
    ]
    key_names = [
        k["AttributeName"]
        for k in world.dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]
    ]
    world.dynamodb.update_item(
        TableName=table,
        Key={name: item[name] for name in key_names},
        UpdateExpression="SET #s = :p",
        ExpressionAttributeNames={"#s": status},
        ExpressionAttributeValues={":p": {"S": env.STATUS_PENDING}},
    )


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@pytest.mark.parametrize("claims_in_items", [False, True], ids=["separate-claim", "in-item"])
def test_every_request_of_every_branch_passes_botocore_validation(
    aws: Aws, fifo: bool, claims_in_items: bool
) -> None:
    aws.claims_in_items = claims_in_items
    consumer = single_item_orders() if claims_in_items else separate_claim_orders()
    runtime = aws.runtime(source_fifo=fifo)
    reports = validating(aws)

    def batch(*bodies: str) -> dict[str, Any]:
        records = [
            record(body, group_id=f"g{i}" if fifo else None) for i, body in enumerate(bodies)
        ]
        return consumer.process(sqs_event(*records), FakeContext(), runtime)

    assert batch(order_body("sent"), order_body("pending")) == {"batchItemFailures": []}
    set_pending(aws, "pending", claims_in_items)  # its delivery died before publishing
    put_legacy_row(aws, "clash", order_id="order-sent")  # the clash's key is already recorded
    response = batch(
        order_body("fresh"),
        order_body("fresh"),
        order_body("sent"),
        order_body("pending"),
        order_body("clash", order_id="order-sent"),
        "not json",
    )
    assert response == {"batchItemFailures": []}
    assert len(aws.dlq_messages()) == 2  # the clash (semantic) and the poison
    assert reports == []
