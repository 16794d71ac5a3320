"""DLQ copies and their batches are sized as SQS counts them, for any attributes (issue 22, 2).

AWS (SQS API reference, MessageAttributeValue and SendMessageBatch): "All parts of the message
attribute, including Name, Type, and Value, are part of the message size restriction"; a
message carries at most 10 attributes; a SendMessageBatch holds at most 10 entries and 1 MiB;
a queue's MaximumMessageSize is 1,024 .. 1,048,576 bytes. The runtime's sizing is checked
against the emulator patch's independent measure (``local/moto_patches.sqs_message_size``).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idempotent_messaging.local import moto_patches
from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.quarantine import (
    ATTR_DROPPED,
    ATTR_FAILURE_REASON,
    UNKNOWN_DLQ_BATCH_BYTES,
    QuarantineEntry,
    chunk_quarantine,
    dlq_limits,
    dlq_max_message_bytes,
    fitted_message,
)

pytestmark = pytest.mark.unit

KIB = 1024


def entry(
    i: int, body: str, attributes: dict[str, Any] | None = None, **more: Any
) -> QuarantineEntry:
    values: dict[str, Any] = {
        "entry_id": f"q{i}",
        "body": body,
        "failure_class": "permanent",
        "kind": "schema",
        "reason": "writes() rejected the message (KeyError)",
        "message_id": f"m-{i}",
        "receive_count": 1,
        "event_id": f"e-{i}",
        "group_id": None,
        "original_attributes": attributes or {},
        **more,
    }
    return QuarantineEntry(**values)


def sqs_size(message: dict[str, Any]) -> int:
    return moto_patches.sqs_message_size(message)


def test_binary_and_non_ascii_attributes_count_in_bytes() -> None:
    """UTF-8 bytes for text, raw bytes for binary: 100 x 'あ' is 300 bytes, not 100."""
    attributes = {
        "text": {"stringValue": "あ" * 100, "dataType": "String"},
        "blob": {"binaryValue": base64.b64encode(b"\x00" * 500).decode(), "dataType": "Binary"},
    }
    message = fitted_message(entry(0, "{}", attributes), 64 * KIB)
    assert message is not None
    assert message["MessageAttributes"]["blob"]["BinaryValue"] == b"\x00" * 500
    expected = 2 + sum(
        len(name) + len(value["DataType"]) + len(value.get("StringValue", "").encode())
        for name, value in message["MessageAttributes"].items()
        if name != "blob"
    )
    assert sqs_size(message) == expected + len("blob") + len("Binary") + 500


def test_the_largest_producer_attributes_go_first_when_the_copy_is_too_large() -> None:
    attributes = {
        "a_small": {"stringValue": "s", "dataType": "String"},
        "b_big": {"stringValue": "b" * 3_000, "dataType": "String"},
        "c_small": {"stringValue": "c", "dataType": "String"},
    }
    message = fitted_message(entry(0, "x" * 1_500, attributes), 4 * KIB)
    assert message is not None
    kept = message["MessageAttributes"]
    assert "a_small" in kept and "c_small" in kept and "b_big" not in kept
    assert kept[ATTR_DROPPED]["StringValue"] == "b_big"
    assert sqs_size(message) <= 4 * KIB


def test_our_own_attributes_are_sized_like_any_other(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever attributes the runtime adds (the first-seen time, a Number) are counted too."""
    fields = set(QuarantineEntry.__dataclass_fields__)
    more: dict[str, Any] = {"first_seen_ms": 1_700_000_000_000} if "first_seen_ms" in fields else {}
    body = "x" * (2 * KIB - 420)
    message = fitted_message(entry(0, body, event_id_attribute=None, **more), 2 * KIB)
    assert message is not None
    assert sqs_size(message) <= 2 * KIB
    if more:
        assert any(v["DataType"] == "Number" for v in message["MessageAttributes"].values())


def test_the_reason_is_shortened_before_the_copy_is_given_up() -> None:
    long_reason = "r" * 1_000
    limit = 2 * KIB
    tight = entry(0, "x" * (limit - 700), reason=long_reason)
    message = fitted_message(tight, limit)
    assert message is not None
    reason = message["MessageAttributes"][ATTR_FAILURE_REASON]["StringValue"]
    assert 64 <= len(reason) < 1_000 and sqs_size(message) <= limit
    assert fitted_message(entry(1, "x" * (limit - 100), reason=long_reason), limit) is None


