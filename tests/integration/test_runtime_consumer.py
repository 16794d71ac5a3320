"""Every branch of the transactional strategy against moto, with AWS call counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handlers.orders import ORDER_KEY, order_notification, order_writes
from idempotent_messaging.runtime import (
    Consumer,
    EventIdFromAttribute,
    EventIdFromContentHash,
    SchemaError,
    WriteContext,
    env,
)
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    STATE_TABLE,
    TENANT_STATE_TABLE,
    Aws,
    FakeContext,
    SimQueue,
    assert_exactly_once,
    order_body,
    put_legacy_row,
    record,
    separate_claim_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

# The runtime's separate-claim path: the orders plug-ins without their single-item declaration.
ORDERS = separate_claim_orders()


def run(world: Aws, *records: dict[str, Any], consumer: Consumer = ORDERS, **settings: Any):
    world.reset_counts()
    return consumer.process(sqs_event(*records), FakeContext(), world.runtime(**settings))


def failures(response: dict[str, Any]) -> set[str]:
    return {f["itemIdentifier"] for f in response["batchItemFailures"]}


def dlq_by_original(world: Aws) -> dict[str, dict[str, str]]:
    out = {}
    for m in world.dlq_messages():
        attrs = {k: v["StringValue"] for k, v in m["MessageAttributes"].items()}
        out[attrs["original_message_id"]] = {**attrs, "body": m["Body"]}
    return out


def test_ten_fresh_events_cost_three_calls_and_are_written_once(aws: Aws) -> None:
    records = [record(order_body(f"e{i}")) for i in range(10)]
    response = run(aws, *records)
    assert response == {"batchItemFailures": []}
    assert aws.calls == ["TransactWriteItems", "PublishBatch", "PutItem"]  # receipt
    notes = assert_exactly_once(aws, {f"e{i}": f"order-e{i}" for i in range(10)})
    assert len(notes) == 10


def test_ten_sent_duplicates_cost_one_call_and_change_nothing(aws: Aws) -> None:
    records = [record(order_body(f"e{i}")) for i in range(10)]
    run(aws, *records)
    aws.notifications()
    response = run(aws, *records)
    assert response == {"batchItemFailures": []}
    # ALL_OLD carries the claim and its receipt id: one read, of the batch's receipt
    assert aws.calls == ["TransactWriteItems", "BatchGetItem"]
    assert aws.notifications() == []
    assert len(aws.order_rows()) == 10


def test_pending_claim_is_republished_then_marked_sent(aws: Aws) -> None:
    """Pattern A: the first delivery died between commit and publish."""
    body = order_body("e1")
    aws.crash_before_call = 2  # dies right before PublishBatch
    queue = SimQueue()
    queue.send(body)
    assert queue.deliver(lambda ev: ORDERS.process(ev, FakeContext(), aws.runtime())) is None
    assert aws.claims()[0]["status"]["S"] == env.STATUS_PENDING
    aws.crash_before_call = None
    aws.reset_counts()
    response = queue.deliver(lambda ev: ORDERS.process(ev, FakeContext(), aws.runtime()))
    assert response == {"batchItemFailures": []}
    assert aws.calls == [
        "TransactWriteItems",
        "BatchGetItem",  # the receipt its claim names: absent
        "PublishBatch",
        "BatchExecuteStatement",  # the claim marked sent
    ]
    notes = assert_exactly_once(aws, {"e1": "order-e1"})
    assert len(notes) == 1
    assert aws.claims()[0]["notification_id"]["S"]


def test_duplicate_without_status_in_cancellation_reads_it_with_one_batch_get(aws: Aws) -> None:
    records = [record(order_body(f"e{i}")) for i in range(10)]
    run(aws, *records)

    def strip_items(parsed: dict[str, Any], **_: Any) -> None:
        for reason in parsed.get("CancellationReasons", []):
            reason.pop("Item", None)

    aws.dynamodb.meta.events.register("after-call.dynamodb.TransactWriteItems", strip_items)
    response = run(aws, *records)
    assert response == {"batchItemFailures": []}
    assert aws.calls == ["TransactWriteItems", "BatchGetItem", "BatchGetItem"]  # claims, receipt


def test_producer_resend_with_new_message_id_is_a_duplicate(aws: Aws) -> None:
    body = order_body("e1")
    first = record(body)
    resend = record(body)
    assert first["messageId"] != resend["messageId"]
    run(aws, first)
    response = run(aws, resend)
    assert response == {"batchItemFailures": []}
    assert len(aws.order_rows()) == 1
    assert len(aws.notifications()) == 1


def test_same_event_twice_in_one_batch_is_written_once(aws: Aws) -> None:
    body = order_body("e1")
    response = run(aws, record(body), record(body), record(order_body("e2")))
    assert response == {"batchItemFailures": []}
    assert aws.calls == ["TransactWriteItems", "PublishBatch", "PutItem"]  # receipt
    assert_exactly_once(aws, {"e1": "order-e1", "e2": "order-e2"})


def test_other_event_for_recorded_order_is_quarantined_as_semantic_failure(aws: Aws) -> None:
    """The state-table claim: the business key is the consumer's. An event whose row key is
    already recorded (here by another writer) fails its business write's own condition."""
    run(aws, record(order_body("e1", order_id="o1")))
    put_legacy_row(aws, "e2", order_id="o1")
    clash = record(order_body("e2", order_id="o1"))
    fresh = record(order_body("e3"))
    response = run(aws, clash, fresh)
    assert response == {"batchItemFailures": []}
    # The cancelled transaction is split: the clean record is resubmitted alone.
    assert aws.calls == [
        "TransactWriteItems",
        "TransactWriteItems",
        "PublishBatch",
        "PutItem",
        "SendMessageBatch",
    ]
    dlq = dlq_by_original(aws)
    assert dlq[clash["messageId"]]["failure_kind"] == "semantic"
    assert "ConditionalCheckFailed" in dlq[clash["messageId"]]["failure_reason"]
    claims = {c["event_id"]["S"] for c in aws.claims()}
    assert claims == {"e1", "e3"}  # atomicity: the clashing event's claim was not written
    rows = {r[ORDER_KEY]["S"]: r for r in aws.order_rows()}
    assert rows["e1"]["source_event_id"]["S"] == "e1"
    assert "source_event_id" not in rows["e2"]  # the recorded row is untouched


