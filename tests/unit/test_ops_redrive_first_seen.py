"""Issue 37, item 1: every redrive path carries or establishes the oldest first-seen time it
can prove, or refuses (docs/operations.md, "redrive").

AWS facts:
* "The redrive task resets the retention period. All redriven messages are considered new
  messages with a new messageID and enqueueTime" (SQS Developer Guide, "Learn how to configure
  a dead-letter queue redrive"): a redriven message's SentTimestamp says nothing of its age.
* A standard DLQ keeps the original enqueue time of a message its redrive policy moved; a FIFO
  DLQ resets it (SQS Developer Guide, "Using dead-letter queues in Amazon SQS", retention).
* A message carries at most 10 message attributes (SQS API reference, SendMessage).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from idempotent_messaging.ops import dlq
from idempotent_messaging.runtime import env

pytestmark = pytest.mark.unit

FIRST_SEEN = env.FIRST_SEEN_ATTRIBUTE
DAY = 86_400
SENT_MS = 1_800_000_000_000


def _message(attributes: dict[str, Any] | None = None, **system: str) -> dict[str, Any]:
    return {
        "MessageId": "m-1",
        "ReceiptHandle": "h-1",
        "Body": '{"event_id": "e1"}',
        "Attributes": {"SentTimestamp": str(SENT_MS), **system},
        "MessageAttributes": attributes or {},
    }


def _stamped(entry: dict[str, Any]) -> int:
    value = entry["MessageAttributes"][FIRST_SEEN]
    assert value["DataType"] == "Number"
    return int(value["StringValue"])


def test_a_bare_standard_copy_is_stamped_with_its_dlq_sent_timestamp() -> None:
    """A standard DLQ kept the original's enqueue time: that time is proved."""
    entry = dlq._send_entry(_message(), fifo=False, dedup_id=None)
    assert _stamped(entry) == SENT_MS


def test_a_bare_fifo_copy_is_stamped_one_source_retention_before_its_dlq_sent_timestamp() -> None:
    """A FIFO DLQ reset the enqueue time when SQS moved the copy, up to one source retention
    after the original was sent: the copy is stamped with the earliest time it can be (the
    protocol model's ``fifo-stamps-dlq-time`` mutation shows the second effect otherwise)."""
    message = _message(MessageGroupId="g")
    entry = dlq._send_entry(message, fifo=True, dedup_id="d", source_retention_s=4 * DAY)
    assert _stamped(entry) == SENT_MS - 4 * DAY * 1000
    assert dlq.bare_first_seen_ms(message, True, 4 * DAY) == SENT_MS - 4 * DAY * 1000


def test_a_copy_carrying_its_first_seen_time_keeps_it_whatever_its_sent_timestamp() -> None:
    carried = {FIRST_SEEN: {"DataType": "Number", "StringValue": "1700000000000"}}
    for fifo in (False, True):
        message = _message(carried, MessageGroupId="g")
        entry = dlq._send_entry(message, fifo=fifo, dedup_id=None, source_retention_s=DAY)
        assert _stamped(entry) == 1_700_000_000_000


@pytest.mark.parametrize(
    ("message", "fifo", "retention", "why"),
    [
        (
            _message({f"a{i}": {"DataType": "String", "StringValue": "x"} for i in range(10)}),
            False,
            None,
            "10 message attributes",
        ),
        (_message(MessageGroupId="g"), True, None, "retention is unknown"),
    ],
    ids=["no-room-for-the-attribute", "fifo-retention-unknown"],
)
def test_a_bare_copy_whose_first_seen_time_cannot_be_carried_is_refused(
    message: dict[str, Any], fifo: bool, retention: int | None, why: str
) -> None:
    """Before, such a copy was redriven without a first-seen time: a new message, first seen
    when redriven, that could pass the horizon after its claim expired."""
    with pytest.raises(dlq.RedriveRefused, match=why):
        dlq._send_entry(message, fifo=fifo, dedup_id=None, source_retention_s=retention)


