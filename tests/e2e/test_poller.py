"""The event-source-mapping poller behaves as Lambda's does for SQS."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from moto.core.utils import unix_time_millis

from idempotent_messaging.local import moto_patches
from idempotent_messaging.local.observe import Observer, queue_counts, scan_all
from idempotent_messaging.local.poller import Poller
from idempotent_messaging.local.registry import FunctionConfig, MappingConfig, Registry
from idempotent_messaging.local.server import start_emulator
from idempotent_messaging.local.session import StackSession
from tests.e2e import probe_handlers

pytestmark = pytest.mark.e2e


@pytest.fixture
def probe() -> Iterator[tuple[StackSession, str, str]]:
    """A bare emulator with a test queue (maxReceiveCount 2) for the probe handlers;
    yields (session, url, arn)."""
    emulator = start_emulator()
    session = StackSession(
        Registry(region=emulator.region),
        emulator.endpoint_url,
        emulator,
    )
    sqs = session.client("sqs")
    dlq = sqs.create_queue(QueueName="probe-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    url = sqs.create_queue(
        QueueName="probe",
        Attributes={
            "VisibilityTimeout": "60",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2}),
        },
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    probe_handlers.SEEN.clear()
    try:
        yield session, url, arn
    finally:
        probe_handlers.SEEN.clear()
        session.close()


def _register(
    session: StackSession, queue_arn: str, handler: str, *, timeout: int = 7, **mapping: Any
) -> MappingConfig:
    fn = FunctionConfig(
        name=f"probe-{handler}",
        arn=f"arn:aws:lambda:{session.region}:123456789012:function:probe-{handler}",
        handler=f"tests.e2e.probe_handlers.{handler}",
        runtime="python3.12",
        timeout_s=timeout,
        memory_mb=512,
        environment={"PROBE_SETTING": handler},
    )
    session.registry.functions[fn.name] = fn
    config = MappingConfig(
        uuid=f"uuid-{handler}",
        function_name=fn.name,
        event_source_arn=queue_arn,
        batch_size=mapping.get("batch_size", 10),
        maximum_batching_window_s=mapping.get("window", 0),
        function_response_types=mapping.get("types", ["ReportBatchItemFailures"]),
        maximum_concurrency=mapping.get("concurrency"),
    )
    return config


def test_records_have_the_exact_lambda_sqs_event_shape_and_context(
    probe: tuple[StackSession, str, str],
) -> None:
    session, url, arn = probe
    mapping = _register(session, arn, "record")
    sqs = session.client("sqs")
    body = json.dumps({"n": 1})
    sqs.send_message(
        QueueUrl=url,
        MessageBody=body,
        MessageAttributes={
            "tenant": {"DataType": "String", "StringValue": "t-1"},
            "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    )
    poller = Poller(session.registry, session.endpoint_url, sqs)
    outcome = poller.poll_once(mapping)
    assert outcome is not None and outcome.deleted == 1
    (seen,) = probe_handlers.SEEN
    (record,) = seen["event"]["Records"]
    assert set(record) == {
        "messageId",
        "receiptHandle",
        "body",
        "attributes",
        "messageAttributes",
        "md5OfBody",
        "md5OfMessageAttributes",
        "eventSource",
        "eventSourceARN",
        "awsRegion",
    }
    assert record["body"] == body
    assert record["md5OfBody"] == hashlib.md5(body.encode()).hexdigest()
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == arn
    assert record["awsRegion"] == session.region
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert {"SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} <= set(
        record["attributes"]
    )
    assert record["messageAttributes"]["tenant"] == {
        "stringValue": "t-1",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }
    assert base64.b64decode(record["messageAttributes"]["blob"]["binaryValue"]) == b"\x00\x01"
    # The context honours the configured timeout and memory; env is the function's own.
    assert 6000 < seen["remaining_ms"] <= 7000
    assert seen["memory"] == 512
    assert seen["function_name"] == "probe-record"
    assert seen["env"]["PROBE_SETTING"] == "record"
    assert seen["env"]["AWS_ENDPOINT_URL"] == session.endpoint_url
    assert seen["env"]["AWS_LAMBDA_FUNCTION_TIMEOUT"] == "7"


def test_fifo_records_carry_group_sequence_and_dedup_attributes(mini: StackSession) -> None:
    sqs = mini.client("sqs")
    charges = mini.registry.outputs["charges"]
    sqs.send_message(
        QueueUrl=charges["queue_url"],
        MessageBody=json.dumps({"event_id": "fifo-1", "order_id": "o-fifo-1"}),
        MessageGroupId="tenant-1#2026-06",
        MessageDeduplicationId="dedup-1",
    )
    mapping = next(m for m in mini.registry.mappings if m.logical_name == "charges-esm")
    poller = Poller(mini.registry, mini.endpoint_url, sqs)
    messages = poller.receive_batch(mapping)
    from idempotent_messaging.local.poller import to_lambda_record

    record = to_lambda_record(messages[0], mapping.event_source_arn, mini.region)
    assert record["attributes"]["MessageGroupId"] == "tenant-1#2026-06"
    assert record["attributes"]["MessageDeduplicationId"] == "dedup-1"
    assert record["attributes"]["SequenceNumber"].isdigit()


def test_only_reported_failures_stay_and_return_until_sqs_dead_letters_them(
    probe: tuple[StackSession, str, str],
) -> None:
    session, url, arn = probe
    mapping = _register(session, arn, "record")
    sqs = session.client("sqs")
    for i in range(4):
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": i, "fail": i == 2}))
    poller = Poller(session.registry, session.endpoint_url, sqs, release_failed=True)
    first = poller.poll_once(mapping)
    assert first is not None and (first.records, first.deleted, len(first.failed_ids)) == (4, 3, 1)
    poller.drain([mapping], timeout_s=20)
    # maxReceiveCount 2: the failing message was delivered twice, then SQS moved it.
    deliveries = [
        r
        for seen in probe_handlers.SEEN
        for r in seen["event"]["Records"]
        if '"fail": true' in r["body"]
    ]
    assert [r["attributes"]["ApproximateReceiveCount"] for r in deliveries] == ["1", "2"]
    dlq = url.replace("/probe", "/probe-dlq")
    assert queue_counts(sqs, dlq)["visible"] == 1
    assert queue_counts(sqs, url) == {"visible": 0, "in_flight": 0, "delayed": 0}


@pytest.mark.parametrize("handler", ["crash", "bad_identifier", "slow"])
def test_a_failed_invocation_keeps_the_whole_batch(
    probe: tuple[StackSession, str, str], handler: str
) -> None:
    """Crash (BaseException), an unknown itemIdentifier, or running past the timeout."""
    session, url, arn = probe
    mapping = _register(session, arn, handler, timeout=1)
    sqs = session.client("sqs")
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": i}))
    poller = Poller(session.registry, session.endpoint_url, sqs)
    outcome = poller.poll_once(mapping)
    assert outcome is not None
    assert outcome.whole_batch_failed
    assert outcome.deleted == 0 and len(outcome.failed_ids) == 3
    # Nothing was released early: the batch waits out its visibility timeout, as in Lambda.
    assert queue_counts(sqs, url)["in_flight"] == 3


def test_batch_size_above_ten_is_assembled_within_the_batching_window(
    probe: tuple[StackSession, str, str],
) -> None:
    session, url, arn = probe
    mapping = _register(session, arn, "record", batch_size=25, window=1)
    sqs = session.client("sqs")
    for start in range(0, 30, 10):
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "MessageBody": json.dumps({"n": start + i})} for i in range(10)
            ],
        )
    poller = Poller(session.registry, session.endpoint_url, sqs)
    first = poller.poll_once(mapping)
    second = poller.poll_once(mapping)
    assert first is not None and second is not None
    assert (first.records, second.records) == (25, 5)
    assert poller.stats[mapping.uuid].polls >= 3  # <= 10 per ReceiveMessage


def test_short_scenario_duplicates_and_poison_keep_the_invariants(mini: StackSession) -> None:
    """Duplicate sends + re-sends give one row per event and >= 1 notification; poison is
    dead-lettered by SQS after maxReceiveCount 3 and nothing else is lost."""
    sqs, sns, ddb = mini.client("sqs"), mini.client("sns"), mini.client("dynamodb")
    orders = mini.registry.outputs["orders"]
    observer = Observer.subscribe(sqs, sns, orders["topic_arn"], "observer")
    bodies = [json.dumps({"event_id": f"e{i}", "order_id": f"o{i}"}) for i in range(5)]
    bodies += [bodies[0], bodies[0], bodies[3]]  # duplicate sends of one event id, a re-send
    bodies += ["not json", json.dumps({"event_id": "p1", "order_id": "p1", "kind": "poison"})]
    for body in bodies:
        sqs.send_message(QueueUrl=orders["queue_url"], MessageBody=body)
    poller = Poller(mini.registry, mini.endpoint_url, sqs, release_failed=True)
    poller.drain(timeout_s=30)
    rows = scan_all(ddb, orders["business_table_name"])
    assert sorted(r["order_id"]["S"] for r in rows) == [f"o{i}" for i in range(5)]
    notifications = observer.by_key("event_id")
    assert all(notifications[f"e{i}"] >= 1 for i in range(5))
    assert queue_counts(sqs, orders["dlq_url"])["visible"] == 2
    assert queue_counts(sqs, orders["queue_url"]) == {"visible": 0, "in_flight": 0, "delayed": 0}


# --- concurrency and the visibility clock -------------------------------------------------------


def test_a_mapping_runs_up_to_its_maximum_concurrency_at_once(
    probe: tuple[StackSession, str, str],
) -> None:
    """ScalingConfig.MaximumConcurrency 3: three batches are invoked at the same time (each
    invocation waits at a barrier until all three run; serialised invocations would break it)."""
    session, url, arn = probe
    mapping = _register(session, arn, "meet", batch_size=1, concurrency=3)
    probe_handlers.BARRIERS["meet"] = threading.Barrier(3, timeout=20)
    sqs = session.client("sqs")
    try:
        for i in range(3):
            sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": i}))
        poller = Poller(session.registry, session.endpoint_url, sqs, release_failed=True)
        assert poller.concurrency_of(mapping) == 3
        assert poller.drain([mapping], timeout_s=30) == 3
    finally:
        probe_handlers.BARRIERS.pop("meet", None)
    stats = poller.stats[mapping.uuid]
    assert (stats.invocations, stats.invocation_errors, stats.peak_concurrency) == (3, 0, 3)
    assert queue_counts(sqs, url) == {"visible": 0, "in_flight": 0, "delayed": 0}


def test_a_mapping_without_maximum_concurrency_runs_five_like_lambda_starts() -> None:
    """Lambda "starts processing five batches at a time with five concurrent invocations";
    MaximumConcurrency caps it; a poller-wide cap caps both."""
    registry = Registry(region="ap-northeast-1")
    plain = MappingConfig("u1", "f", "arn:aws:sqs:ap-northeast-1:123456789012:q", 10, 0, [])
    capped = MappingConfig(
        "u2", "f", "arn:aws:sqs:ap-northeast-1:123456789012:q", 10, 0, [], maximum_concurrency=40
    )
    poller = Poller(registry, "http://127.0.0.1:9", sqs=None)
    assert (poller.concurrency_of(plain), poller.concurrency_of(capped)) == (5, 40)
    poller.concurrency = 8
    assert (poller.concurrency_of(plain), poller.concurrency_of(capped)) == (5, 8)


@pytest.fixture
def queue_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The emulator's SQS clock, moved forward by the test (offset in ms, list for mutation)."""
    offset = [0.0]
    monkeypatch.setattr(moto_patches, "unix_time_millis", lambda: unix_time_millis() + offset[0])
    moto_patches.set_visibility_scale(0.01)
    yield offset
    moto_patches.set_visibility_scale(1)


