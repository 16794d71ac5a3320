"""Issue 27: a re-sent event id with different content is a conflict, never a silent duplicate.

AWS facts:
* SQS delivers at least once and a producer re-send is a new message (new messageId): two
  copies of one event share the producer's event id, and SHOULD share its content.
* The claim is one conditional write (a claim item, or the business item carrying its claim);
  a later copy is refused by it, and its existing claim comes back with the refusal or from
  the duplicates' one consistent BatchGetItem. The claim keeps a fingerprint of the first
  copy's content IN that write, so the verdict costs no call: same fingerprint -> duplicate as
  before; another -> ``conflicting_duplicate``: the first effect stands, the copy goes to the
  DLQ naming the event id and both message ids, and the EMF count ``conflicting_duplicate``
  counts it.
* Write units are billed per started KB of the item (1 KB = 1 write unit): the fingerprint
  (about 45 bytes with its name) keeps the bench's items under 1 KB.

Before this change, every test below marked "fails on the old code" saw the second copy
acknowledged and dropped (``batchItemFailures == []``, nothing in the DLQ).
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import pytest

from bench.usage import WRITE_UNIT_BYTES, item_size, write_units
from bench.workload import order_messages
from idempotent_messaging.runtime import (
    EventIdFromContentHash,
    Fingerprint,
    env,
    lambda_handler,
)
from tests.integration.test_runtime_audit2_world import attributes_of, entry_point
from tests.integration.test_runtime_world import (
    HANDLER_PLACEMENTS,
    STATE_TABLE,
    Aws,
    FakeContext,
    invoke_handler,
    order_body,
    orders_handler,
    record,
    records_of,
    separate_claim_orders,
    single_item_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration


def _business_rows(world: Aws) -> list[dict[str, Any]]:
    return [r for r in world.order_rows() if "source_event_id" in r]


def _metric_counts(stdout: str) -> dict[str, float]:
    """The EMF counts flushed by lambda_handler, summed by metric name."""
    counts: dict[str, float] = {}
    for line in stdout.splitlines():
        if '"_aws"' not in line:
            continue
        doc = json.loads(line)
        for directive in doc["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                value = doc[metric["Name"]]
                total = sum(value) if isinstance(value, list) else value
                counts[metric["Name"]] = counts.get(metric["Name"], 0) + total
    return counts


# --- the conflict, for each placement, queue kind and batch shape (fails on the old code) ------
@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@pytest.mark.parametrize("placement", sorted(HANDLER_PLACEMENTS))
@pytest.mark.parametrize("together", [False, True], ids=["separate-batches", "one-batch"])
def test_a_resent_event_id_with_other_content_is_a_conflict_in_the_dlq(
    aws: Aws,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    placement: str,
    fifo: bool,
    together: bool,
) -> None:
    aws.claims_in_items = placement == "in-item"
    extra = {env.SOURCE_QUEUE_FIFO: "true"} if fifo else {}
    first, again = records_of(
        [order_body("evt-1", order_id="o-1"), order_body("evt-1", order_id="o-2", amount=9)],
        fifo,
    )
    with entry_point(aws, monkeypatch, **extra):
        handler = HANDLER_PLACEMENTS[placement]()
        if together:
            assert invoke_handler(handler, first, again) == {"batchItemFailures": []}
            before = None
        else:
            assert invoke_handler(handler, first) == {"batchItemFailures": []}
            before = (_business_rows(aws), aws.claims())
            capsys.readouterr()
            assert invoke_handler(handler, again) == {"batchItemFailures": []}
    # The first effect stands, untouched.
    rows = _business_rows(aws)
    assert len(rows) == 1
    assert rows[0]["order_id"] == {"S": "o-1"}
    if before is not None:
        assert (rows, aws.claims()) == before
    assert [n["event_id"] for n in aws.notifications()] == ["evt-1"]
    # The copy is in the DLQ under its own kind, naming the event and both message ids.
    (copy,) = aws.dlq_messages()
    attributes = attributes_of(copy)
    assert attributes["failure_kind"] == "conflicting_duplicate"
    assert attributes["original_message_id"] == again["messageId"]
    assert attributes["event_id"] == "evt-1"
    reason = attributes["failure_reason"]
    assert first["messageId"] in reason and again["messageId"] in reason and "evt-1" in reason
    assert "o-2" not in reason and "o-1" not in reason  # never a value
    assert copy["Body"] == again["body"]
    # ...and counted.
    assert _metric_counts(capsys.readouterr().out).get("conflicting_duplicate") == 1


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@pytest.mark.parametrize("placement", sorted(HANDLER_PLACEMENTS))
def test_the_same_content_reserialised_stays_a_plain_duplicate(
    aws: Aws,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    placement: str,
    fifo: bool,
) -> None:
    """Key order, whitespace and number spelling (1200 / 1200.0) are not content."""
    aws.claims_in_items = placement == "in-item"
    extra = {env.SOURCE_QUEUE_FIFO: "true"} if fifo else {}
    body = order_body("evt-1", order_id="o-1")
    decoded = json.loads(body)
    decoded["order"]["amount"] = 1200.0
    reserialised = json.dumps(dict(reversed(list(decoded.items()))), indent=2)
    with entry_point(aws, monkeypatch, **extra):
        handler = HANDLER_PLACEMENTS[placement]()
        assert invoke_handler(handler, *records_of([body], fifo)) == {"batchItemFailures": []}
        assert invoke_handler(handler, *records_of([reserialised], fifo)) == {
            "batchItemFailures": []
        }
    assert aws.dlq_messages() == []
    assert len(_business_rows(aws)) == 1
    counts = _metric_counts(capsys.readouterr().out)
    assert counts.get("duplicate_skipped") == 1 and "conflicting_duplicate" not in counts


@pytest.mark.parametrize("placement", sorted(HANDLER_PLACEMENTS))
def test_a_claim_written_before_fingerprints_keeps_todays_duplicate_behaviour(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, placement: str
) -> None:
    aws.claims_in_items = placement == "in-item"
    with entry_point(aws, monkeypatch):
        handler = HANDLER_PLACEMENTS[placement]()
        assert invoke_handler(handler, record(order_body("evt-1", order_id="o-1"))) == {
            "batchItemFailures": []
        }
        # Make it an old claim: no fingerprint attribute.
        if placement == "in-item":
            table, attribute = "order_records", env.ITEM_CLAIM_FINGERPRINT
            (row,) = aws.order_rows()
            key = {"event_id": row["event_id"]}
        else:
            table, attribute = STATE_TABLE, env.STATE_CLAIM_FINGERPRINT
            (claim,) = aws.claims()
            key = {env.EVENT_ID_KEY: claim[env.EVENT_ID_KEY]}
        aws.dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="REMOVE #f",
            ExpressionAttributeNames={"#f": attribute},
        )
        other = record(order_body("evt-1", order_id="o-2"))
        assert invoke_handler(handler, other) == {"batchItemFailures": []}
    assert aws.dlq_messages() == []
    assert [r["order_id"] for r in _business_rows(aws)] == [{"S": "o-1"}]


def test_both_placements_keep_the_fingerprint_in_the_claim_write(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    with entry_point(aws, monkeypatch):
        lambda_handler(separate_claim_orders())(sqs_event(record(order_body("s-1"))), None)
        (claim,) = aws.claims()
        assert re.fullmatch(r"[\w-]{4}:[\w-]{22}", claim[env.STATE_CLAIM_FINGERPRINT]["S"])
        orders_handler()(sqs_event(record(order_body("i-1"))), None)
    (row,) = [r for r in aws.order_rows() if env.ITEM_CLAIM_EVENT_ID in r]
    assert re.fullmatch(r"[\w-]{4}:[\w-]{22}", row[env.ITEM_CLAIM_FINGERPRINT]["S"])


def test_content_hash_ids_store_no_fingerprint_and_cannot_conflict(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    consumer = separate_claim_orders(event_id=EventIdFromContentHash())
    with entry_point(aws, monkeypatch):
        handler = lambda_handler(consumer)
        body = order_body("evt-1")
        assert invoke_handler(handler, record(body), record(body)) == {"batchItemFailures": []}
    (claim,) = aws.claims()
    assert env.STATE_CLAIM_FINGERPRINT not in claim
    assert aws.dlq_messages() == []


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_declared_fields_decide_what_a_conflict_is(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Only the declared content counts: a volatile field (``sent_at``) differs in a plain
    duplicate; the declared amount differing is a conflict. Consumer(fingerprint=...) or the
    component's FINGERPRINT_FIELDS (a JSON array of JMESPath expressions)."""
    fields = ("order.order_id", "order.amount")
    if how == "argument":
        consumer = separate_claim_orders(fingerprint=Fingerprint(fields))
        extra: dict[str, str] = {}
    else:
        consumer = separate_claim_orders()
        extra = {env.FINGERPRINT_FIELDS: json.dumps(list(fields))}
    with entry_point(aws, monkeypatch, **extra):
        handler = lambda_handler(consumer)
        first = record(order_body("evt-1", order_id="o-1", sent_at="t1"))
        volatile = record(order_body("evt-1", order_id="o-1", sent_at="t2"))
        changed = record(order_body("evt-1", order_id="o-1", sent_at="t1", amount=5))
        assert invoke_handler(handler, first) == {"batchItemFailures": []}
        assert invoke_handler(handler, volatile, changed) == {"batchItemFailures": []}
    (copy,) = aws.dlq_messages()
    assert attributes_of(copy)["original_message_id"] == changed["messageId"]
    assert attributes_of(copy)["failure_kind"] == "conflicting_duplicate"