@pytest.mark.parametrize(
    ("body", "kind", "reason_part"),
    [
        ("{not json", "not_json", "not JSON"),
        (json.dumps({"order": {"order_id": "o"}}), "missing_event_id", "event_id"),
        (json.dumps({"event_id": 42, "order": {"order_id": "o"}}), "invalid_event_id", "int"),
        (json.dumps({"event_id": "", "order": {"order_id": "o"}}), "invalid_event_id", "empty"),
        (json.dumps({"event_id": "e", "order": {}}), "schema", "order.order_id"),
        (json.dumps({"event_id": "e", "order": "x"}), "schema", "order"),
        (order_body("big", note="x" * 300_000), "oversize", "bytes"),
    ],
)
def test_every_poison_class_is_quarantined_with_its_reason_while_neighbours_succeed(
    aws: Aws, body: str, kind: str, reason_part: str
) -> None:
    poison = record(body, receive_count=2)
    left, right = record(order_body("n1")), record(order_body("n2"))
    response = run(aws, left, poison, right)
    assert response == {"batchItemFailures": []}
    dlq = dlq_by_original(aws)
    assert set(dlq) == {poison["messageId"]}
    entry = dlq[poison["messageId"]]
    assert entry["failure_class"] == "permanent"
    assert entry["failure_kind"] == kind
    assert reason_part in entry["failure_reason"]
    assert entry["receive_count"] == "2"
    assert entry["body"] == body  # kept unchanged for a redrive
    assert_exactly_once(aws, {"n1": "order-n1", "n2": "order-n2"})


def test_quarantine_on_fifo_dlq_keeps_group_and_dedups_by_message_id(
    aws_fifo_dlq: Aws,
) -> None:
    poison = record("nope", group_id="tenant-a", fifo=True)
    response = run(aws_fifo_dlq, poison, dlq_url=aws_fifo_dlq.dlq_url, source_fifo=True)
    assert response == {"batchItemFailures": []}
    run(aws_fifo_dlq, poison, dlq_url=aws_fifo_dlq.dlq_url, source_fifo=True)  # re-quarantine
    messages = aws_fifo_dlq.dlq_messages()
    assert len(messages) == 1
    assert messages[0]["Attributes"]["MessageGroupId"] == "tenant-a"


