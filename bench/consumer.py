"""Benchmark 1: the consumer, three implementations side by side on the same messages and the
SAME tables: the source article's state table + ``order_records`` keyed by ``order_id``.

(a) bench/baseline_per_record_transaction.py  the per-record transaction pattern, record by record
(b) bench/baseline_powertools.py  Powertools idempotent_function + BatchProcessor, per record
(c) handlers.orders_by_order.handler  ours (DomainKeyedCreate: batched claim INSERTs into the
                             state table, batched row INSERTs, PublishBatch, one receipt)
(c') handlers.orders.handler  ours on an event-keyed table (the claim in the row: batched
                             INSERTs of the claim-carrying rows, PublishBatch, one receipt); the
                             second scenario, the design the README's tables had before

Each run resets the emulator, creates the run's tables and topic with an uncounted client,
drives the messages through the poller model (bench.workload.deliver) while every AWS call is
counted (bench.counting), then verifies the result with an uncounted client: one business
row per distinct event, at least one accepted notification per event, every claim ``sent``,
nothing dead-lettered or quarantined.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from bench import counting
from bench.baseline_per_record_transaction import PerRecordTransactionSettings
from bench.baseline_per_record_transaction import build_handler as build_per_record_transaction
from bench.baseline_powertools import POWERTOOLS_KEY_ATTR, PowertoolsSettings
from bench.baseline_powertools import build_handler as build_powertools
from bench.usage import aggregate
from bench.workload import (
    ACCOUNT,
    REGION,
    Handler,
    Message,
    batch_profile,
    deliver,
    order_messages,
)

IMPLEMENTATIONS = ("per_record_transaction", "powertools", "ours", "ours_event_keyed")
LABELS = {
    "per_record_transaction": "(a) per-record transaction",
    "powertools": "(b) Powertools textbook",
    "ours": "(c) ours",
    "ours_event_keyed": "(c') ours, event-keyed table",
}
OURS = ("ours", "ours_event_keyed")
"""Ours on the article's tables (the headline) and on an event-keyed table."""
QUEUE_NAME = "orders"
ORDER_TABLE = "order_records"
TOPIC_NAME = "order-notifications"
FUNCTION_TIMEOUT_S = 30.0


@dataclass
class RunResult:
    implementation: str
    messages: int
    distinct_events: int
    duplicate_rate: float
    throttle_rate: float
    seconds: float
    cpu_seconds: float
    log_bytes: int  # what the function wrote to its log (lines and EMF metrics)
    calls: dict[str, int]
    attempts: int
    throttles_injected: int
    invocations: int
    redeliveries: int
    dead_lettered: int
    handler_exceptions: int
    correct: bool
    problems: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)  # bench.usage.aggregate
    batches: dict[str, int] = field(default_factory=dict)  # workload.batch_profile

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def calls_per_message(self) -> float:
        return self.total_calls / self.messages

    def as_dict(self) -> dict[str, Any]:
        return {
            "implementation": self.implementation,
            "messages": self.messages,
            "distinct_events": self.distinct_events,
            "duplicate_rate": self.duplicate_rate,
            "throttle_rate": self.throttle_rate,
            "seconds": round(self.seconds, 4),
            "client_cpu_seconds": round(self.cpu_seconds, 4),
            "log_bytes": self.log_bytes,
            "calls": self.total_calls,
            "calls_per_message": round(self.calls_per_message, 4),
            "calls_by_operation": dict(sorted(self.calls.items())),
            "usage_by_operation": self.usage,
            "http_attempts": self.attempts,
            "throttles_injected": self.throttles_injected,
            "invocations": self.invocations,
            "redeliveries": self.redeliveries,
            "dead_lettered": self.dead_lettered,
            "handler_exceptions": self.handler_exceptions,
            "correct": self.correct,
            "problems": self.problems,
            "batches": self.batches,
        }


def _admin(emulator: Any, service: str) -> Any:
    return counting.exclude(emulator.client(service))


def _create_table(ddb: Any, name: str, key: str) -> None:
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