def test_an_unreadable_fingerprint_variable_is_a_configuration_error(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    with entry_point(aws, monkeypatch, **{env.FINGERPRINT_FIELDS: "order.amount"}):
        rec = record(order_body("evt-1"))
        failures = lambda_handler(separate_claim_orders())(sqs_event(rec), FakeContext())
    assert failures == {"batchItemFailures": [{"itemIdentifier": rec["messageId"]}]}
    assert aws.order_rows() == []


# --- cost: the fingerprint rides in the claim's write, under 1 KB ------------------------------
def _written_items(params: dict[str, Any]) -> list[dict[str, Any]]:
    items = [a["Put"]["Item"] for a in params.get("TransactItems", []) if "Put" in a]
    for statement in params.get("Statements", []):
        text = statement["Statement"]
        if text.startswith("INSERT"):
            names = [n.replace("''", "'") for n in re.findall(r"'((?:[^']|'')*)': \?", text)]
            items.append(dict(zip(names, statement["Parameters"], strict=True)))
    return items


@pytest.mark.parametrize("placement", ["in-item", "state-table"])
def test_the_fingerprint_adds_no_write_unit_for_the_bench_items(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, placement: str
) -> None:
    """Billed as bench/usage.py bills them: 1 write unit per started KB of the item written,
    fingerprint attribute included."""
    written: list[dict[str, Any]] = []
    aws.claims_in_items = placement == "in-item"
    with entry_point(aws, monkeypatch):
        from idempotent_messaging.runtime.clients import clients_from_env

        clients_from_env().dynamodb.meta.events.register(
            "before-parameter-build.dynamodb.*",
            lambda params, **_: written.extend(_written_items(params)),
        )
        consumer = single_item_orders() if placement == "in-item" else separate_claim_orders()
        messages = order_messages(10)
        rec = [record(m.body) for m in messages]
        assert lambda_handler(consumer)(sqs_event(*rec), FakeContext()) == {"batchItemFailures": []}
    fingerprint = env.ITEM_CLAIM_FINGERPRINT if placement == "in-item" else "fingerprint"
    claims = [i for i in written if fingerprint in i]
    assert len(claims) == 10
    for item in claims:
        assert item_size(item) <= WRITE_UNIT_BYTES
        assert write_units(item_size(item)) == 1.0


# --- operations: the DLQ inspection explains a conflict copy -----------------------------------
@pytest.mark.parametrize("placement", sorted(HANDLER_PLACEMENTS))
def test_ops_peek_and_explain_name_the_conflict(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, placement: str
) -> None:
    from idempotent_messaging.ops import dlq

    aws.claims_in_items = placement == "in-item"
    first = record(order_body("evt-1", order_id="o-1"))
    again = record(order_body("evt-1", order_id="o-2"))
    with entry_point(aws, monkeypatch):
        handler = HANDLER_PLACEMENTS[placement]()
        assert invoke_handler(handler, first) == {"batchItemFailures": []}
        assert invoke_handler(handler, again) == {"batchItemFailures": []}
    expected = (
        f"conflict: event id evt-1 first applied by message {first['messageId']}; "
        f"this copy {again['messageId']} differs; the first effect stands"
    )
    (peeked,) = dlq.peek(aws.sqs, aws.dlq_url)
    assert peeked.to_json(include_body=False)["conflict"] == expected
    table = "order_records" if placement == "in-item" else STATE_TABLE
    consumer = "handlers.orders:ORDERS" if placement == "in-item" else None
    loaded = dlq.load_consumer(consumer) if consumer else None
    options: dict[str, Any] = {"consumer": loaded}
    if "state_table" in inspect.signature(dlq.explain).parameters:  # issue 26's receipts
        options["state_table"] = STATE_TABLE
    (explained,) = dlq.explain(aws.sqs, aws.dynamodb, aws.dlq_url, table, **options)
    assert explained.advice.startswith(expected)
    assert explained.write_applied is True  # the first copy's effect