def test_failed_quarantine_send_reports_the_record_failed(aws: Aws) -> None:
    poison, good = record("nope"), record(order_body("g1"))
    response = run(aws, poison, good, dlq_url=aws.dlq_url + "-missing")
    assert failures(response) == {poison["messageId"]}
    assert len(aws.order_rows()) == 1


def test_remaining_time_guard_reports_unstarted_records_failed(aws: Aws) -> None:
    records = [record(order_body(f"e{i}")) for i in range(3)]
    aws.reset_counts()
    response = ORDERS.process(
        sqs_event(*records),
        FakeContext(remaining_ms=500),
        aws.runtime(remaining_time_guard_ms=1000),
    )
    assert failures(response) == {r["messageId"] for r in records}
    assert aws.calls == []
    assert aws.order_rows() == []


def test_remaining_time_guard_between_stages_leaves_claims_pending_for_redelivery(
    aws: Aws,
) -> None:
    context = FakeContext(remaining_ms=60_000)

    def shrink(**_: Any) -> None:
        context.remaining_ms = 10

    aws.dynamodb.meta.events.register("after-call.dynamodb.TransactWriteItems", shrink)
    records = [record(order_body(f"e{i}")) for i in range(2)]
    aws.reset_counts()
    response = ORDERS.process(sqs_event(*records), context, aws.runtime())
    assert failures(response) == {r["messageId"] for r in records}
    assert aws.calls == ["TransactWriteItems"]
    assert {c["status"]["S"] for c in aws.claims()} == {env.STATUS_PENDING}


