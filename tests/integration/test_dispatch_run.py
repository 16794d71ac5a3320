"""The dispatcher against moto: what it enqueues, its run record, retries, checkpoints, scale."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from typing import Any

import pytest

from idempotent_messaging.dispatch import app
from idempotent_messaging.dispatch import env as denv
from idempotent_messaging.dispatch.dispatcher import RunawayRun
from idempotent_messaging.dispatch.sender import SendFailed
from idempotent_messaging.dispatch.sources import S3ManifestSource
from tests.integration.test_dispatch_world import (
    CONTROL,
    RUNS,
    FakeContext,
    PageBudget,
    RecordingFifoQueue,
    World,
    account,
    accounts,
    lambda_record,
)
from tests.integration.test_dispatch_world import world as world

pytestmark = pytest.mark.integration

SCHEDULED_JUNE = {"trigger": "schedule", "scheduled_time": "2026-05-31T18:00:00Z"}  # 03:00 JST


def keys_of(messages: list[dict[str, Any]]) -> list[str]:
    return [json.loads(m["Body"])["idempotency_key"] for m in messages]


def n(item: dict[str, Any], name: str) -> int:
    return int(item[name]["N"])


def test_one_charge_per_active_account_with_tenant_month_group_and_hashed_dedup_id(
    world: World,
) -> None:
    world.seed([*accounts(3, 20), account("t000", "gone", active=False)])
    result = world.dispatch(SCHEDULED_JUNE)
    messages = world.take_work()
    keys = keys_of(messages)
    assert sorted(keys) == sorted(f"t{t:03d}:e{e:05d}:2026-06" for t in range(3) for e in range(20))
    for message in messages:
        body = json.loads(message["Body"])
        key = body["idempotency_key"]
        assert body["event_id"] == key
        assert message["Attributes"]["MessageGroupId"] == f"{body['tenant_id']}#2026-06"
        dedup = message["Attributes"]["MessageDeduplicationId"]
        assert dedup == hashlib.sha256(key.encode()).hexdigest() and len(dedup) <= 128
        assert body["amount"] == 1000 + int(body["employee_id"][1:])
    record = world.run_record("2026-06")
    assert record["status"]["S"] == "finished" and result["run_finished"] is True
    assert record["trigger"]["S"] == "schedule"
    assert record["scheduled_time"]["S"] == SCHEDULED_JUNE["scheduled_time"]
    assert n(record, "items_enqueued") == 60 and n(record, "invocations") == 1
    assert "started_at" in record and "finished_at" in record


def test_tokyo_0030_on_the_first_bills_the_new_month_although_utc_is_the_previous_day(
    world: World,
) -> None:
    world.seed([account("acme", "alice")])
    # 2026-05-31T15:30Z is 2026-06-01 00:30 in Tokyo.
    world.dispatch({"trigger": "schedule", "scheduled_time": "2026-05-31T15:30:00Z"})
    assert keys_of(world.take_work()) == ["acme:alice:2026-06"]
    assert world.run_record("2026-06")["status"]["S"] == "finished"


def test_double_fire_and_late_retry_after_completion_enqueue_nothing_and_are_recorded(
    world: World,
) -> None:
    world.seed(accounts(2, 5))
    world.dispatch(SCHEDULED_JUNE)
    first = world.take_work()
    second = world.dispatch(SCHEDULED_JUNE)  # the schedule fired twice
    late = world.dispatch(SCHEDULED_JUNE)  # Scheduler's retry, an hour later
    assert len(first) == 10
    assert world.take_work() == []
    assert second["enqueued"] == 0 and late["enqueued"] == 0
    record = world.run_record("2026-06")
    assert n(record, "schedule_fires") == 3 and n(record, "invocations") == 3
    assert n(record, "items_enqueued") == 10 and n(record, "generation") == 1


def test_concurrent_double_fire_counts_every_page_once(world: World) -> None:
    world.seed(accounts(4, 25))
    results: list[Any] = []

    def fire() -> None:
        results.append(world.dispatch(SCHEDULED_JUNE))

    threads = [threading.Thread(target=fire) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    keys = keys_of(world.take_work())
    assert len(results) == 2
    assert set(keys) == {f"t{t:03d}:e{e:05d}:2026-06" for t in range(4) for e in range(25)}
    record = world.run_record("2026-06")
    assert record["status"]["S"] == "finished"
    assert n(record, "items_enqueued") == 100  # compare-and-swap checkpoints: no double count


def test_manual_rerun_of_a_finished_month_starts_a_new_generation_and_resends_all(
    world: World,
) -> None:
    world.seed(accounts(1, 7))
    world.dispatch(SCHEDULED_JUNE)
    world.take_work()
    result = world.dispatch({"month": "2026-06"})
    assert result["generation"] == 2 and result["enqueued"] == 7
    assert len(world.take_work()) == 7  # the consumer turns these into duplicate skips
    record = world.run_record("2026-06")
    assert record["trigger"]["S"] == "manual" and n(record, "manual_runs") == 1
    previous = record["previous"]["L"][0]["M"]
    assert previous["generation"]["N"] == "1" and previous["items_enqueued"]["N"] == "7"


def test_invalid_manual_month_is_refused_naming_the_value(world: World) -> None:
    with pytest.raises(ValueError, match=r"month='2026-13'"):
        world.dispatch({"month": "2026-13"})
    with pytest.raises(ValueError, match="unknown payload keys"):
        world.dispatch({"months": "2026-06"})


def test_items_that_cannot_be_charged_are_counted_and_never_enqueued(world: World) -> None:
    bad_amount = account("acme", "bob")
    bad_amount["amount"] = {"N": "12.5"}
    world.seed([account("acme", "alice"), bad_amount, account("ac:me", "carol")])
    world.dispatch(SCHEDULED_JUNE)
    assert keys_of(world.take_work()) == ["acme:alice:2026-06"]
    record = world.run_record("2026-06")
    assert n(record, "items_rejected") == 2 and n(record, "items_enqueued") == 1


class EntryFailures:
    """Makes SQS answer SendMessageBatch with some entries under ``Failed`` (as AWS does on
    internal errors): those entries are removed from the request before it reaches moto, so
    they are truly not enqueued, and are reported failed in the response."""

    def __init__(
        self,
        per_call: int,
        *,
        fail_calls: set[int] | None = None,
        full_batches: int = 0,
        sender_fault: bool = False,
    ) -> None:
        self.per_call = per_call
        self.fail_calls = fail_calls or set()  # 0-based numbers of the calls to hit
        self.full_batches = full_batches  # or: hit this many calls carrying 10 entries
        self.sender_fault = sender_fault
        self.calls: list[int] = []  # entries per call (reaching SQS + failed)
        self._lock = threading.Lock()

    def install(self, client: Any) -> None:
        client.meta.events.register("before-parameter-build.sqs.SendMessageBatch", self._before)
        client.meta.events.register("after-call.sqs.SendMessageBatch", self._after)

    def _before(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        with self._lock:
            number = len(self.calls)
            self.calls.append(len(params["Entries"]))
            hit = number in self.fail_calls
            if not hit and self.full_batches and len(params["Entries"]) == 10:
                self.full_batches -= 1
                hit = True
        if hit:
            context["dropped"] = params["Entries"][: self.per_call]
            params["Entries"] = params["Entries"][self.per_call :]

    def _after(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        for entry in context.get("dropped", []):
            parsed.setdefault("Failed", []).append(
                {
                    "Id": entry["Id"],
                    "SenderFault": self.sender_fault,
                    "Code": "InvalidParameterValue" if self.sender_fault else "InternalError",
                    "Message": "injected",
                }
            )


def _inject(monkeypatch: pytest.MonkeyPatch, failures: EntryFailures) -> None:
    real = app._client

    def client(service: str, settings: Any) -> Any:
        made = real(service, settings)
        if service == "sqs":
            failures.install(made)
        return made

    monkeypatch.setattr(app, "_client", client)


def test_failed_batch_entries_are_retried_alone_until_every_charge_is_enqueued_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.seed(accounts(1, 50))  # 5 batches of 10
    world.dispatcher_env(**{denv.SCAN_SEGMENTS: "1"})
    failures = EntryFailures(3, full_batches=5)
    _inject(monkeypatch, failures)
    world.dispatch(SCHEDULED_JUNE)
    keys = keys_of(world.take_work())
    assert Counter(keys) == Counter({f"t000:e{e:05d}:2026-06": 1 for e in range(50)})
    # 5 first calls of 10 entries (3 dropped each) and 5 retries carrying only the failed 3s.
    # Batches are sent in parallel, so a retry may overtake another batch's first call: the
    # multiset is the claim, not the order.
    assert sorted(failures.calls) == [3] * 5 + [10] * 5
    assert n(world.run_record("2026-06"), "items_enqueued") == 50


def test_sender_faults_fail_the_run_visibly_and_a_retry_resumes_from_the_checkpoint(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.seed(accounts(1, 30))
    world.dispatcher_env(**{denv.SCAN_SEGMENTS: "1", denv.SCAN_PAGE_SIZE: "10"})
    # The first call (page 1) succeeds, the second (page 2) has an entry refused.
    failures = EntryFailures(1, fail_calls={1}, sender_fault=True)
    _inject(monkeypatch, failures)
    with pytest.raises(SendFailed, match="as invalid"):
        world.dispatch(SCHEDULED_JUNE)
    record = world.run_record("2026-06")
    assert record["status"]["S"] == "running"
    assert "SendFailed" in record["last_error"]["S"]
    assert n(record, "items_enqueued") == 10  # page 1 checkpointed, page 2 not
    monkeypatch.undo()
    world.dispatcher_env(**{denv.SCAN_SEGMENTS: "1", denv.SCAN_PAGE_SIZE: "10"})
    world.consumer_env()
    world.dispatch(SCHEDULED_JUNE)  # Lambda's async retry of the same event
    keys = keys_of(world.take_work())
    assert set(keys) == {f"t000:e{e:05d}:2026-06" for e in range(30)}
    record = world.run_record("2026-06")
    assert record["status"]["S"] == "finished" and n(record, "items_enqueued") == 30


def test_low_time_checkpoints_and_continues_in_fresh_invocations_until_done(
    world: World,
) -> None:
    world.seed(accounts(4, 40))  # 160 items, 4 segments, pages of 10
    world.dispatcher_env(**{denv.SCAN_PAGE_SIZE: "10"})
    first = world.dispatch(SCHEDULED_JUNE, remaining=PageBudget(3))
    assert first["handed_off"], "the short budget must hand segments off"
    assert first["run_finished"] is False
    record = world.run_record("2026-06")
    assert record["status"]["S"] == "running"
    assert world.queue_depth(world.control_url) == len(first["handed_off"])
    # Every continuation invocation also gets a short budget: several hops per segment.
    invocations = 0
    while world.queue_depth(world.control_url):
        invocations += _one(world)
    keys = keys_of(world.take_work())
    assert len(set(keys)) == 160
    record = world.run_record("2026-06")
    assert record["status"]["S"] == "finished"
    assert n(record, "items_enqueued") == 160
    assert n(record, "invocations") == 1 + invocations
    hops = [int(s["M"]["hops"]["N"]) for s in record["segments"]["M"].values()]
    assert max(hops) >= 2  # some segment needed more than one continuation


def _one(world: World, checks: int = 2) -> int:
    """Deliver one control message with a budget of ``checks`` page checks."""
    got = world.sqs.receive_message(QueueUrl=world.control_url, MaxNumberOfMessages=1).get(
        "Messages", []
    )
    if not got:
        return 0
    response = app.handler(
        {"Records": [lambda_record(got[0], CONTROL)]}, FakeContext(remaining=PageBudget(checks))
    )
    assert response == {"batchItemFailures": []}
    world.sqs.delete_message(QueueUrl=world.control_url, ReceiptHandle=got[0]["ReceiptHandle"])
    return 1


def test_a_segment_beyond_the_hop_bound_fails_loudly_instead_of_looping(world: World) -> None:
    world.seed(accounts(1, 200))
    world.dispatcher_env(**{denv.SCAN_SEGMENTS: "1", denv.SCAN_PAGE_SIZE: "40", denv.MAX_HOPS: "2"})
    world.dispatch(SCHEDULED_JUNE, remaining=PageBudget(1))
    for _ in range(2):  # hops 1 and 2 are allowed: one page each
        _one(world, checks=1)
    got = world.sqs.receive_message(QueueUrl=world.control_url).get("Messages", [])
    assert json.loads(got[0]["Body"])["hop"] == 3
    event = {"Records": [lambda_record(got[0], CONTROL)]}
    # The invocation fails (Errors alarm); SQS redelivers, then dead-letters (DLQ alarm).
    with pytest.raises(RunawayRun, match="hop 3 > DISPATCH_MAX_HOPS 2"):
        app.handler(event, FakeContext(remaining=PageBudget(2)))
    assert "DISPATCH_MAX_HOPS" in world.run_record("2026-06")["last_error"]["S"]
    with pytest.raises(RunawayRun):  # redelivered, it fails again: not a one-off
        app.handler(event, FakeContext(remaining=PageBudget(2)))


def test_one_failed_continuation_in_a_batch_is_reported_alone(world: World) -> None:
    world.seed(accounts(1, 60))
    world.dispatcher_env(**{denv.SCAN_SEGMENTS: "2", denv.SCAN_PAGE_SIZE: "10"})
    world.dispatch(SCHEDULED_JUNE, remaining=PageBudget(1))
    got = world.sqs.receive_message(QueueUrl=world.control_url).get("Messages", [])
    good = lambda_record(got[0], CONTROL)
    bad = dict(good, messageId="not-a-continuation", body='{"month": "2026-06"}')
    response = app.handler({"Records": [good, bad]}, FakeContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": "not-a-continuation"}]}


def test_a_run_whose_segments_are_all_done_is_finished_by_the_next_trigger(
    world: World,
) -> None:
    world.seed(accounts(1, 5))
    world.dispatch(SCHEDULED_JUNE)
    # Simulate a process death between the last checkpoint and marking the run finished.
    world.dynamodb.update_item(
        TableName=RUNS,
        Key={denv.RUNS_HASH_KEY: {"S": "2026-06"}},
        UpdateExpression="SET #st = :running REMOVE finished_at",
        ExpressionAttributeNames={"#st": "status"},
        ExpressionAttributeValues={":running": {"S": "running"}},
    )
    result = world.dispatch(SCHEDULED_JUNE)  # the late retry
    assert result["run_finished"] is True and result["enqueued"] == 0
    record = world.run_record("2026-06")
    assert record["status"]["S"] == "finished" and "finished_at" in record


def test_a_stale_continuation_of_an_older_generation_does_nothing(world: World) -> None:
    world.seed(accounts(1, 100))
    world.dispatcher_env(**{denv.SCAN_SEGMENTS: "1", denv.SCAN_PAGE_SIZE: "25"})
    world.dispatch(SCHEDULED_JUNE, remaining=PageBudget(1))  # hands off generation 1
    world.dispatch({"month": "2026-06", "restart": True})  # generation 2 runs to the end
    world.take_work()
    got = world.sqs.receive_message(QueueUrl=world.control_url).get("Messages", [])
    assert json.loads(got[0]["Body"])["generation"] == 1
    response = app.handler({"Records": [lambda_record(got[0], CONTROL)]}, FakeContext())
    assert response == {"batchItemFailures": []}
    assert world.take_work() == []
    record = world.run_record("2026-06")
    assert n(record, "generation") == 2 and n(record, "items_enqueued") == 100


def test_thousands_of_items_are_paged_through_one_invocation(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scale in items and pages, not in seconds: the run's speed is measured by `make bench`
    (100,000 items, docs/bench.md), never asserted here (a loaded machine would fail it)."""
    world.seed(accounts(10, 300))
    world.dispatcher_env(**{denv.SCAN_SEGMENTS: "8", denv.SCAN_PAGE_SIZE: "250"})
    queue = RecordingFifoQueue()
    real = app._client
    monkeypatch.setattr(
        app, "_client", lambda service, s: queue if service == "sqs" else real(service, s)
    )
    result = world.dispatch(SCHEDULED_JUNE)
    keys = [json.loads(body)["idempotency_key"] for body in queue.bodies.values()]
    assert len(set(keys)) == 3_000 and queue.duplicates == 0
    assert queue.calls == 300  # 10 entries per SendMessageBatch, no partial batches
    assert result["run_finished"] is True and result["enqueued"] == 3_000
    assert result["pages"] >= 12 and queue.control == []  # paged, no hand-off needed
    assert n(world.run_record("2026-06"), "items_enqueued") == 3_000