class FakeSqs:
    """Just enough SQS for the redrive paths; records what was called."""

    def __init__(self, messages: list[dict[str, Any]], move: Exception | None = None) -> None:
        self.messages = list(messages)
        self.move = move
        self.calls: list[str] = []
        self.sent: list[dict[str, Any]] = []

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> Any:
        self.calls.append("GetQueueAttributes")
        name = QueueUrl.rsplit("/", 1)[1]
        return {
            "Attributes": {
                "QueueArn": f"arn:aws:sqs:r:1:{name}",
                "MessageRetentionPeriod": str(4 * DAY),
            }
        }

    def start_message_move_task(self, **kwargs: Any) -> Any:
        self.calls.append("StartMessageMoveTask")
        if self.move is not None:
            raise self.move
        return {"TaskHandle": "t-1"}

    def list_message_move_tasks(self, **kwargs: Any) -> Any:
        return {"Results": [{"Status": "COMPLETED", "ApproximateNumberOfMessagesMoved": 1}]}

    def receive_message(self, **kwargs: Any) -> Any:
        self.calls.append("ReceiveMessage")
        batch, self.messages = self.messages[:10], self.messages[10:]
        return {"Messages": batch}

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        self.calls.append("SendMessageBatch")
        self.sent += Entries
        return {"Successful": [{"Id": e["Id"]} for e in Entries]}

    def delete_message(self, **kwargs: Any) -> Any:
        self.calls.append("DeleteMessage")

    def change_message_visibility_batch(self, **kwargs: Any) -> Any:
        self.calls.append("ChangeMessageVisibilityBatch")


def test_redrive_defaults_to_the_manual_move_and_never_starts_a_native_task() -> None:
    """The native move task establishes nothing for a bare copy, so it is never chosen for
    the operator (before, ``auto`` started it first wherever the endpoint had it)."""
    for method in ("manual", "auto"):
        fake = FakeSqs([_message()])
        report = dlq.redrive(fake, "https://q/1/dlq", "https://q/1/src", method=method)
        assert (report.method, report.moved) == ("manual", 1)
        assert "StartMessageMoveTask" not in fake.calls
        assert _stamped(fake.sent[0]) == SENT_MS
    default = FakeSqs([_message()])
    assert dlq.redrive(default, "https://q/1/dlq", "https://q/1/src").method == "manual"


def test_a_refused_message_stays_in_the_dlq_and_the_rest_moves() -> None:
    crowded = _message({f"a{i}": {"DataType": "String", "StringValue": "x"} for i in range(10)})
    crowded["MessageId"] = "crowded"
    fake = FakeSqs([crowded, _message()])
    report = dlq.redrive(fake, "https://q/1/dlq", "https://q/1/src")
    assert (report.moved, report.refused) == (1, 1)
    assert any("crowded" in note for note in report.notes)
    assert fake.calls.count("DeleteMessage") == 1


def test_a_native_move_denied_by_the_dlq_policy_names_the_opt_out_and_the_manual_move() -> None:
    denied = ClientError(
        {"Error": {"Code": "AccessDenied", "Message": "explicit deny"}}, "StartMessageMoveTask"
    )
    fake = FakeSqs([], move=denied)
    with pytest.raises(dlq.OpsError) as refused:
        dlq.redrive(fake, "https://q/1/dlq", "https://q/1/src", method="native")
    text = str(refused.value)
    assert "allow_native_dlq_redrive" in text and "--method manual" in text
    assert "first-seen" in text


def test_the_native_move_where_allowed_says_what_it_cannot_establish() -> None:
    fake = FakeSqs([])
    report = dlq.redrive(fake, "https://q/1/dlq", "https://q/1/src", method="native")
    assert (report.method, report.task_handle, report.moved) == ("native", "t-1", 1)
    assert dlq.NATIVE_MOVE_CAVEAT in report.notes