def test_persistent_transaction_conflict_is_retried_three_times_then_failed(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps: list[float] = []
    consumer = Consumer(writes=order_writes, notification=order_notification, sleep=sleeps.append)
    conflict = {
        "Error": {"Code": "TransactionCanceledException", "Message": "conflict"},
        "CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}],
    }
    from botocore.exceptions import ClientError

    def always_conflict(**_: Any) -> None:
        raise ClientError(conflict, "TransactWriteItems")

    aws.dynamodb.meta.events.register("before-call.dynamodb.TransactWriteItems", always_conflict)
    rec = record(order_body("e1"))
    response = run(aws, rec, consumer=consumer)
    assert failures(response) == {rec["messageId"]}
    assert aws.calls == ["TransactWriteItems"] * 3
    assert len(sleeps) == 2
    assert 0.025 <= sleeps[0] <= 0.075 and 0.05 <= sleeps[1] <= 0.15


def test_transient_conflict_then_success_processes_the_record(aws: Aws) -> None:
    from botocore.exceptions import ClientError

    consumer = Consumer(writes=order_writes, notification=order_notification, sleep=lambda s: None)
    state = {"left": 1}

    def conflict_once(**_: Any) -> None:
        if state["left"]:
            state["left"] -= 1
            raise ClientError(
                {
                    "Error": {"Code": "TransactionCanceledException", "Message": "c"},
                    "CancellationReasons": [
                        {"Code": "None"},
                        {"Code": "None"},
                        {"Code": "TransactionConflict"},
                        {"Code": "None"},
                    ],
                },
                "TransactWriteItems",
            )

    aws.dynamodb.meta.events.register("before-call.dynamodb.TransactWriteItems", conflict_once)
    response = run(aws, record(order_body("e1")), record(order_body("e2")), consumer=consumer)
    assert response == {"batchItemFailures": []}
    assert_exactly_once(aws, {"e1": "order-e1", "e2": "order-e2"})


def test_more_than_one_hundred_items_are_chunked_into_several_transactions(aws: Aws) -> None:
    def three_writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        return [
            {
                "Put": {
                    "TableName": BUSINESS_TABLE,
                    "Item": {ORDER_KEY: {"S": f"{ctx.event_id}-{i}"}},
                    "ConditionExpression": f"attribute_not_exists({ORDER_KEY})",
                }
            }
            for i in range(3)
        ]

    consumer = Consumer(writes=three_writes)
    records = [record(json.dumps({"event_id": f"e{i}"})) for i in range(30)]  # 30 x 4 items
    response = run(aws, *records, consumer=consumer)
    assert response == {"batchItemFailures": []}
    assert aws.calls == ["TransactWriteItems", "TransactWriteItems"]  # 100 + 20 items
    assert len(aws.order_rows()) == 90
    assert {c["status"]["S"] for c in aws.claims()} == {env.STATUS_SENT}  # no notification step


def test_unattributable_validation_error_falls_back_to_one_transaction_per_record(
    aws: Aws,
) -> None:
    def same_row(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        # Two records touching one item in one transaction: DynamoDB rejects the whole call.
        return [
            {
                "Update": {
                    "TableName": BUSINESS_TABLE,
                    "Key": {ORDER_KEY: {"S": "shared"}},
                    "UpdateExpression": "ADD hits :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
        ]

    consumer = Consumer(writes=same_row)
    response = run(aws, record('{"event_id": "a"}'), record('{"event_id": "b"}'), consumer=consumer)
    assert response == {"batchItemFailures": []}
    assert aws.calls == ["TransactWriteItems"] * 3
    assert aws.order_rows()[0]["hits"]["N"] == "2"


def test_event_id_from_message_attribute(aws: Aws) -> None:
    consumer = Consumer(
        writes=order_writes,
        notification=order_notification,
        event_id=EventIdFromAttribute("event-id"),
    )
    body = json.dumps({"order": {"order_id": "o7"}})
    ok = record(body, attributes={"event-id": "attr-1"})
    again = record(body, attributes={"event-id": "attr-1"})
    missing = record(body)
    response = run(aws, ok, missing, consumer=consumer)
    assert response == {"batchItemFailures": []}
    run(aws, again, consumer=consumer)
    assert {c["event_id"]["S"] for c in aws.claims()} == {"attr-1"}
    assert len(aws.order_rows()) == 1
    assert dlq_by_original(aws)[missing["messageId"]]["failure_kind"] == "missing_event_id"


def test_content_hash_mode_dedups_identical_bodies_with_a_conditional_claim(aws: Aws) -> None:
    def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        return order_writes({"order": message}, ctx)

    consumer = Consumer(writes=writes, event_id=EventIdFromContentHash())
    body_a = json.dumps({"order_id": "h1", "amount": 5})
    body_b = json.dumps({"order_id": "h2", "amount": 5})
    run(aws, record(body_a), record(body_b), consumer=consumer)
    response = run(aws, record(body_a), consumer=consumer)  # producer re-send, no id at all
    assert response == {"batchItemFailures": []}
    assert aws.calls == ["TransactWriteItems"]
    import hashlib

    claims = {c["event_id"]["S"] for c in aws.claims()}
    assert claims == {hashlib.sha256(b.encode()).hexdigest() for b in (body_a, body_b)}
    assert len(aws.order_rows()) == 2


def tenant_order_writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    """The orders row, keyed by tenant and event: one event id in two tenants is two events."""
    (put,) = order_writes(message, ctx)
    put["Put"]["Item"][ORDER_KEY] = {"S": f"{ctx.tenant}#{ctx.event_id}"}
    return [put]


def test_multi_tenant_layout_keys_claims_by_tenant_and_namespace(aws: Aws) -> None:
    consumer = Consumer(
        writes=tenant_order_writes,
        notification=order_notification,
        namespace="charge",
        tenant=lambda message: message["order"]["tenant"],
    )
    settings = {"state_table": TENANT_STATE_TABLE, "key_layout": env.LAYOUT_TENANT}
    a = record(order_body("same-id", order_id="oa", tenant="t1"))
    b = record(order_body("same-id", order_id="ob", tenant="t2"))
    no_tenant = record(order_body("x", order_id="oc"))
    response = run(aws, a, b, no_tenant, consumer=consumer, **settings)
    assert response == {"batchItemFailures": []}
    keys = {(c["pk"]["S"], c["sk"]["S"], c["status"]["S"]) for c in aws.claims(TENANT_STATE_TABLE)}
    assert keys == {("t1", "charge#same-id", "sent"), ("t2", "charge#same-id", "sent")}
    response = run(aws, a, consumer=consumer, **settings)
    assert aws.calls == ["TransactWriteItems", "BatchGetItem"]
    assert len(aws.order_rows()) == 2
    assert dlq_by_original(aws)[no_tenant["messageId"]]["failure_kind"] == "schema"


def test_fifo_group_stops_at_first_failure_and_other_groups_go_on(aws: Aws) -> None:
    """A transient failure of g1's first record fails every later g1 record (unwritten)."""
    from botocore.exceptions import ClientError

    consumer = Consumer(writes=order_writes, notification=order_notification, sleep=lambda s: None)
    g1a = record(order_body("g1a"), group_id="g1", fifo=True)
    g2a = record(order_body("g2a"), group_id="g2", fifo=True)
    g1b = record(order_body("g1b"), group_id="g1", fifo=True)
    poison_g2 = record("nope", group_id="g2", fifo=True)
    g2b = record(order_body("g2b"), group_id="g2", fifo=True)

    def conflict_on_g1a(params: dict[str, Any], **_: Any) -> None:
        items = params["TransactItems"]
        ids = [i["Put"]["Item"].get("event_id", {}).get("S") for i in items if "Put" in i]
        if "g1a" in ids:
            reasons = [
                {"Code": "TransactionConflict"}
                if i.get("Put", {}).get("Item", {}).get("event_id", {}).get("S") == "g1a"
                else {"Code": "None"}
                for i in items
            ]
            raise ClientError(
                {
                    "Error": {"Code": "TransactionCanceledException", "Message": "c"},
                    "CancellationReasons": reasons,
                },
                "TransactWriteItems",
            )

    aws.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.TransactWriteItems", conflict_on_g1a
    )
    response = run(aws, g1a, g2a, g1b, poison_g2, g2b, consumer=consumer, source_fifo=True)
    assert failures(response) == {g1a["messageId"], g1b["messageId"]}
    rows = {r["order_id"]["S"] for r in aws.order_rows()}
    assert rows == {"order-g2a", "order-g2b"}  # g1b was NOT written ahead of g1a
    assert set(dlq_by_original(aws)) == {poison_g2["messageId"]}


def test_fifo_poison_before_a_failure_in_its_group_is_not_quarantined_out_of_order(
    aws: Aws,
) -> None:
    poison = record("nope", group_id="g", fifo=True)
    good = record(order_body("g-ok"), group_id="g", fifo=True)
    response = run(aws, good, poison, dlq_url=aws.dlq_url + "-missing", source_fifo=True)
    assert failures(response) == {poison["messageId"]}
    later = record(order_body("g-later"), group_id="g", fifo=True)
    response = run(aws, poison, later, dlq_url=aws.dlq_url + "-missing", source_fifo=True)
    assert failures(response) == {poison["messageId"], later["messageId"]}


def test_publish_failure_reports_failed_and_redelivery_republishes(aws: Aws) -> None:
    records = [record(order_body(f"e{i}")) for i in range(2)]
    response = run(aws, *records, topic_arn=aws.topic_arn + "-gone")
    assert failures(response) == {r["messageId"] for r in records}
    assert {c["status"]["S"] for c in aws.claims()} == {env.STATUS_PENDING}
    response = run(aws, *records)
    assert response == {"batchItemFailures": []}
    assert aws.calls == [
        "TransactWriteItems",
        "BatchGetItem",  # the receipt its claim names: absent
        "PublishBatch",
        "BatchExecuteStatement",  # the claim marked sent
    ]
    assert_exactly_once(aws, {"e0": "order-e0", "e1": "order-e1"})


def test_status_write_failure_reports_failed_and_redelivery_completes(aws: Aws) -> None:
    from botocore.exceptions import ClientError

    state = {"n": 0}

    def fail_first_status_write(**_: Any) -> None:
        state["n"] += 1
        if state["n"] == 1:
            raise ClientError(
                {"Error": {"Code": "AccessDeniedException", "Message": "no"}},
                "PutItem",
            )

    # The fresh record's status lives in the batch's receipt: refuse that write.
    aws.dynamodb.meta.events.register("before-call.dynamodb.PutItem", fail_first_status_write)
    rec = record(order_body("e1"))
    assert failures(run(aws, rec)) == {rec["messageId"]}
    response = run(aws, rec)
    assert response == {"batchItemFailures": []}
    assert aws.calls == [
        "TransactWriteItems",
        "BatchGetItem",  # the receipt its claim names: absent
        "PublishBatch",
        "BatchExecuteStatement",  # the claim marked sent
    ]
    notes = assert_exactly_once(aws, {"e1": "order-e1"})
    assert len(notes) == 2  # at-least-once: republished after the unmarked publish


def test_plugin_bug_types_are_schema_poison_without_quoting_the_message(aws: Aws) -> None:
    def broken(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        raise ValueError(f"bad value {message['secret']}")

    consumer = Consumer(writes=broken)
    rec = record(json.dumps({"event_id": "e", "secret": "S3CR3T"}))
    assert run(aws, rec, consumer=consumer) == {"batchItemFailures": []}
    entry = dlq_by_original(aws)[rec["messageId"]]
    assert entry["failure_kind"] == "schema"
    assert "S3CR3T" not in entry["failure_reason"]


def test_invalid_transaction_item_from_writes_is_schema_poison(aws: Aws) -> None:
    consumer = Consumer(writes=lambda m, c: [{"PutItem": {}}])
    rec = record(json.dumps({"event_id": "e"}))
    assert run(aws, rec, consumer=consumer) == {"batchItemFailures": []}
    assert dlq_by_original(aws)[rec["messageId"]]["failure_kind"] == "schema"


def test_schema_error_raised_by_writes_is_quarantined(aws: Aws) -> None:
    def picky(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        raise SchemaError("amount must be positive")

    rec = record(json.dumps({"event_id": "e"}))
    assert run(aws, rec, consumer=Consumer(writes=picky)) == {"batchItemFailures": []}
    assert dlq_by_original(aws)[rec["messageId"]]["failure_reason"] == "amount must be positive"


def test_missing_configuration_reports_every_record_failed_without_calls(aws: Aws) -> None:
    records = [record(order_body("e1")), record(order_body("e2"))]
    response = run(aws, *records, topic_arn=None)
    assert failures(response) == {r["messageId"] for r in records}
    assert aws.calls == []


def test_claim_records_pending_state_fields(aws: Aws) -> None:
    run(aws, record(order_body("e1"), message_id="m-1"))
    claim = aws.claims()[0]
    assert claim["message_id"]["S"] == "m-1"
    ttl = int(claim[env.DEFAULT_TTL_ATTRIBUTE]["N"])
    assert ttl - int(claim["received_at"]["N"]) == env.DEFAULT_CLAIM_TTL_SECONDS


def test_sns_sender_fault_quarantines_and_other_publish_failure_retries(aws: Aws) -> None:
    rejected, flaky, fine = (record(order_body(f"p{i}")) for i in range(3))

    def partial(parsed: dict[str, Any], **_: Any) -> None:
        ok = parsed["Successful"]
        parsed["Successful"] = [e for e in ok if e["Id"] == "r2"]
        parsed["Failed"] = [
            {"Id": "r0", "Code": "InvalidParameter", "Message": "bad", "SenderFault": True},
            {"Id": "r1", "Code": "InternalError", "Message": "oops", "SenderFault": False},
        ]

    aws.sns.meta.events.register("after-call.sns.PublishBatch", partial)
    response = run(aws, rejected, flaky, fine)
    assert failures(response) == {flaky["messageId"]}
    # The business write of p0 committed: its DLQ copy says so, under its own kind.
    copy = dlq_by_original(aws)[rejected["messageId"]]
    assert copy["failure_kind"] == "notification_owed"
    assert "WAS applied" in copy["failure_reason"]
    assert "notification is owed" in copy["failure_reason"]
    claims = {c["event_id"]["S"]: c for c in aws.claims()}
    statuses = {e: c["status"]["S"] for e, c in claims.items()}
    assert statuses == {"p0": "pending", "p1": "pending", "p2": "sent"}
    owed = claims["p0"]["owed_notification"]["M"]
    assert json.loads(owed["message"]["S"])["event_id"] == "p0"


def test_unprocessed_status_reads_are_reported_failed(aws: Aws) -> None:
    records = [record(order_body(f"u{i}")) for i in range(2)]
    run(aws, *records)

    def strip_items(parsed: dict[str, Any], **_: Any) -> None:
        for reason in parsed.get("CancellationReasons", []):
            reason.pop("Item", None)

    def unprocess_first(parsed: dict[str, Any], **_: Any) -> None:
        found = parsed["Responses"][STATE_TABLE]
        moved = [i for i in found if i["event_id"]["S"] == "u0"]
        parsed["Responses"][STATE_TABLE] = [i for i in found if i["event_id"]["S"] != "u0"]
        parsed["UnprocessedKeys"] = {
            STATE_TABLE: {"Keys": [{"event_id": i["event_id"]} for i in moved]}
        }

    aws.dynamodb.meta.events.register("after-call.dynamodb.TransactWriteItems", strip_items)
    aws.dynamodb.meta.events.register("after-call.dynamodb.BatchGetItem", unprocess_first)
    response = run(aws, *records)
    assert failures(response) == {records[0]["messageId"]}


def test_unexpected_error_fails_unfinished_records_without_escaping(aws: Aws) -> None:
    def bug(**_: Any) -> None:
        raise RuntimeError("a bug, not an AWS error")

    aws.sns.meta.events.register("before-call.sns.PublishBatch", bug)
    poison, good = record("nope"), record(order_body("b1"))
    response = run(aws, poison, good)
    assert failures(response) == {poison["messageId"], good["messageId"]}
    assert aws.claims()[0]["status"]["S"] == env.STATUS_PENDING  # redelivery republishes


def test_partial_quarantine_failure_reports_only_that_record_failed(aws: Aws) -> None:
    first, second = record("nope"), record("nope 2")

    def partial(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Successful"] = [e for e in parsed["Successful"] if e["Id"] != "q0"]
        parsed["Failed"] = [{"Id": "q0", "Code": "Internal", "SenderFault": False}]

    aws.sqs.meta.events.register("after-call.sqs.SendMessageBatch", partial)
    response = run(aws, first, second)
    assert failures(response) == {first["messageId"]}


def test_service_errors_exhausting_botocore_retries_fail_the_batch_items_only(aws: Aws) -> None:
    aws.fault_rate, aws.ambiguous_share = 1.0, 0.0  # every attempt rejected
    records = [record(order_body(f"x{i}")) for i in range(3)]
    try:
        response = run(aws, *records)
    finally:
        aws.fault_rate = 0.0
    assert failures(response) == {r["messageId"] for r in records}
    assert aws.calls == ["TransactWriteItems"]
    assert aws.attempts == [3]  # botocore's standard mode: 3 attempts, then we stop
    assert aws.order_rows() == []
    response = run(aws, *records)  # the redelivery
    assert response == {"batchItemFailures": []}
    assert_exactly_once(aws, {f"x{i}": f"order-x{i}" for i in range(3)})


def test_timeout_after_commit_is_absorbed_by_the_claim(aws: Aws) -> None:
    """moto applies the transaction but the client sees 5xx on every attempt: botocore's
    retries meet the claim the first attempt wrote, and the records are failed for now."""
    aws.fault_rate, aws.ambiguous_share = 1.0, 1.0
    records = [record(order_body(f"t{i}")) for i in range(2)]
    try:
        response = run(aws, *records)
    finally:
        aws.fault_rate = 0.0
    assert failures(response) == {r["messageId"] for r in records}
    assert {c["status"]["S"] for c in aws.claims()} == {env.STATUS_PENDING}
    assert run(aws, *records) == {"batchItemFailures": []}
    assert aws.calls == [
        "TransactWriteItems",
        "BatchGetItem",  # the receipt its claim names: absent
        "PublishBatch",
        "BatchExecuteStatement",  # the claim marked sent
    ]
    assert_exactly_once(aws, {"t0": "order-t0", "t1": "order-t1"})


def test_a_write_dynamodb_rejects_is_quarantined_and_its_neighbours_still_commit(
    aws: Aws,
) -> None:
    def writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
        key = {"N": "1"} if message.get("bad") else {"S": ctx.event_id}  # table key is S
        return [{"Put": {"TableName": BUSINESS_TABLE, "Item": {ORDER_KEY: key}}}]

    consumer = Consumer(writes=writes)
    bad = record(json.dumps({"event_id": "v1", "bad": True}))
    good = record(json.dumps({"event_id": "v2"}))
    response = run(aws, bad, good, consumer=consumer)
    assert response == {"batchItemFailures": []}
    # whole-batch ValidationException -> one transaction per record -> the bad one is poison
    assert aws.calls == ["TransactWriteItems"] * 3 + ["SendMessageBatch"]
    assert dlq_by_original(aws)[bad["messageId"]]["failure_kind"] == "schema"
    assert {r[ORDER_KEY]["S"] for r in aws.order_rows()} == {"v2"}
    assert {c["event_id"]["S"] for c in aws.claims()} == {"v2"}


def test_consumer_rejects_a_namespace_that_would_break_the_sort_key() -> None:
    with pytest.raises(ValueError, match="namespace"):
        Consumer(writes=order_writes, namespace="a#b")
