"""The ``sent`` marking: one PartiQL BatchExecuteStatement per <= 25 records, 1 write unit each,
per-statement errors handled (the moto gaps it meets: test_runtime_moto_gaps.py).

A fresh claim's publication is recorded by its batch's receipt (test_runtime_receipts.py); the
marking records a REPUBLISHED one (a pending claim its receipt does not list, or a claim
written before receipts), so each test first leaves its claims owed: a first delivery whose
publish fails (the claims pending, their receipt never written)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from idempotent_messaging.runtime import env
from tests.integration.test_runtime_world import (
    STATE_TABLE,
    Aws,
    FakeContext,
    assert_exactly_once,
    order_body,
    record,
    separate_claim_orders,
    sqs_event,
)

pytestmark = pytest.mark.integration

# The runtime's separate-claim path: the orders plug-ins without their single-item declaration.
ORDERS = separate_claim_orders()

# --- the runtime's status write ----------------------------------------------------------


def _run(aws: Aws, *records: dict[str, Any]) -> dict[str, Any]:
    aws.reset_counts()
    return ORDERS.process(sqs_event(*records), FakeContext(), aws.runtime())


def _failures(response: dict[str, Any]) -> set[str]:
    return {f["itemIdentifier"] for f in response["batchItemFailures"]}


def _owe(aws: Aws, *records: dict[str, Any]) -> None:
    """A first delivery that commits and cannot publish: every claim pending, no receipt."""
    runtime = aws.runtime(topic_arn=aws.topic_arn + "-gone")
    response = ORDERS.process(sqs_event(*records), FakeContext(), runtime)
    assert _failures(response) == {r["messageId"] for r in records}


def test_the_sent_marking_is_one_non_transactional_statement_per_record_25_per_call(
    aws: Aws,
) -> None:
    """BatchExecuteStatement takes at most 25 statements; a non-transactional write costs 1
    write unit per KB where a transactional one costs 2 (DynamoDB developer guide, "Capacity
    management for transactions")."""
    sent: list[dict[str, Any]] = []
    records = [record(order_body(f"e{i}")) for i in range(30)]
    _owe(aws, *records)
    aws.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.BatchExecuteStatement",
        lambda params, **_: sent.append(params),
    )
    assert _run(aws, *records) == {"batchItemFailures": []}
    assert [len(call["Statements"]) for call in sent] == [25, 5]
    statements = [s for call in sent for s in call["Statements"]]
    assert all(s["Statement"].startswith(f'UPDATE "{STATE_TABLE}" SET') for s in statements)
    assert aws.calls.count("TransactWriteItems") == 1  # the claims (cancelled: duplicates)
    assert {c["status"]["S"] for c in aws.claims()} == {env.STATUS_SENT}
    assert all("notification_id" in c and "sent_at" in c for c in aws.claims())
    assert_exactly_once(aws, {f"e{i}": f"order-e{i}" for i in range(30)})


def _answer_statements(aws: Aws, codes_per_call: list[dict[int, str]]) -> list[int]:
    """Answer the runtime's BatchExecuteStatement calls: statement i of call n fails with
    ``codes_per_call[n][i]`` (the rest run on moto). Returns the statement count per call."""
    sizes: list[int] = []
    real = aws.dynamodb.batch_execute_statement

    def partial(**kwargs: Any) -> Any:
        call = len(sizes)
        sizes.append(len(kwargs["Statements"]))
        codes = codes_per_call[call] if call < len(codes_per_call) else {}
        keep = [s for i, s in enumerate(kwargs["Statements"]) if i not in codes]
        answers = iter(real(Statements=keep)["Responses"] if keep else [])
        responses = [
            {"Error": {"Code": codes[i], "Message": "injected"}} if i in codes else next(answers)
            for i in range(len(kwargs["Statements"]))
        ]
        return {"Responses": responses}

    aws.dynamodb.batch_execute_statement = partial
    return sizes


def test_a_throttled_statement_is_retried_alone_and_its_neighbours_finish(aws: Aws) -> None:
    """Per-statement errors are not retried by botocore (it retries calls): the runtime
    retries the throttled statement and only it."""
    records = [record(order_body(f"e{i}")) for i in range(3)]
    _owe(aws, *records)
    sizes = _answer_statements(aws, [{1: "ThrottlingError"}])
    assert _run(aws, *records) == {"batchItemFailures": []}
    assert sizes == [3, 1]
    assert {c["status"]["S"] for c in aws.claims()} == {env.STATUS_SENT}


def test_a_statement_that_keeps_failing_fails_its_record_alone_for_redelivery(aws: Aws) -> None:
    """A partial failure leaves that claim ``pending`` (the notification went out): the
    redelivery republishes and marks it; the other records are done."""
    records = [record(order_body(f"e{i}")) for i in range(3)]
    _owe(aws, *records)
    sizes = _answer_statements(
        aws,
        [{0: "ConditionalCheckFailed", 2: "ThrottlingError"}]
        + [{0: "ThrottlingError"}] * 2,  # e2 alone, attempts 2 and 3
    )
    response = _run(aws, *records)
    assert _failures(response) == {records[0]["messageId"], records[2]["messageId"]}
    assert sizes == [3, 1, 1]  # the throttled one: 3 attempts; the vanished claim: none more
    statuses = {c["event_id"]["S"]: c["status"]["S"] for c in aws.claims()}
    assert statuses == {"e0": "pending", "e1": "sent", "e2": "pending"}
    del aws.dynamodb.batch_execute_statement  # the redelivery meets an answering DynamoDB
    assert _run(aws, records[0], records[2]) == {"batchItemFailures": []}
    notes = assert_exactly_once(aws, {f"e{i}": f"order-e{i}" for i in range(3)})
    assert len(notes) == 5  # e0 and e2 republished: at-least-once


def test_a_refused_status_call_fails_every_record_of_it_and_redelivery_completes(
    aws: Aws,
) -> None:
    calls = {"n": 0}

    def refuse_once(**_: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "down"}},
                "BatchExecuteStatement",
            )

    records = [record(order_body(f"e{i}")) for i in range(2)]
    _owe(aws, *records)
    aws.dynamodb.meta.events.register("before-call.dynamodb.BatchExecuteStatement", refuse_once)
    assert _failures(_run(aws, *records)) == {r["messageId"] for r in records}
    assert {c["status"]["S"] for c in aws.claims()} == {env.STATUS_PENDING}
    assert _run(aws, *records) == {"batchItemFailures": []}
    assert {c["status"]["S"] for c in aws.claims()} == {env.STATUS_SENT}
