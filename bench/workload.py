"""The consumer workload: order events, SQS Lambda events, and a model of Lambda's SQS poller.

Events follow the reference orders contract, identical for the three implementations:
``{"event_id": "<producer id>", "order": {"order_id", "customer", "amount", "currency"}}``,
and so does the notification each publishes (`order_publish`: the contract's own).

Duplicates are producer re-sends: the same body under a NEW messageId, delivered at least one
batch after the original, as SQS delivers them. The poller model (`deliver`) hands out batches
in queue order, puts every record the handler reports failed (or the whole batch when the
handler raises) back at the end of the queue with its receive count raised, and dead-letters a
record once it reaches maxReceiveCount, as SQS's redrive policy does. It does not wait out the
visibility timeout before a redelivery, so wall time measures work, not waiting.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

BATCH_SIZE = 10
MAX_RECEIVE_COUNT = 5
REGION = "ap-northeast-1"
ACCOUNT = "123456789012"

Handler = Callable[[dict[str, Any], Any], Any]


def order_publish(message: Any, event_id: str) -> dict[str, Any]:
    """SNS Publish parameters (without TopicArn) of the notification the reference orders
    contract defines for this event (handlers.orders.order_notification): the baselines
    publish exactly what ours does (message, subject, attributes), so the three do the same
    work, as they store the same order row."""
    # Imported on first use: importing the runtime reads its environment, which the
    # benchmark sets for ours only when it prepares ours.
    from handlers.orders import order_notification

    notification = order_notification(message, event_id)
    params: dict[str, Any] = {"Message": notification.message}
    if notification.subject:
        params["Subject"] = notification.subject
    if notification.attributes:
        params["MessageAttributes"] = {
            name: {"DataType": "String", "StringValue": value}
            for name, value in notification.attributes.items()
        }
    return params


@dataclass(frozen=True)
class Message:
    message_id: str
    body: str
    event_id: str
    receive_count: int = 1


def order_messages(count: int, duplicate_rate: float = 0.0, seed: int = 0) -> list[Message]:
    """`count` messages of which round(count * duplicate_rate) re-send an earlier event."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    if not 0 <= duplicate_rate < 1:
        raise ValueError(f"duplicate_rate must be in [0, 1), got {duplicate_rate}")
    rng = random.Random(seed)
    duplicates = round(count * duplicate_rate)
    originals = [_order(i, rng) for i in range(count - duplicates)]
    stream: list[Message] = list(originals)
    for _ in range(duplicates):
        # Insert after at least one full batch, re-sending an event already in the stream.
        # (Tiny streams: as late as possible.)
        position = rng.randint(min(BATCH_SIZE + 1, len(stream)), len(stream))
        source = stream[rng.randrange(0, max(1, position - BATCH_SIZE))]
        resend = Message(
            message_id=str(uuid.UUID(int=rng.getrandbits(128))),
            body=source.body,
            event_id=source.event_id,
        )
        stream.insert(position, resend)
    return stream


def batch_profile(stream: list[Message], batch_size: int = BATCH_SIZE) -> dict[str, int]:
    """How the first delivery batches the stream (``deliver`` hands out batches in queue
    order): batches, those holding an event seen for the first time, those holding a re-send of
    an event seen in an earlier batch. The receipt design's documented minimum of calls per
    batch follows from it (bench.report.minimum_calls)."""
    seen: set[str] = set()
    fresh = resent = 0
    batches = [stream[i : i + batch_size] for i in range(0, len(stream), batch_size)]
    for batch in batches:
        events = [m.event_id for m in batch]
        fresh += any(e not in seen for e in events)
        resent += any(e in seen for e in events)
        seen.update(events)
    return {
        "batches": len(batches),
        "batches_with_fresh_events": fresh,
        "batches_with_resent_events": resent,
    }


def _order(index: int, rng: random.Random) -> Message:
    event_id = f"evt-{index:07d}"
    body = {
        "event_id": event_id,
        "order": {
            "order_id": f"ord-{index:07d}",
            "customer": f"cust-{rng.randrange(1000):04d}",
            "amount": rng.randrange(100, 100_000),
            "currency": "JPY",
        },
    }
    message_id = str(uuid.UUID(int=rng.getrandbits(128)))
    return Message(message_id=message_id, body=json.dumps(body), event_id=event_id)


def sqs_event(batch: list[Message], queue_arn: str) -> dict[str, Any]:
    """The event Lambda's SQS poller passes to a function (standard queue)."""
    now_ms = str(int(time.time() * 1000))
    return {
        "Records": [
            {
                "messageId": m.message_id,
                "receiptHandle": f"rh-{m.message_id}-{m.receive_count}",
                "body": m.body,
                "attributes": {
                    "ApproximateReceiveCount": str(m.receive_count),
                    "SentTimestamp": now_ms,
                    "SenderId": "AIDABENCH",
                    "ApproximateFirstReceiveTimestamp": now_ms,
                },
                "messageAttributes": {},
                "md5OfBody": hashlib.md5(m.body.encode()).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for m in batch
        ]
    }


@dataclass
class LambdaContext:
    """The parts of Lambda's context object that handlers and Powertools read."""

    function_name: str
    timeout_s: float = 30.0
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _deadline: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_s
        self.invoked_function_arn = (
            f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"
        )
        self.function_version = "$LATEST"
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass
class DeliveryStats:
    invocations: int = 0
    deliveries: int = 0  # records handed to the function, redeliveries included
    redeliveries: int = 0
    handler_exceptions: int = 0  # whole batches failed by an escaped exception
    dead_lettered: list[Message] = field(default_factory=list)
    seconds: float = 0.0  # wall time spent inside the handler
    cpu_seconds: float = 0.0  # CPU time of the calling thread (the function's own work)


def failed_ids(response: Any) -> set[str]:
    """Message ids a partial batch response reports failed."""
    if response is None:
        return set()
    if not isinstance(response, Mapping):
        raise TypeError(f"handler returned {type(response).__name__}, expected a dict or None")
    return {str(item["itemIdentifier"]) for item in response.get("batchItemFailures", [])}


def deliver(
    handler: Handler,
    messages: list[Message],
    *,
    function_name: str,
    queue_arn: str,
    timeout_s: float = 30.0,
    batch_size: int = BATCH_SIZE,
    max_receive_count: int = MAX_RECEIVE_COUNT,
) -> DeliveryStats:
    """Drive `handler` as Lambda's SQS poller would until the queue is empty."""
    stats = DeliveryStats()
    queue: deque[Message] = deque(messages)
    while queue:
        batch = [queue.popleft() for _ in range(min(batch_size, len(queue)))]
        event = sqs_event(batch, queue_arn)
        context = LambdaContext(function_name=function_name, timeout_s=timeout_s)
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            failed = failed_ids(handler(event, context))
        except Exception:
            stats.handler_exceptions += 1
            failed = {m.message_id for m in batch}
        stats.seconds += time.perf_counter() - started
        stats.cpu_seconds += time.thread_time() - cpu_started
        stats.invocations += 1
        stats.deliveries += len(batch)
        for m in batch:
            if m.message_id not in failed:
                continue
            if m.receive_count >= max_receive_count:
                stats.dead_lettered.append(m)
            else:
                stats.redeliveries += 1
                queue.append(Message(m.message_id, m.body, m.event_id, m.receive_count + 1))
    return stats