@dataclass(frozen=True)
class Prepared:
    handler: Handler
    claim_table: str  # where the implementation keeps its claims (one per event)
    claim_key: str
    done_status: str  # the claim's status once the event is fully handled
    status_attribute: str
    dlq_url: str | None = None
    receipts_table: str | None = None  # ours: publication receipts (runtime.claims.Receipts)


def _prepare(implementation: str, emulator: Any) -> Prepared:
    ddb = _admin(emulator, "dynamodb")
    # The article's order_records, keyed by order (ours and the baselines alike); the second
    # scenario keys the row by its event (handlers.orders.ORDER_KEY).
    event_keyed = implementation == "ours_event_keyed"
    _create_table(ddb, ORDER_TABLE, "event_id" if event_keyed else "order_id")
    topic_arn = _admin(emulator, "sns").create_topic(Name=TOPIC_NAME)["TopicArn"]
    if implementation == "per_record_transaction":
        _create_table(ddb, "processed_events", "event_id")
        handler = build_per_record_transaction(PerRecordTransactionSettings(topic_arn=topic_arn))
        return Prepared(handler, "processed_events", "event_id", "sent", "status")
    if implementation == "powertools":
        _create_table(ddb, "idempotency", POWERTOOLS_KEY_ATTR)
        settings = PowertoolsSettings("idempotency", ORDER_TABLE, topic_arn)
        handler = build_powertools(settings)
        return Prepared(handler, "idempotency", POWERTOOLS_KEY_ATTR, "COMPLETED", "status")
    if implementation in OURS:
        return _prepare_ours(emulator, ddb, topic_arn, event_keyed=event_keyed)
    raise ValueError(f"implementation={implementation!r}: expected one of {IMPLEMENTATIONS}")


def _prepare_ours(emulator: Any, ddb: Any, topic_arn: str, *, event_keyed: bool) -> Prepared:
    from idempotent_messaging.runtime import env

    state_table = "orders-state"
    _create_table(ddb, state_table, env.EVENT_ID_KEY)
    dlq_url = _admin(emulator, "sqs").create_queue(QueueName="orders-dlq")["QueueUrl"]
    os.environ.update(
        {
            env.STATE_TABLE: state_table,
            env.STATE_KEY_LAYOUT: env.LAYOUT_EVENT_ID,
            env.BUSINESS_TABLE: ORDER_TABLE,
            env.NOTIFICATION_TOPIC_ARN: topic_arn,
            env.DLQ_URL: dlq_url,
            env.SOURCE_QUEUE_FIFO: "false",
            env.SOURCE_RETENTION_SECONDS: str(4 * 24 * 3600),
            env.DLQ_RETENTION_SECONDS: str(14 * 24 * 3600),
            env.POWERTOOLS_SERVICE_NAME: "orders",
            env.POWERTOOLS_LOG_LEVEL: "INFO",  # the component's default: paid for here too
            env.POWERTOOLS_METRICS_NAMESPACE: "Bench",
        }
    )
    if event_keyed:
        import handlers.orders

        # The orders consumer declares SingleItemEffect: its claim lives in the order row.
        return Prepared(
            handlers.orders.handler,
            ORDER_TABLE,
            "event_id",
            env.STATUS_SENT,
            env.ITEM_CLAIM_STATUS,
            dlq_url,
            state_table,
        )
    import handlers.orders_by_order

    # DomainKeyedCreate: the claim in the state table (the article's processed_events), the
    # row keyed by order_id written after it.
    return Prepared(
        handlers.orders_by_order.handler,
        state_table,
        env.EVENT_ID_KEY,
        env.STATUS_SENT,
        "status",
        dlq_url,
        state_table,
    )


def _receipts(
    ddb: Any, prepared: Prepared, claims: list[dict[str, Any]]
) -> dict[str, frozenset[str]]:
    """Ours: the publication receipts the claims name (runtime.claims.Receipts)."""
    if prepared.receipts_table is None:
        return {}
    from idempotent_messaging.ops.owed import read_receipts, receipt_of

    ids = [r for c in claims if (r := receipt_of(c))]
    return read_receipts(ddb, prepared.receipts_table, ids)


