"""SendMessageBatch packing, failed-entry retries and their bounds (pure, fake client)."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from idempotent_messaging.dispatch.keys import ChargeMessage
from idempotent_messaging.dispatch.sender import (
    BASE_BACKOFF_S,
    MAX_BATCH_BYTES,
    SendFailed,
    WorkQueueSender,
    message_size,
    pack,
)

pytestmark = pytest.mark.unit


def message(i: int, size: int = 100) -> ChargeMessage:
    return ChargeMessage(
        key=f"t:e{i}:2026-06", group_id="t#2026-06", deduplication_id=f"d{i}", body="x" * size
    )


@given(st.lists(st.integers(min_value=1, max_value=400_000), max_size=40))
def test_batches_hold_at_most_ten_entries_and_one_mib_measured_in_order(sizes: list[int]) -> None:
    messages = [message(i, size) for i, size in enumerate(sizes)]
    batches = list(pack(messages))
    assert [m for batch in batches for m in batch] == messages
    for batch in batches:
        assert 1 <= len(batch) <= 10
        assert sum(message_size(m) for m in batch) <= MAX_BATCH_BYTES
    # Greedy: a batch is only closed when the next message would not fit.
    for batch, following in itertools.pairwise(batches):
        used = sum(message_size(m) for m in batch)
        assert len(batch) == 10 or used + message_size(following[0]) > MAX_BATCH_BYTES


def test_size_is_measured_in_utf8_bytes_not_characters() -> None:
    wide = ChargeMessage(key="k", group_id="g", deduplication_id="d", body="円" * 100)
    assert message_size(wide) == 300


def test_a_message_above_one_mib_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'t:e0:2026-06' is 1048577 bytes"):
        list(pack([message(0, MAX_BATCH_BYTES + 1)]))


class FakeSqs:
    """Answers SendMessageBatch, failing chosen entries on chosen attempts."""

    def __init__(
        self, fail: dict[int, list[str]], sender_fault: bool = False, code: str | None = None
    ) -> None:
        self.fail = fail  # call number -> body suffixes to fail
        self.sender_fault = sender_fault
        # A sender fault SQS documents as a malformed entry, unless a test names the code.
        self.code = code or ("InvalidParameterValue" if sender_fault else "InternalError")
        self.requests: list[list[dict[str, Any]]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        self.requests.append(Entries)
        failing = self.fail.get(len(self.requests), [])
        failed = [e for e in Entries if e["MessageDeduplicationId"] in failing]
        return {
            "Successful": [{"Id": e["Id"]} for e in Entries if e not in failed],
            "Failed": [
                {"Id": e["Id"], "SenderFault": self.sender_fault, "Code": self.code} for e in failed
            ],
        }


def test_only_failed_entries_are_resent_with_exponential_backoff() -> None:
    sqs = FakeSqs({1: ["d2", "d7"], 2: ["d7"]})
    sleeps: list[float] = []
    with ThreadPoolExecutor(1) as pool:
        stats = WorkQueueSender(sqs, "url", pool, 4, sleeps.append).send(
            [message(i) for i in range(10)]
        )
    assert [len(r) for r in sqs.requests] == [10, 2, 1]
    assert [e["MessageDeduplicationId"] for e in sqs.requests[1]] == ["d2", "d7"]
    assert [e["MessageDeduplicationId"] for e in sqs.requests[2]] == ["d7"]
    assert stats.calls == 3 and stats.retried_entries == 3
    assert len(sleeps) == 2
    assert 0.5 * BASE_BACKOFF_S <= sleeps[0] <= 1.5 * BASE_BACKOFF_S
    assert 0.5 * 2 * BASE_BACKOFF_S <= sleeps[1] <= 1.5 * 2 * BASE_BACKOFF_S


def test_retries_are_bounded_and_the_failure_names_the_code_and_key() -> None:
    sqs = FakeSqs({n: ["d3"] for n in range(1, 10)})
    with (
        ThreadPoolExecutor(1) as pool,
        pytest.raises(SendFailed, match=r"1 entries still failed after 3 attempts.*InternalError"),
    ):
        WorkQueueSender(sqs, "url", pool, 3, lambda _: None).send([message(i) for i in range(5)])
    assert len(sqs.requests) == 3


def test_invalid_entries_are_not_retried() -> None:
    sqs = FakeSqs({1: ["d1"]}, sender_fault=True)
    with ThreadPoolExecutor(1) as pool, pytest.raises(SendFailed, match="as invalid"):
        WorkQueueSender(sqs, "url", pool, 4, lambda _: None).send([message(i) for i in range(3)])
    assert len(sqs.requests) == 1


@pytest.mark.parametrize("code", ["KmsThrottled", "KMS.ThrottlingException", "RequestThrottled"])
def test_a_throttled_entry_is_retried_although_it_is_a_sender_fault(code: str) -> None:
    """SQS API reference, SendMessageBatch Errors: KmsThrottled ("KMS throttles requests");
    RequestThrottled is in botocore's own throttling codes. SQS marks such an entry
    SenderFault, and its CODE says transient: the same code on the whole call is retried."""
    sqs = FakeSqs({1: ["d1"]}, sender_fault=True, code=code)
    with ThreadPoolExecutor(1) as pool:
        stats = WorkQueueSender(sqs, "url", pool, 4, lambda _: None).send(
            [message(i) for i in range(3)]
        )
    assert stats.calls == 2 and stats.retried_entries == 1


def test_batches_are_sent_in_parallel_and_all_settle_before_an_error_is_raised() -> None:
    sqs = FakeSqs({1: ["d0"]}, sender_fault=True)
    with ThreadPoolExecutor(4) as pool, pytest.raises(SendFailed, match="1 of 3 batches"):
        WorkQueueSender(sqs, "url", pool, 2, lambda _: None).send([message(i) for i in range(25)])
    assert sorted(len(r) for r in sqs.requests) == [5, 10, 10]
