"""Benchmark 2: enqueueing the month's charges, per-item SendMessage versus our dispatcher.

Both sides send the SAME ChargeMessage objects (built by the dispatcher's own
``idempotent_messaging.dispatch.keys.charge_message``: body, MessageGroupId ``<tenant>#<YYYY-MM>``,
MessageDeduplicationId = sha256 of the key) to one FIFO queue on the emulator:

- baseline: one ``SendMessage`` per item, in order, on a default boto3 client (the obvious
  dispatcher loop);
- ours: ``idempotent_messaging.dispatch.sender.WorkQueueSender`` (SendMessageBatch of <= 10
  entries and <= 1 MiB, ``DISPATCH_SEND_CONCURRENCY`` parallel senders, only failed entries
  re-sent), page by page of ``DISPATCH_SCAN_PAGE_SIZE`` items as the dispatch loop calls it, on a
  client
  configured as ``idempotent_messaging.dispatch.app`` configures its own.

What is measured is the sending path; the source scan, run-record checkpoints and hand-offs
are the same work for any sender and are left out (the projection accounts for the hand-off).

Emulator artifact: moto rescans the whole queue several times per message sent (O(depth)),
so the work queue is a sink: messages are validated and accepted by moto's SendMessage /
SendMessageBatch code, counted, and not stored (see bench/emulator_fixes.py). The count must
equal the number of items sent, so nothing is silently lost.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from moto.sqs import models as sqs_models

from bench import counting
from bench.usage import aggregate
from idempotent_messaging.dispatch import env as dispatch_env
from idempotent_messaging.dispatch.keys import BillableItem, ChargeMessage, charge_message
from idempotent_messaging.dispatch.sender import WorkQueueSender

MONTH = "2026-06"
TENANTS = 1000
QUEUE_NAME = "charges-work.fifo"
LAMBDA_MAX_S = 900  # Lambda's hard ceiling per invocation
# AWS quotas (SQS developer guide, "Amazon SQS message quotas"): a FIFO queue without
# high-throughput mode takes 300 API calls/s per action, i.e. 3,000 msg/s with batches of 10.
FIFO_STANDARD_MSG_S = 3_000
# High-throughput FIFO: quotas are per partition and region; AWS quotes up to 70,000 calls/s
# (700,000 msg/s batched) in the largest regions. Taken as the ceiling; the projection then
# shows the dispatcher's own rate, not the queue, is the bound.
FIFO_HIGH_THROUGHPUT_MSG_S = 700_000
SQS_MAX_MESSAGE_BYTES = 262_144  # a control (continuation) message and an async invoke payload


def charge_messages(count: int) -> list[ChargeMessage]:
    return [
        charge_message(
            BillableItem(f"tenant-{i % TENANTS:04d}", f"emp-{i:08d}", 1000 + i % 9000, "JPY"),
            MONTH,
        )
        for i in range(count)
    ]


class QueueSink:
    """Counts what moto accepts into the sink queue instead of storing it."""

    def __init__(self, queue_name: str) -> None:
        self.queue_name = queue_name
        self.accepted = 0
        self._lock = threading.Lock()
        self._original: Callable[..., None] | None = None

    @contextmanager
    def installed(self) -> Iterator[QueueSink]:
        original = sqs_models.Queue.add_message
        sink = self

        def add_message(queue: Any, message: Any) -> None:
            if queue.name != sink.queue_name:
                original(queue, message)
                return
            with sink._lock:
                sink.accepted += 1

        sqs_models.Queue.add_message = add_message  # type: ignore[method-assign,assignment]
        try:
            yield self
        finally:
            sqs_models.Queue.add_message = original  # type: ignore[method-assign]


class CpuTimedExecutor(ThreadPoolExecutor):
    """A thread pool that adds up the CPU time its tasks spend in their own threads (the
    emulator's threads share the process, so process time would count its work too)."""

    def __init__(self, max_workers: int) -> None:
        super().__init__(max_workers)
        self.cpu_seconds = 0.0
        self._cpu_lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        def timed() -> Any:
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                with self._cpu_lock:
                    self.cpu_seconds += spent

        return super().submit(timed)


@dataclass
class SendResult:
    side: str
    items: int
    seconds: float
    calls: int
    accepted: int
    cpu_seconds: float = 0.0  # the sender's own threads, not the emulator's
    concurrency: int = 1
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def items_per_second(self) -> float:
        return self.items / self.seconds if self.seconds else math.inf

    def as_dict(self) -> dict[str, Any]:
        return {
            "side": self.side,
            "items": self.items,
            "seconds": round(self.seconds, 4),
            "items_per_second": round(self.items_per_second, 1),
            "calls": self.calls,
            "calls_per_item": round(self.calls / self.items, 4),
            "accepted_by_queue": self.accepted,
            "client_cpu_seconds": round(self.cpu_seconds, 4),
            "concurrency": self.concurrency,
            "usage_by_operation": self.usage,
        }


def _queue(emulator: Any) -> str:
    sqs = counting.exclude(emulator.client("sqs"))
    url: str = sqs.create_queue(QueueName=QUEUE_NAME, Attributes={"FifoQueue": "true"})["QueueUrl"]
    return url


def _timed(
    side: str,
    messages: list[ChargeMessage],
    send: Callable[[], float],
    concurrency: int = 1,
) -> SendResult:
    """Run `send` (which returns the CPU seconds its helper threads spent) under the counter."""
    sink = QueueSink(QUEUE_NAME)
    with sink.installed(), counting.recording() as recorder:
        started, cpu_started = time.perf_counter(), time.thread_time()
        helper_cpu = send()
        seconds = time.perf_counter() - started
        cpu = time.thread_time() - cpu_started + helper_cpu
    recorder.check_complete()
    if sink.accepted != len(messages):
        raise RuntimeError(f"{side}: the queue accepted {sink.accepted} of {len(messages)} items")
    return SendResult(
        side,
        len(messages),
        seconds,
        recorder.total_calls,
        sink.accepted,
        cpu,
        concurrency,
        aggregate(recorder.usage),
    )


def per_item(emulator: Any, messages: list[ChargeMessage]) -> SendResult:
    counting.install()
    emulator.reset()
    url = _queue(emulator)
    client = boto3.client("sqs")

    def send() -> float:
        for m in messages:
            client.send_message(
                QueueUrl=url,
                MessageBody=m.body,
                MessageGroupId=m.group_id,
                MessageDeduplicationId=m.deduplication_id,
            )
        return 0.0

    return _timed("per-item SendMessage", messages, send)


def ours(emulator: Any, messages: list[ChargeMessage]) -> SendResult:
    counting.install()
    emulator.reset()
    url = _queue(emulator)
    concurrency = dispatch_env.DEFAULT_SEND_CONCURRENCY
    pool = (
        concurrency + dispatch_env.DEFAULT_SEGMENT_CONCURRENCY + 4
    )  # as idempotent_messaging.dispatch.app
    client = boto3.session.Session().client(
        "sqs",
        config=Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=pool),
    )
    page = dispatch_env.DEFAULT_SCAN_PAGE_SIZE

    def send() -> float:
        with CpuTimedExecutor(concurrency) as executor:
            sender = WorkQueueSender(client, url, executor, dispatch_env.DEFAULT_MAX_SEND_ATTEMPTS)
            for start in range(0, len(messages), page):
                sender.send(messages[start : start + page])
        return executor.cpu_seconds

    return _timed("ours (SendMessageBatch)", messages, send, concurrency)