def test_a_failed_record_returns_after_the_visibility_timeout_on_the_accelerated_clock(
    probe: tuple[StackSession, str, str], queue_clock: list[float]
) -> None:
    """Lambda leaves a failed record to SQS: it is received again once the queue's visibility
    timeout (60 s here) has passed, here on a clock 100 times faster (0.6 s)."""
    session, url, arn = probe
    mapping = _register(session, arn, "fail_first")
    sqs = session.client("sqs")
    sqs.send_message(QueueUrl=url, MessageBody="{}")
    poller = Poller(session.registry, session.endpoint_url, sqs)
    first = poller.poll_once(mapping)
    assert first is not None and len(first.failed_ids) == 1
    queue_clock[0] += 500  # 0.5 s of queue time: 50 s of SQS's
    assert poller.poll_once(mapping) is None
    queue_clock[0] += 200
    again = poller.poll_once(mapping)
    assert again is not None and again.deleted == 1
    records = [r for seen in probe_handlers.SEEN for r in seen["event"]["Records"]]
    assert [r["attributes"]["ApproximateReceiveCount"] for r in records] == ["1", "2"]


def test_drain_waits_for_failed_records_to_come_back_and_be_processed(
    probe: tuple[StackSession, str, str],
) -> None:
    """On the accelerated clock a drain is not done while a failed record is in flight: it
    ends once the record came back and was processed."""
    session, url, arn = probe
    mapping = _register(session, arn, "fail_first")
    sqs = session.client("sqs")
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": i}))
    moto_patches.set_visibility_scale(0.005)  # 60 s -> 0.3 s
    try:
        poller = Poller(session.registry, session.endpoint_url, sqs)
        poller.drain([mapping], timeout_s=30)
    finally:
        moto_patches.set_visibility_scale(1)
    counts = [
        r["attributes"]["ApproximateReceiveCount"]
        for s in probe_handlers.SEEN
        for r in s["event"]["Records"]
    ]
    assert sorted(counts) == ["1", "1", "1", "2", "2", "2"]
    assert queue_counts(sqs, url) == {"visible": 0, "in_flight": 0, "delayed": 0}
