"""An SQS event-source-mapping poller that behaves as Lambda's does, invoking handlers in-process.

Per mapping: ReceiveMessage (at most 10 per call, the API limit) is repeated until the batch
size is reached or the maximum batching window has passed (window 0: what one poll returns);
the records are shaped exactly as Lambda's SQS event; the handler runs with the function's
environment and a context honouring its timeout. Afterwards, as Lambda does:
- invocation error or timeout: nothing is deleted; the whole batch returns after the
  visibility timeout;
- ReportBatchItemFailures enabled: every record not named in `batchItemFailures` is deleted;
  a malformed response (unknown or empty itemIdentifier) fails the whole batch;
- ReportBatchItemFailures absent: a successful invocation deletes the whole batch.
maxReceiveCount -> DLQ is left to SQS (moto) itself.

Concurrency, as Lambda scales an SQS mapping: `drain` runs up to the mapping's
MaximumConcurrency invocations at once (ScalingConfig), else five, where Lambda starts
("When messages are available, Lambda starts processing five batches at a time with five
concurrent invocations of your function", Lambda developer guide, "Configuring scaling behavior
for SQS event source mappings"; the emulator does not scale further). Each invocation runs in
an execution environment of its own (local.invoke, local.isolation), so concurrent deliveries
of one event really race.

Failed records come back when SQS makes them visible again: after the queue's visibility
timeout, on the emulator's clock (`moto_patches.set_visibility_scale`: 0.01 runs a 190 s
timeout in 1.9 s). Only the wait is accelerated, not the handlers: while an invocation runs,
its records stay in flight for up to the function's timeout in real time (Lambda refuses a
mapping whose queue visibility timeout is below the function timeout, so in AWS a batch never
becomes visible under a running invocation); when it ends, the failed ones wait the queue's
visibility timeout on the accelerated clock. One deliberate difference, opt-in and reported:
`release_failed=True` makes failed records visible again at once (ChangeMessageVisibility 0),
so that a demo shows retries in a poll rather than minutes.
"""

from __future__ import annotations

import base64
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from idempotent_messaging.local import moto_patches
from idempotent_messaging.local.invoke import InvocationResult, invoke
from idempotent_messaging.local.registry import FunctionConfig, MappingConfig, Registry
from idempotent_messaging.local.server import queue_url_from_arn

MAX_MESSAGES_PER_RECEIVE = 10  # SQS ReceiveMessage limit
REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"
MAX_VISIBILITY_S = 43_200  # SQS: at most 12 hours
LAMBDA_INITIAL_CONCURRENCY = 5
"""Concurrent invocations of a mapping without MaximumConcurrency: where Lambda starts."""


@dataclass
class MappingStats:
    """What one mapping's poller did."""

    polls: int = 0
    invocations: int = 0
    invocation_errors: int = 0
    records_delivered: int = 0
    records_deleted: int = 0
    records_failed: int = 0
    last_error: str = ""
    peak_concurrency: int = 0
    """The most invocations of this mapping that ran at once."""


def _message_attributes(raw: dict[str, Any]) -> dict[str, Any]:
    """SQS API message attributes -> the camelCase shape of Lambda's SQS event."""
    shaped: dict[str, Any] = {}
    for name, value in raw.items():
        binary = value.get("BinaryValue")
        shaped[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode() if binary is not None else None,
            "stringListValues": list(value.get("StringListValues", [])),
            "binaryListValues": [
                base64.b64encode(b).decode() for b in value.get("BinaryListValues", [])
            ],
            "dataType": value["DataType"],
        }
        if shaped[name]["stringValue"] is None:
            del shaped[name]["stringValue"]
        if shaped[name]["binaryValue"] is None:
            del shaped[name]["binaryValue"]
    return shaped


def to_lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One ReceiveMessage message -> one record of Lambda's SQS event."""
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": _message_attributes(message.get("MessageAttributes", {})),
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


@dataclass
class BatchOutcome:
    records: int
    deleted: int
    failed_ids: list[str]
    invocation: InvocationResult | None
    whole_batch_failed: bool = False
    reason: str = ""