# --- the S3 JSONL manifest source -------------------------------------------------------------


def _manifest(world: World, lines: list[str], month: str = "2026-06") -> None:
    world.s3.put_object(
        Bucket="billing-manifests",
        Key=f"billing/{month}.jsonl",
        Body=("\n".join(lines) + "\n").encode(),
    )


@pytest.mark.parametrize("segments", [1, 3, 7])
@pytest.mark.parametrize("chunk", [16, 61, 4096])
def test_manifest_segments_read_every_line_exactly_once(
    world: World, segments: int, chunk: int
) -> None:
    lines = [
        json.dumps(
            {
                "tenant_id": f"t{i % 3}",
                "employee_id": f"e{i}" + "x" * (i % 11),
                "amount": i,
                "currency": "JPY",
            }
        )
        for i in range(40)
    ]
    lines.append(
        json.dumps(
            {
                "tenant_id": "t0",
                "employee_id": "off",
                "amount": 1,
                "currency": "JPY",
                "active": False,
            }
        )
    )
    _manifest(world, lines)
    source = S3ManifestSource(world.s3, "billing-manifests", "billing/{month}.jsonl", chunk)
    seen: list[str] = []
    for segment in range(segments):
        cursor = None
        while True:
            page = source.read_page("2026-06", segment, segments, cursor)
            seen.extend(item.employee_id for item in page.items)
            if page.cursor is None:
                break
            cursor = page.cursor
    assert Counter(seen) == Counter(f"e{i}" + "x" * (i % 11) for i in range(40))