def _status(prepared: Prepared, claim: dict[str, Any], receipts: dict[str, frozenset[str]]) -> str:
    """The claim's status; ours: as the runtime reads it (a pending claim its publication
    receipt lists is sent, ``claims.published_status``)."""
    if prepared.receipts_table is None:
        return str(claim[prepared.status_attribute]["S"])
    from idempotent_messaging.runtime.claims import published_status

    return str(published_status(claim, receipts))


_RUNTIME_LOG = "idempotent_messaging.runtime.observability"


class LogSink(io.TextIOBase):
    """Where the function's output goes during a run: /dev/null, as a Lambda's stdout pipe
    takes it (one write per line, which the function pays for), counting the UTF-8 bytes that
    CloudWatch Logs would ingest."""

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self._target = target
        self.bytes = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.bytes += len(text.encode("utf-8", "surrogateescape"))
        return self._target.write(text)

    def flush(self) -> None:
        self._target.flush()


@contextlib.contextmanager
def _quiet_logs() -> Iterator[LogSink]:
    """Send the function's log lines and EMF metrics (stdout, stderr, the runtime's log
    handler) to /dev/null, counting their bytes; they are still produced."""
    stdout = sys.stdout
    with open(os.devnull, "w") as devnull:
        sink = LogSink(devnull)
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            previous = None
            if _RUNTIME_LOG in sys.modules:
                previous = sys.modules[_RUNTIME_LOG].logger.registered_handler.setStream(sink)
            try:
                yield sink
            finally:
                if _RUNTIME_LOG in sys.modules:
                    # Imported during the run (the baselines build the orders contract's
                    # notification), its handler took the redirected stdout: give it the real one.
                    handler = sys.modules[_RUNTIME_LOG].logger.registered_handler
                    handler.setStream(previous if previous is not None else stdout)


