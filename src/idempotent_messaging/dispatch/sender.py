"""SendMessageBatch to the FIFO work queue: packed, parallel, failed entries retried.

botocore retries a throttled or failed CALL (standard retry mode, configured on the client);
what it cannot see is a 200 response that lists some entries under ``Failed``. Only those
entries are re-sent here, a bounded number of times with exponential backoff and jitter; an
entry whose CODE says the request can never be accepted (a malformed entry: the runtime's one
rule, ``errors.classify_entry``, as for the same code on a whole call) fails the page at once.
``SenderFault`` alone decides nothing: ``KmsThrottled`` is a sender fault and transient.
"""

from __future__ import annotations

import contextvars
import random
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any

from idempotent_messaging.runtime.errors import FailureClass, classify_entry

from .keys import ChargeMessage

MAX_ENTRIES_PER_BATCH = 10  # SQS limit
MAX_BATCH_BYTES = 1_048_576  # SQS limit: 1 MiB for the whole SendMessageBatch payload
BASE_BACKOFF_S = 0.05  # 50 ms x 2^(n-1), +-50 % jitter, as the runtime backs off


class SendFailed(RuntimeError):
    """Entries still failing after the bounded retries, or refused as invalid."""


def message_size(message: ChargeMessage) -> int:
    """Bytes SQS counts against the batch limit: the body (no message attributes are sent)."""
    return len(message.body.encode("utf-8"))


def pack(messages: Sequence[ChargeMessage]) -> Iterator[list[ChargeMessage]]:
    """Batches of <= 10 entries and <= 1 MiB, measured, in order."""
    batch: list[ChargeMessage] = []
    batch_bytes = 0
    for message in messages:
        size = message_size(message)
        if size > MAX_BATCH_BYTES:
            raise ValueError(f"message {message.key!r} is {size} bytes, above SQS's 1 MiB limit")
        if batch and (len(batch) == MAX_ENTRIES_PER_BATCH or batch_bytes + size > MAX_BATCH_BYTES):
            yield batch
            batch, batch_bytes = [], 0
        batch.append(message)
        batch_bytes += size
    if batch:
        yield batch


@dataclass
class SendStats:
    calls: int = 0
    retried_entries: int = 0


class WorkQueueSender:
    """Sends charge messages to one FIFO queue through a shared thread pool."""

    def __init__(
        self,
        client: Any,
        queue_url: str,
        executor: Executor,
        max_attempts: int,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts={max_attempts}: must be >= 1")
        self._client = client
        self._queue_url = queue_url
        self._executor = executor
        self._max_attempts = max_attempts
        self._sleep = sleep

    def send(self, messages: Sequence[ChargeMessage]) -> SendStats:
        """Send every message or raise SendFailed (after all batches have settled)."""
        # Each batch runs in a copy of this context: the invocation's deadline included.
        futures: list[Future[SendStats]] = [
            self._executor.submit(contextvars.copy_context().run, self._send_batch, batch)
            for batch in pack(messages)
        ]
        total = SendStats()
        errors: list[BaseException] = []
        for future in futures:
            try:
                stats = future.result()
            except Exception as exc:  # collected: every batch settles before we raise
                errors.append(exc)
                continue
            total.calls += stats.calls
            total.retried_entries += stats.retried_entries
        if errors:
            raise SendFailed(f"{len(errors)} of {len(futures)} batches failed: {errors[0]}")
        return total

    def _send_batch(self, batch: list[ChargeMessage]) -> SendStats:
        stats = SendStats()
        pending = {str(i): message for i, message in enumerate(batch)}
        for attempt in range(1, self._max_attempts + 1):
            response = self._client.send_message_batch(
                QueueUrl=self._queue_url,
                Entries=[
                    {
                        "Id": entry_id,
                        "MessageBody": message.body,
                        "MessageGroupId": message.group_id,
                        "MessageDeduplicationId": message.deduplication_id,
                    }
                    for entry_id, message in pending.items()
                ],
            )
            stats.calls += 1
            failed = response.get("Failed", [])
            if not failed:
                return stats
            refused = [
                f
                for f in failed
                if classify_entry("sqs", str(f.get("Code") or "")) is FailureClass.PERMANENT
            ]
            if refused:
                first = refused[0]
                raise SendFailed(
                    f"SQS refused {len(refused)} entries as invalid, first "
                    f"{pending[first['Id']].key!r}: {first.get('Code')} {first.get('Message', '')}"
                )
            pending = {f["Id"]: pending[f["Id"]] for f in failed}
            if attempt < self._max_attempts:
                stats.retried_entries += len(pending)
                delay = BASE_BACKOFF_S * 2 ** (attempt - 1)
                self._sleep(delay * random.uniform(0.5, 1.5))
        codes = sorted({str(f.get("Code")) for f in failed})
        raise SendFailed(
            f"{len(pending)} entries still failed after {self._max_attempts} attempts "
            f"(codes {codes}), first {next(iter(pending.values())).key!r}"
        )