def test_the_dispatcher_reads_a_manifest_when_configured_for_s3(world: World) -> None:
    _manifest(
        world,
        [
            json.dumps(
                {"tenant_id": "acme", "employee_id": f"e{i}", "amount": 5, "currency": "USD"}
            )
            for i in range(25)
        ],
    )
    world.dispatcher_env(
        **{
            denv.ITEM_SOURCE: denv.SOURCE_S3,
            denv.MANIFEST_BUCKET: "billing-manifests",
            denv.MANIFEST_KEY_TEMPLATE: "billing/{month}.jsonl",
        }
    )
    world.dispatch({"month": "2026-06"})
    assert sorted(keys_of(world.take_work())) == sorted(f"acme:e{i}:2026-06" for i in range(25))


def test_a_broken_manifest_line_fails_the_run_naming_its_byte_offset(world: World) -> None:
    _manifest(
        world,
        ['{"tenant_id": "a", "employee_id": "b", "amount": 1, "currency": "JPY"}', "{not json"],
    )
    world.dispatcher_env(
        **{
            denv.ITEM_SOURCE: denv.SOURCE_S3,
            denv.MANIFEST_BUCKET: "billing-manifests",
            denv.MANIFEST_KEY_TEMPLATE: "billing/{month}.jsonl",
            denv.SCAN_SEGMENTS: "1",
        }
    )
    with pytest.raises(Exception, match=r"byte 71: not JSON"):
        world.dispatch({"month": "2026-06"})
    assert "not JSON" in world.run_record("2026-06")["last_error"]["S"]