def _scan(ddb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in ddb.get_paginator("scan").paginate(TableName=table):
        items.extend(page["Items"])
    return items


def verify(
    emulator: Any,
    prepared: Prepared,
    messages: list[Message],
    notifications: list[str],
) -> list[str]:
    """What is wrong with the end state (empty: exactly-once rows, at-least-once notices)."""
    ddb = _admin(emulator, "dynamodb")
    problems: list[str] = []
    events = {m.event_id for m in messages}
    rows = _scan(ddb, ORDER_TABLE)
    if len(rows) != len(events):
        problems.append(f"{len(rows)} business rows for {len(events)} distinct events")
    claims = [c for c in _scan(ddb, prepared.claim_table) if prepared.status_attribute in c]
    receipts = _receipts(ddb, prepared, claims)
    not_done = [c for c in claims if _status(prepared, c, receipts) != prepared.done_status]
    if len(claims) != len(events) or not_done:
        problems.append(
            f"{len(claims)} claims in {prepared.claim_table} for {len(events)} events, "
            f"{len(not_done)} not "
            f"{prepared.done_status!r}"
        )
    notified = {e for e in events if any(e in text for text in notifications)}
    if len(notified) != len(events):
        problems.append(f"{len(events) - len(notified)} events never notified")
    if prepared.dlq_url:
        sqs = _admin(emulator, "sqs")
        depth = sqs.get_queue_attributes(
            QueueUrl=prepared.dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
        if int(depth):
            problems.append(f"{depth} messages quarantined")
    return problems


def run_once(
    implementation: str,
    emulator: Any,
    *,
    messages: int,
    duplicate_rate: float = 0.0,
    throttle_rate: float = 0.0,
    seed: int = 0,
    strip: frozenset[str] = frozenset(),
) -> RunResult:
    """One implementation over one freshly reset emulator; `strip`: attribute names removed
    from every DynamoDB write it sends (`counting.strip_attributes`), a counterfactual run."""
    counting.install()  # before any client exists, so every client gets the hooks
    emulator.reset()
    stream = order_messages(messages, duplicate_rate, seed=seed)
    prepared = _prepare(implementation, emulator)
    queue_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{QUEUE_NAME}"
    with (
        _quiet_logs() as logs,
        counting.recording(throttle_rate, seed=seed, strip=strip) as recorder,
    ):
        stats = deliver(
            prepared.handler,
            stream,
            function_name=f"bench-{implementation}",
            queue_arn=queue_arn,
            timeout_s=FUNCTION_TIMEOUT_S,
        )
    recorder.check_complete()
    problems = verify(emulator, prepared, stream, recorder.notifications)
    if stats.dead_lettered:
        problems.append(f"{len(stats.dead_lettered)} messages dead-lettered by the poller")
    return RunResult(
        implementation=implementation,
        messages=len(stream),
        distinct_events=len({m.event_id for m in stream}),
        duplicate_rate=duplicate_rate,
        throttle_rate=throttle_rate,
        seconds=stats.seconds,
        cpu_seconds=stats.cpu_seconds,
        log_bytes=logs.bytes,
        calls=dict(recorder.calls),
        attempts=recorder.total_attempts,
        throttles_injected=recorder.injected,
        invocations=stats.invocations,
        redeliveries=stats.redeliveries,
        dead_lettered=len(stats.dead_lettered),
        handler_exceptions=stats.handler_exceptions,
        correct=not problems,
        problems=problems,
        usage=aggregate(recorder.usage),
        batches=batch_profile(stream),
    )


FLOOR_TABLE = "call_floor"


def call_floor(emulator: Any, *, calls: int = 200, rounds: int = 5) -> dict[str, Any]:
    """Client CPU of about the smallest AWS call there is: a GetItem of a missing key, through
    the same hooks and recorder as the runs, on a warm connection. The implementations' calls
    cost this or more (the baselines' single-record calls barely more), so calls per message
    x this is a floor under any implementation's CPU per message (`report.call_floor_bound`)."""
    if calls < 1 or rounds < 1:
        raise ValueError(f"calls and rounds must be >= 1, got {calls} and {rounds}")
    counting.install()  # before the client exists, as in run_once
    emulator.reset()
    _create_table(_admin(emulator, "dynamodb"), FLOOR_TABLE, "pk")
    client = emulator.client("dynamodb")
    key = {"pk": {"S": "absent"}}
    per_call: list[float] = []
    with counting.recording() as recorder:
        client.get_item(TableName=FLOOR_TABLE, Key=key)  # warm: endpoint and connection
        for _ in range(rounds):
            started = time.thread_time()
            for _ in range(calls):
                client.get_item(TableName=FLOOR_TABLE, Key=key)
            per_call.append((time.thread_time() - started) / calls)
    recorded = sum(recorder.calls.values())
    if recorded != 1 + calls * rounds:
        raise RuntimeError(f"call floor: {recorded} calls recorded, {1 + calls * rounds} made")
    return {
        "operation": "dynamodb.GetItem",
        "calls": calls * rounds,
        "cpu_ms_per_call": round(1000 * statistics.median(per_call), 4),
        "cpu_ms_per_call_by_round": [round(1000 * c, 4) for c in per_call],
    }


@dataclass(frozen=True)
class Scenario:
    name: str
    messages: int
    duplicate_rate: float = 0.0
    throttle_rate: float = 0.0


def run_scenario(
    scenario: Scenario,
    emulator: Any,
    repetitions: int,
    implementations: tuple[str, ...] = IMPLEMENTATIONS,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, list[RunResult]]:
    """Every implementation, `repetitions` times, interleaved (a, b, c, a, b, c, ...) so that
    drift in the machine's speed hits all of them alike."""
    results: dict[str, list[RunResult]] = {name: [] for name in implementations}
    for rep in range(repetitions):
        for name in implementations:
            result = run_once(
                name,
                emulator,
                messages=scenario.messages,
                duplicate_rate=scenario.duplicate_rate,
                throttle_rate=scenario.throttle_rate,
                seed=rep,
            )
            results[name].append(result)
            progress(
                f"  {scenario.name} rep {rep + 1}/{repetitions} {LABELS[name]}: "
                f"{result.seconds:.2f} s, {result.calls_per_message:.2f} calls/msg"
                + ("" if result.correct else f"  INCORRECT: {'; '.join(result.problems)}")
            )
    return results