@dataclass
class Poller:
    """Drives every enabled SQS mapping of a registry against the emulator."""

    registry: Registry
    endpoint_url: str
    sqs: Any  # boto3 SQS client bound to the emulator
    release_failed: bool = False
    on_batch: Callable[[MappingConfig, BatchOutcome], None] | None = None
    """Called after each batch (one at a time, whatever the concurrency)."""
    stats: dict[str, MappingStats] = field(default_factory=dict)
    concurrency: int | None = None
    """A cap on every mapping's concurrent invocations (None: each mapping's own)."""
    running: dict[str, int] = field(default_factory=dict)
    """Mapping uuid -> invocations running now."""
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def _stats(self, mapping: MappingConfig) -> MappingStats:
        with self._lock:
            return self.stats.setdefault(mapping.uuid, MappingStats())

    def concurrency_of(self, mapping: MappingConfig) -> int:
        """How many invocations of ``mapping`` drain runs at once."""
        wanted = mapping.maximum_concurrency or LAMBDA_INITIAL_CONCURRENCY
        if self.concurrency is not None:
            wanted = min(wanted, self.concurrency)
        return max(1, wanted)

    def sqs_mappings(self) -> list[MappingConfig]:
        return [
            m
            for m in self.registry.mappings
            if m.enabled and m.event_source_arn.split(":")[2:3] == ["sqs"]
        ]

    def _hold_s(self, mapping: MappingConfig) -> int | None:
        """On the accelerated clock, the visibility (in SQS seconds) that keeps a received
        batch in flight for the function's timeout in real time; None: the queue's own."""
        scale = moto_patches.visibility_scale()
        if scale >= 1 or self.release_failed:
            return None
        timeout = self.registry.function(mapping.function_name).timeout_s
        return min(MAX_VISIBILITY_S, math.ceil(timeout / scale))

    def _visibility_s(self, url: str) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["VisibilityTimeout"]
        )["Attributes"]
        return int(attributes["VisibilityTimeout"])

    def receive_batch(self, mapping: MappingConfig) -> list[dict[str, Any]]:
        """Assemble up to batch_size messages within the batching window."""
        url = queue_url_from_arn(mapping.event_source_arn, self.endpoint_url)
        deadline = time.monotonic() + mapping.maximum_batching_window_s
        messages: list[dict[str, Any]] = []
        hold = self._hold_s(mapping)
        while len(messages) < mapping.batch_size:
            wanted = min(MAX_MESSAGES_PER_RECEIVE, mapping.batch_size - len(messages))
            response = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=wanted,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
                **({"VisibilityTimeout": hold} if hold is not None else {}),
            )
            stats = self._stats(mapping)
            with self._lock:
                stats.polls += 1
            got = response.get("Messages", [])
            messages.extend(got)
            if time.monotonic() >= deadline:
                break
            if not got:
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        return messages

    def process_batch(
        self, mapping: MappingConfig, fn: FunctionConfig, messages: list[dict[str, Any]]
    ) -> BatchOutcome:
        url = queue_url_from_arn(mapping.event_source_arn, self.endpoint_url)
        records = [
            to_lambda_record(m, mapping.event_source_arn, self.registry.region) for m in messages
        ]
        stats = self._stats(mapping)
        with self._lock:
            now = self.running[mapping.uuid] = self.running.get(mapping.uuid, 0) + 1
            stats.peak_concurrency = max(stats.peak_concurrency, now)
        try:
            result = invoke(
                fn,
                {"Records": records},
                region=self.registry.region,
                endpoint_url=self.endpoint_url,
            )
        finally:
            with self._lock:
                self.running[mapping.uuid] -= 1
        by_id = {m["MessageId"]: m for m in messages}
        reports = REPORT_BATCH_ITEM_FAILURES in mapping.function_response_types
        failed: list[str]
        reason = ""
        if not result.ok:
            failed, whole = list(by_id), True
            reason = "timed out" if result.timed_out else f"{type(result.error).__name__}"
        elif reports:
            failed, whole, reason = _failed_items(result.response, by_id)
        else:
            failed, whole = [], False
        to_delete = [m for mid, m in by_id.items() if mid not in failed]
        for start in range(0, len(to_delete), MAX_MESSAGES_PER_RECEIVE):
            chunk = to_delete[start : start + MAX_MESSAGES_PER_RECEIVE]
            self.sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)
                ],
            )
        # Failed records: visible at once (release_failed), or, on the accelerated clock, after
        # the queue's visibility timeout counted from now (the hold only covered the handler).
        wait = 0 if self.release_failed else None
        if wait is None and self._hold_s(mapping) is not None:
            wait = self._visibility_s(url)
        for start in range(0, len(failed) if wait is not None else 0, MAX_MESSAGES_PER_RECEIVE):
            self.sqs.change_message_visibility_batch(
                QueueUrl=url,
                Entries=[
                    {
                        "Id": str(i),
                        "ReceiptHandle": by_id[mid]["ReceiptHandle"],
                        "VisibilityTimeout": wait,
                    }
                    for i, mid in enumerate(failed[start : start + MAX_MESSAGES_PER_RECEIVE])
                ],
            )
        with self._lock:
            stats.invocations += 1
            stats.records_delivered += len(messages)
            stats.records_deleted += len(to_delete)
            stats.records_failed += len(failed)
            if not result.ok:
                stats.invocation_errors += 1
                stats.last_error = reason
        return BatchOutcome(len(messages), len(to_delete), failed, result, whole, reason)

    def poll_once(
        self, mapping: MappingConfig, on_received: Callable[[], None] | None = None
    ) -> BatchOutcome | None:
        """One poll of one mapping; None when the queue had nothing visible. ``on_received``
        runs once a batch is in hand, before its invocation."""
        fn = self.registry.function(mapping.function_name)
        messages = self.receive_batch(mapping)
        if not messages:
            return None
        if on_received is not None:
            on_received()
        outcome = self.process_batch(mapping, fn, messages)
        if self.on_batch is not None:
            with self._lock:
                self.on_batch(mapping, outcome)
        return outcome

    def drain(
        self,
        mappings: list[MappingConfig] | None = None,
        *,
        idle_polls: int = 2,
        timeout_s: float = 60.0,
        idle_sleep_s: float = 0.1,
        wait_in_flight: bool | None = None,
    ) -> int:
        """Run every mapping's invocations, up to its concurrency at once (``concurrency_of``),
        until each saw ``idle_polls`` empty polls in a row with no invocation running and, when
        ``wait_in_flight``, no message of its queue in flight or delayed (failed records waiting
        for their visibility timeout). By default it waits for them when they come back soon:
        released at once (``release_failed``) or on an accelerated clock; at SQS's real
        visibility timeout (minutes) it returns and leaves them in flight.

        Returns the number of batches processed. Raises TimeoutError past timeout_s, so a
        scenario that never settles fails loudly instead of hanging; an error of the poller
        itself (not of a handler: that is the invocation's) stops every worker and is raised.
        """
        targets = mappings if mappings is not None else self.sqs_mappings()
        if wait_in_flight is None:
            wait_in_flight = self.release_failed or moto_patches.visibility_scale() < 1
        idle = dict.fromkeys((m.uuid for m in targets), 0)
        # Set while a mapping's last poll found messages: its first worker polls all the time,
        # the others only then (as Lambda adds pollers while messages are available), so an
        # idle mapping costs one poll per idle_sleep_s, not one per worker.
        busy = {m.uuid: threading.Event() for m in targets}
        batches = 0
        errors: list[BaseException] = []
        stop = threading.Event()

        def work(mapping: MappingConfig, first: bool) -> None:
            nonlocal batches
            while not stop.is_set():
                if not first and not busy[mapping.uuid].is_set():
                    busy[mapping.uuid].wait(idle_sleep_s)
                    continue
                try:
                    outcome = self.poll_once(mapping, on_received=busy[mapping.uuid].set)
                except BaseException as exc:  # the poller's own failure: stop the drain
                    errors.append(exc)
                    stop.set()
                    return
                with self._lock:
                    if outcome is None:
                        idle[mapping.uuid] += 1
                        busy[mapping.uuid].clear()
                    else:
                        idle[mapping.uuid] = 0
                        batches += 1
                if outcome is None:
                    stop.wait(idle_sleep_s)

        workers = [
            threading.Thread(target=work, args=(m, n == 0), name=f"poller-{m.function_name}-{n}")
            for m in targets
            for n in range(self.concurrency_of(m))
        ]
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + timeout_s
        try:
            while not stop.wait(idle_sleep_s):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"queues did not drain within {timeout_s:.0f} s")
                # Quiet: every mapping's last polls found nothing and no invocation runs (a
                # worker mid-poll is not work: stopping waits for it), and its queue holds
                # nothing still to come. A batch in a worker's hands is in flight.
                with self._lock:
                    quiet = not any(self.running.get(m.uuid) for m in targets) and all(
                        idle[m.uuid] >= idle_polls for m in targets
                    )
                if quiet and not any(self._left(m, wait_in_flight) for m in targets):
                    break
        finally:
            stop.set()
            for worker in workers:
                worker.join()
        if errors:
            raise errors[0]
        return batches

    def _left(self, mapping: MappingConfig, in_flight: bool) -> int:
        """Messages of the mapping's queue still to come: visible (and, with ``in_flight``, in
        flight or delayed)."""
        names = ["ApproximateNumberOfMessages"]
        if in_flight:
            names += ["ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]
        url = queue_url_from_arn(mapping.event_source_arn, self.endpoint_url)
        attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)
        return sum(int(v) for v in attributes["Attributes"].values())


def _failed_items(response: Any, by_id: dict[str, Any]) -> tuple[list[str], bool, str]:
    """Lambda's reading of a partial batch response: (failed ids, whole batch failed?, why)."""
    if response is None or (isinstance(response, dict) and not response):
        return [], False, ""
    if not isinstance(response, dict):
        return [], False, ""  # Lambda ignores a response that is not a batch response object
    items = response.get("batchItemFailures")
    if items is None:
        return [], False, ""
    if not isinstance(items, list):
        return list(by_id), True, "batchItemFailures is not a list"
    failed: list[str] = []
    for item in items:
        ident = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not ident or ident not in by_id:
            return list(by_id), True, f"invalid itemIdentifier {ident!r}"
        failed.append(ident)
    return failed, False, ""