def test_the_dlq_maximum_comes_from_the_component_with_a_safe_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert dlq_max_message_bytes({env.DLQ_MAX_MESSAGE_BYTES: "1048576"}) == 1_048_576
    assert dlq_max_message_bytes({env.DLQ_MAX_MESSAGE_BYTES: "99999999"}) == 1_048_576
    assert dlq_max_message_bytes({env.DLQ_MAX_MESSAGE_BYTES: "12"}) == 1_024
    assert dlq_max_message_bytes({env.DLQ_MAX_MESSAGE_BYTES: "big"}) is None
    assert dlq_max_message_bytes({}) is None
    monkeypatch.delenv(env.DLQ_MAX_MESSAGE_BYTES, raising=False)
    # Unknown maximum: a copy may take 1 MiB, but batches stay within 256 KiB, so a copy above
    # the DLQ's real maximum goes alone and its refusal costs no neighbour.
    assert dlq_limits() == (1_048_576, UNKNOWN_DLQ_BATCH_BYTES) == (1_048_576, 262_144)
    monkeypatch.setenv(env.DLQ_MAX_MESSAGE_BYTES, "262144")
    assert dlq_limits() == (262_144, 262_144)
    big = [entry(i, "x" * 200_000) for i in range(3)]
    assert [len(c) for c in chunk_quarantine(big)] == [1, 1, 1]
    monkeypatch.setenv(env.DLQ_MAX_MESSAGE_BYTES, "1048576")
    assert dlq_limits() == (1_048_576, 1_048_576)
    assert [len(c) for c in chunk_quarantine(big)] == [3]


_names = st.text(st.characters(min_codepoint=48, max_codepoint=122), min_size=1, max_size=40)
_values = st.one_of(
    st.text(min_size=1, max_size=30_000).map(lambda t: {"stringValue": t, "dataType": "String"}),
    st.binary(min_size=1, max_size=30_000).map(
        lambda b: {"binaryValue": base64.b64encode(b).decode(), "dataType": "Binary"}
    ),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bodies=st.lists(st.integers(min_value=1, max_value=300_000), min_size=1, max_size=14),
    attributes=st.dictionaries(_names, _values, max_size=14),
    limit=st.sampled_from([1_024, 64 * KIB, 256 * KIB, 1_024 * KIB]),
)
def test_every_copy_and_every_batch_fits_as_sqs_counts_it(
    bodies: list[int], attributes: dict[str, Any], limit: int
) -> None:
    entries = [entry(i, "x" * size, attributes) for i, size in enumerate(bodies)]
    chunks = chunk_quarantine(entries, max_message_bytes=limit)
    assert [e.entry_id for chunk in chunks for e in chunk] == [e.entry_id for e in entries]
    for chunk in chunks:
        assert 1 <= len(chunk) <= 10
        total = 0
        for one in chunk:
            message = fitted_message(one, limit)
            # Class, kind, the reason (>= 64 bytes) and the message id take ~170 bytes.
            assert message is not None or len(one.body) + 170 > limit
            if message is None:  # cannot fit even the reason: alone, never sent
                assert len(chunk) == 1
                continue
            attrs = message["MessageAttributes"]
            assert len(attrs) <= 10 and ATTR_FAILURE_REASON in attrs
            size = sqs_size(message)
            assert size <= limit
            total += size
        assert total <= min(limit, moto_patches.SQS_MAX_BATCH_BYTES)


def test_sqs_batch_refusals_are_permanent_in_both_code_forms() -> None:
    """SQS's JSON protocol reports query-compatible codes (x-amzn-query-error), which botocore
    surfaces as "AWS.SimpleQueueService.<Code>"; the bare form is the query protocol's."""
    from idempotent_messaging.runtime import errors

    for code in ("BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong"):
        assert errors.code_kind("sqs", code) is errors.CodeKind.INVALID
    assert (
        errors.code_kind("sqs", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest")
        is errors.CodeKind.INVALID
    )