def projection(ours_items_per_second: float) -> list[dict[str, Any]]:
    """1M and 10M items against the FIFO quotas, with the dispatcher's hand-off mechanism.

    Two rate bases per queue mode:
    - "measured": min(queue quota, the rate ONE invocation reached here), conservative: it
      ignores that continuations of different segments may run side by side;
    - "quota": the queue's quota itself, i.e. the dispatcher keeps up with it (3,000 msg/s is
      300 SendMessageBatch calls/s: 16 parallel senders at ~50 ms a call). Not shown for
      high-throughput mode, whose quota no single invocation reaches.
    An invocation works until DISPATCH_TIME_RESERVE_MS remain, then hands every unfinished
    segment to a continuation message (a few dozen bytes; the cursors live in the run record);
    a segment may hop DISPATCH_MAX_HOPS times (the function's recursion detection is set to
    Allow by MonthlyFanout, so Lambda's ~16-hop stop does not apply; this bound replaces it).
    """
    work_s = LAMBDA_MAX_S - dispatch_env.DEFAULT_TIME_RESERVE_MS / 1000
    continuation_bytes = len(
        b'{"generation": 999999, "hop": 48, "month": "2026-06", "segment": 15}'
    )
    cases = (
        ("FIFO 3,000 msg/s", FIFO_STANDARD_MSG_S, "measured"),
        ("FIFO 3,000 msg/s", FIFO_STANDARD_MSG_S, "quota"),
        ("FIFO high throughput", FIFO_HIGH_THROUGHPUT_MSG_S, "measured"),
    )
    rows = []
    for items in (1_000_000, 10_000_000):
        for quota_name, quota, basis in cases:
            rate = float(quota) if basis == "quota" else min(quota, ours_items_per_second)
            total_s = items / rate
            invocations = max(1, math.ceil(total_s / work_s))
            hops = invocations - 1
            longest_s = min(total_s, work_s)
            rows.append(
                {
                    "items": items,
                    "queue": quota_name,
                    "rate_basis": basis,
                    "bound_by": "queue quota" if rate >= quota else "dispatcher",
                    "rate_msg_s": round(rate, 1),
                    "total_minutes": round(total_s / 60, 1),
                    "invocations_in_chain": invocations,
                    "hops_per_segment": hops,
                    "max_hops": dispatch_env.DEFAULT_MAX_HOPS,
                    "longest_invocation_s": round(longest_s, 1),
                    "send_calls": math.ceil(items / 10),
                    "continuation_message_bytes": continuation_bytes,
                    "inside_lambda_limits": longest_s + dispatch_env.DEFAULT_TIME_RESERVE_MS / 1000
                    <= LAMBDA_MAX_S
                    and hops <= dispatch_env.DEFAULT_MAX_HOPS
                    and continuation_bytes <= SQS_MAX_MESSAGE_BYTES,
                }
            )
    return rows
