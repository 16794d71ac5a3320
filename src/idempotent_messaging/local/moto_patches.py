"""moto gaps the runtime's requests meet, filled in moto's own table model.

Test and emulator tooling only (the tests, the embedded emulator, the demo and the benchmark
install it); production code never bends around an emulator. Each gap has a test that fails
on stock moto (tests/integration/test_runtime_moto_gaps.py): when moto closes it, that test
says so and the patch goes.

PartiQL ``UPDATE`` in ``BatchExecuteStatement`` (moto 5.2.5 with py-partiql-parser 0.6.3):

1. the documented multi-attribute form, one ``SET`` clause per attribute
   (``UPDATE "t" SET a = ? SET b = ? WHERE k = ?``, DynamoDB developer guide "PartiQL update
   statements"), is refused by the parser with an empty error;
2. an ``UPDATE`` whose ``WHERE`` matches no item succeeds silently, where DynamoDB answers
   ``ConditionalCheckFailed`` ("If the WHERE clause of the UPDATE statement does not evaluate
   to true for any item in the DynamoDB table, ConditionalCheckFailedException is returned");
3. every statement serialises every table to JSON first: O(table size) per statement.

PartiQL ``INSERT`` in ``BatchExecuteStatement`` (the single-item claim on a standard queue):

4. a parameterised tuple (``INSERT INTO "t" VALUE {'a': ?, 'b': ?}``, developer guide "PartiQL
   insert statements" and "Running batch operations with PartiQL") makes moto raise TypeError
   (the parser hands it a placeholder object), so the whole call fails;
5. the same O(table size) serialisation per statement.

Limits and atomicity moto does not enforce for BatchExecuteStatement, which the patch adds
because a lenient emulator hides or invents defects (DynamoDB API reference,
"BatchExecuteStatement" and "BatchStatementRequest"):

6. at most 25 statements per call ("Statements: Array Members: Minimum number of 1 item.
   Maximum number of 25 items"): more is a ValidationException for the whole call;
7. each statement at most 8,192 characters ("Statement: Length Constraints: Minimum length of
   1. Maximum length of 8192"): a longer one is a ValidationException for the whole call;
8. an UPDATE that would grow its item past 400 KB fails THAT statement (``ValidationError``),
   the others still run: each statement of a batch gets its own answer;
9. an INSERT is atomic: of two concurrent INSERTs of one key exactly one succeeds. moto's
   backend is not thread-safe (the threaded server serves requests concurrently), so every
   DynamoDB write the runtime makes (PutItem, UpdateItem, DeleteItem, TransactWriteItems,
   BatchWriteItem, BatchExecuteStatement) runs under one backend-wide lock: each request is
   atomic with respect to every other, as DynamoDB's single-item writes and transactions are.

The patch executes the narrow forms the runtime sends, directly on moto's table:

* ``UPDATE "<table>" SET "<a>" = ? [SET "<b>" = ? ...] WHERE "<key>" = ? [AND "<attribute>" =
  ? ...]`` (every value a parameter): the item is found by its key, every ``WHERE`` equality must
  hold or the statement fails with ``ConditionalCheckFailed``, then the ``SET`` values apply;
* ``INSERT INTO "<table>" VALUE {'<a>': ?, ...}``: an item with the same key fails the statement
  with ``DuplicateItem`` (DynamoDB: "DuplicateItemException is returned"), else moto's own
  PutItem stores it (with its validation). The refusal carries no item, whatever
  ``ReturnValuesOnConditionCheckFailure`` says: AWS documents the item only for failed
  conditions, so the runtime must (and does) read it.

Any other statement goes to moto unchanged.

SQS ``SendMessageBatch`` (the DLQ copies of the consumer runtime, the dispatcher's work queue):

10. moto sizes a batch by the characters of its bodies alone; SQS counts, per message, the body
    and every message attribute's name, data type and value (UTF-8 bytes; binary values as
    sent), and refuses the whole call when one message exceeds the queue's
    ``MaximumMessageSize`` or the sum exceeds 1 MiB ("The maximum allowed individual message
    size and the maximum total payload size (the sum of the individual lengths of all of the
    batched messages) are both 1 MiB"; "All parts of the message attribute, including Name,
    Type, and Value, are part of the message size restriction", SQS API reference,
    SendMessageBatch and MessageAttributeValue). The patch measures each entry that way before
    moto's own checks run (its stock-moto gap test: tests/integration/
    test_runtime_audit2_limits_dlq.py).

SQS ``ReceiveMessage``, ``DeleteMessage(Batch)``, ``ChangeMessageVisibility(Batch)`` (the
emulator's pollers under load):

11. moto's receive costs O(queue depth) per MESSAGE it returns (each one re-reads every queue
    attribute, which counts every message, to check retention), its delete and visibility change
    O(depth) per receipt handle, and none of them holds a lock while the threaded server serves
    concurrent pollers (two receives can take one message, a delete can race a receive): with
    500 messages queued a receive of 10 took ~1.3 s. The patch serves all three from the
    queue's own lock, walking the queue once per receive and finding a receipt handle in an
    index, and keeps SQS's contract (SQS API reference, ReceiveMessage, DeleteMessage,
    ChangeMessageVisibility; developer guide "Amazon SQS visibility timeout", "FIFO queue
    logic", "Using dead-letter queues"): a received message is invisible for the visibility
    timeout and its ApproximateReceiveCount grows by one per receive; a delayed message is not
    received; a message past the queue's retention period is deleted, never received; on a FIFO
    queue, a message group with a message in flight delivers nothing else until that message is
    deleted or visible again, and a group's messages come in order; a message received
    maxReceiveCount times moves to the dead-letter queue when it would be received again; a
    DeleteMessage with any receipt handle but the most recent one of its message "succeeds, but
    the message will not be deleted" (moto deleted it). Contract tests:
    tests/integration/test_moto_patch_contract.py.
12. moto's SendMessage re-reads every queue attribute for each message it adds (to learn
    ContentBasedDeduplication), and three of them count every message: filling a queue with n
    messages cost O(n^2) (5,000 messages: minutes). The patch keeps the three approximate
    counts (ApproximateNumberOfMessages, ...NotVisible, ...Delayed) with moto's own definitions,
    counting a new message on arrival and everything again only after a message is removed,
    received or changes visibility, or a visibility timeout or delay ends.

Not a gap but an emulator clock (``set_visibility_scale``): visibility timeouts (a receive's,
ChangeMessageVisibility's) last ``scale`` times as long, so a failed record returns after the
queue's visibility timeout on an accelerated clock (0.01: the dev stack's 190 s in 1.9 s).
Delays and retention keep real time. Default 1: SQS's own durations.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from moto.core.utils import unix_time, unix_time_millis
from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.sqs.exceptions import BatchRequestTooLong, InvalidParameterValue, ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend, _filter_message_attributes

MAX_STATEMENTS = 25
"""BatchExecuteStatement: 1-25 statements per call."""
MAX_STATEMENT_CHARACTERS = 8192
"""BatchStatementRequest.Statement: at most 8,192 characters."""
WRITES = (
    "put_item",
    "update_item",
    "delete_item",
    "transact_write_items",
    "batch_write_item",
    "batch_execute_statement",
)
"""The backend's write entry points, serialised by one lock (item 9 above)."""

_UPDATE = re.compile(
    r'^\s*UPDATE\s+"(?P<table>[^"]+)"\s+(?P<sets>(?:SET\s+"[^"]+"\s*=\s*\?\s*)+)'
    r"WHERE\s+(?P<where>.+?)\s*$",
    re.IGNORECASE | re.DOTALL,
)
_SET = re.compile(r'SET\s+"([^"]+)"\s*=\s*\?', re.IGNORECASE)
_INSERT = re.compile(
    r'^\s*INSERT\s+INTO\s+"(?P<table>[^"]+)"\s+VALUE\s+\{(?P<fields>.*)\}\s*$',
    re.IGNORECASE | re.DOTALL,
)
_FIELD = re.compile(r"\s*'((?:[^']|'')*)'\s*:\s*\?\s*(?:,|$)")
_EQUALS = re.compile(r'^"([^"]+)"\s*=\s*\?$')
_AND = re.compile(r"\s+AND\s+", re.IGNORECASE)

SQS_MAX_BATCH_BYTES = 1_048_576
"""SendMessageBatch: the sum of the entries' sizes (body + attributes) is at most 1 MiB."""

_original_batch_execute = DynamoDBBackend.batch_execute_statement
_original_send_message_batch = SQSBackend.send_message_batch
_SQS_STOCK = {
    "receive_message": SQSBackend.receive_message,
    "delete_message": SQSBackend.delete_message,
    "change_message_visibility": SQSBackend.change_message_visibility,
}
_original_change_visibility = Message.change_visibility
_COUNTS = (
    "approximate_number_of_messages",
    "approximate_number_of_messages_not_visible",
    "approximate_number_of_messages_delayed",
)
_stock_counts = {name: getattr(Queue, name) for name in _COUNTS}
_generation = 0  # bumped by install()/uninstall(): counts cached by one are not the other's
MAX_VISIBILITY_TIMEOUT_S = 43_200
"""ChangeMessageVisibility: no visibility past 12 hours from the message's receipt."""
_visibility_scale = 1.0
# What install() found on the backend (moto's own, or another process-wide patch such as the
# benchmark's fast transaction copy): wrapped in the write lock, not replaced (except
# batch_execute_statement, whose narrow forms this module runs itself, falling back to moto's
# own), and put back by uninstall().
_before_install: dict[str, Any] = {}
_lock = threading.Lock()
_write_lock = threading.RLock()  # re-entrant: a batch statement falls back to moto's own writes
_installed = False


@dataclass(frozen=True)
class _Update:
    table: str
    sets: list[str]
    where: list[str]


def _parse(statement: str) -> _Update | None:
    match = _UPDATE.match(statement)
    if match is None:
        return None
    where = []
    for condition in _AND.split(match["where"]):
        equals = _EQUALS.match(condition.strip())
        if equals is None:
            return None
        where.append(equals[1])
    return _Update(match["table"], _SET.findall(match["sets"]), where)


@dataclass(frozen=True)
class _Insert:
    table: str
    names: list[str]


def _parse_insert(statement: str) -> _Insert | None:
    match = _INSERT.match(statement)
    if match is None:
        return None
    fields, names, position = match["fields"], [], 0
    while position < len(fields):
        field = _FIELD.match(fields, position)
        if field is None:
            return None
        names.append(field[1].replace("''", "'"))
        position = field.end()
    return _Insert(match["table"], names) if names else None


def _insert(backend: DynamoDBBackend, insert: _Insert, parameters: list[Any]) -> dict[str, Any]:
    if len(parameters) != len(insert.names):
        return _failed("ValidationError", "Number of parameters in request and statement differ")
    table = backend.tables.get(insert.table)
    if table is None:
        return _failed("ResourceNotFound", "Requested resource not found")
    item = dict(zip(insert.names, parameters, strict=True))
    if any(name and name not in item for name in (table.hash_key_attr, table.range_key_attr)):
        return _failed("ValidationError", "One or more parameter values were invalid: missing key")
    hash_key = DynamoType(item[table.hash_key_attr])
    range_key = DynamoType(item[table.range_key_attr]) if table.range_key_attr else None
    if table.get_item(hash_key, range_key) is not None:
        return _failed("DuplicateItem", "Duplicate primary key exists in table")
    try:
        backend.put_item(insert.table, item)
    except Exception as exc:  # moto's own validation (sizes, types, empty keys)
        return _failed("ValidationError", str(getattr(exc, "message", exc)))
    return {"TableName": insert.table}


def _failed(code: str, message: str) -> dict[str, Any]:
    return {"Error": {"Code": code, "Message": message}}


def _execute(backend: DynamoDBBackend, update: _Update, parameters: list[Any]) -> dict[str, Any]:
    if len(parameters) != len(update.sets) + len(update.where):
        return _failed("ValidationError", "Number of parameters in request and statement differ")
    table = backend.tables.get(update.table)
    if table is None:
        return _failed("ResourceNotFound", "Requested resource not found")
    values = dict(zip(update.sets, parameters[: len(update.sets)], strict=True))
    expected = dict(zip(update.where, parameters[len(update.sets) :], strict=True))
    key_names = [table.hash_key_attr, table.range_key_attr]
    if any(name and name not in expected for name in key_names):
        return _failed("ValidationError", "Where clause does not contain a mandatory equality")
    if any(name in key_names for name in values):
        return _failed("ValidationError", "Cannot update attribute: it is part of the key")
    hash_key = DynamoType(expected[table.hash_key_attr])
    range_key = DynamoType(expected[table.range_key_attr]) if table.range_key_attr else None
    item = table.get_item(hash_key, range_key)
    if item is None or any(
        item.attrs.get(name) != DynamoType(value) for name, value in expected.items()
    ):
        return _failed("ConditionalCheckFailed", "The conditional request failed")
    attributes = item.to_json()["Attributes"]
    attributes.update(values)
    try:
        table.put_item(attributes)
    except MockValidationException as exc:  # past 400 KB: this statement fails, not the call
        return _failed("ValidationError", exc.exception_msg)
    return {"TableName": update.table}


def _validate_batch(statements: list[dict[str, Any]]) -> None:
    if not 1 <= len(statements) <= MAX_STATEMENTS:
        raise MockValidationException(
            f"1 validation error detected: Value at 'statements' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_STATEMENTS} and greater than or "
            f"equal to 1 (got {len(statements)})"
        )
    for index, statement in enumerate(statements, start=1):
        if len(statement.get("Statement") or "") > MAX_STATEMENT_CHARACTERS:
            raise MockValidationException(
                f"1 validation error detected: Value at 'statements.{index}.member.statement' "
                f"failed to satisfy constraint: Member must have length less than or equal to "
                f"{MAX_STATEMENT_CHARACTERS}"
            )


def _batch_execute_statement(
    self: DynamoDBBackend, statements: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    _validate_batch(statements)
    answers: list[dict[str, Any] | None] = [None] * len(statements)
    others: list[int] = []
    for index, statement in enumerate(statements):
        parameters = list(statement.get("Parameters") or [])
        update = _parse(statement["Statement"])
        insert = _parse_insert(statement["Statement"]) if update is None else None
        if update is not None:
            answers[index] = _execute(self, update, parameters)
        elif insert is not None:
            answers[index] = _insert(self, insert, parameters)
        else:
            others.append(index)
    if others:
        stock = _original_batch_execute(self, [statements[i] for i in others])
        for index, answer in zip(others, stock, strict=True):
            answers[index] = answer
    return [answer or {} for answer in answers]


def _serialised(write: Any) -> Any:
    def locked(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
        with _write_lock:
            return write(self, *args, **kwargs)

    locked.__name__ = write.__name__
    locked.__doc__ = write.__doc__
    return locked


def _utf8(text: Any) -> int:
    return len(str(text).encode("utf-8", "surrogatepass"))


def _binary_length(value: Any) -> int:
    """A BinaryValue as the backend holds it: base64 text (JSON protocol) or bytes."""
    if isinstance(value, bytes | bytearray):
        return len(value)
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return _utf8(value)


def sqs_message_size(entry: dict[str, Any]) -> int:
    """The bytes SQS counts for one message: its body plus, per message attribute, the name,
    the data type and the value (item 10 above)."""
    size = _utf8(entry.get("MessageBody") or "")
    for name, value in (entry.get("MessageAttributes") or {}).items():
        size += _utf8(name) + _utf8(value.get("DataType") or "")
        if value.get("StringValue") is not None:
            size += _utf8(value["StringValue"])
        if value.get("BinaryValue") is not None:
            size += _binary_length(value["BinaryValue"])
    return size


def _send_message_batch(
    self: SQSBackend, queue_name: str, entries: dict[str, dict[str, Any]]
) -> Any:
    queue = self.get_queue(queue_name)
    limit = int(queue.maximum_message_size)  # type: ignore[attr-defined]
    sizes = [sqs_message_size(entry) for entry in entries.values()]
    for size in sizes:
        if size > limit:
            raise InvalidParameterValue(
                "One or more parameters are invalid. Reason: Message must be shorter than "
                f"{limit} bytes."
            )
    if sum(sizes) > SQS_MAX_BATCH_BYTES:
        raise BatchRequestTooLong(sum(sizes))
    return _original_send_message_batch(self, queue_name, entries)


# --- SQS: receive, delete and visibility changes that keep the contract at any depth (item 11) --


def set_visibility_scale(scale: float) -> None:
    """Visibility timeouts last ``scale`` times as long (0 < scale <= 1; 1: real time)."""
    global _visibility_scale
    if not 0 < scale <= 1:
        raise ValueError(f"visibility scale {scale!r} must be > 0 and <= 1 (1: SQS's own time)")
    _visibility_scale = float(scale)


def visibility_scale() -> float:
    return _visibility_scale


def _change_visibility(self: Message, visibility_timeout: int) -> None:
    self.visible_at = unix_time_millis() + int(visibility_timeout) * 1000 * _visibility_scale


def _handles(queue: Queue) -> dict[str, Message]:
    """The queue's index: a message's MOST RECENT receipt handle -> the message."""
    index: dict[str, Message] | None = getattr(queue, "_current_handles", None)
    if index is None:
        index = {m.receipt_handle: m for m in queue._messages if m.receipt_handle}
        queue._current_handles = index  # type: ignore[attr-defined]
    return index


def _receive_message(
    self: SQSBackend,
    queue_name: str,
    count: int,
    wait_seconds_timeout: int,
    visibility_timeout: int,
    message_attribute_names: list[str] | None = None,
) -> list[Message]:
    queue = self.get_queue(queue_name)
    deadline = unix_time() + wait_seconds_timeout
    while True:
        with queue._messages_lock:
            received = _take(queue, count, visibility_timeout, message_attribute_names or [])
            left = deadline - unix_time()
            if received or left <= 0:
                return received
            queue._messages_lock.wait(timeout=min(1.0, left))  # add_message notifies


def _take(queue: Queue, count: int, visibility_timeout: int, names: list[str]) -> list[Message]:
    """One pass over the queue in order (the caller holds the queue's lock)."""
    now = unix_time_millis()
    retention_ms = int(queue.message_retention_period) * 1000  # type: ignore[attr-defined]
    in_flight_groups: set[str] = set()
    for message in list(queue._pending_messages):
        if now > message.visible_at:  # visible again: its receiver let it go or timed out
            queue._pending_messages.discard(message)
        elif message.group_id is not None:
            in_flight_groups.add(message.group_id)
    redrive = queue.redrive_policy if queue.dead_letter_queue is not None else None
    handles = _handles(queue)
    received: list[Message] = []
    expired: list[Message] = []
    dead: list[Message] = []
    for message in queue._messages:
        if now <= message.visible_at or now < message.delayed_until:
            continue
        if queue.fifo_queue and message.group_id in in_flight_groups:
            continue
        if int(message.sent_timestamp or 0) + retention_ms <= now:
            expired.append(message)
            continue
        if redrive and message.approximate_receive_count >= int(redrive["maxReceiveCount"]):
            dead.append(message)
            continue
        if message.receipt_handle:
            handles.pop(message.receipt_handle, None)
        message.mark_received(visibility_timeout=visibility_timeout)
        handles[str(message.receipt_handle)] = message
        queue._pending_messages.add(message)
        shown = copy.copy(message)  # the answer's copy: its attributes filtered, not the message's
        _filter_message_attributes(shown, names)
        received.append(shown)
        if len(received) >= count:
            break
    if received or expired or dead:
        _changed(queue)
    for message in (*expired, *dead):
        queue._messages.remove(message)
        handles.pop(message.receipt_handle or "", None)
    if dead:
        dlq = queue.dead_letter_queue
        assert dlq is not None
        with dlq._messages_lock:
            _handles(dlq)  # indexed before the move: the source queue's receipts are not the DLQ's
            for message in dead:
                dlq.add_message(message)
    return received


def _delete_message(self: SQSBackend, queue_name: str, receipt_handle: str) -> None:
    queue = self.get_queue(queue_name)
    with queue._messages_lock:
        message = _handles(queue).pop(receipt_handle, None)
        if message is None:
            if receipt_handle in queue.deleted_messages or any(
                m.had_receipt_handle(receipt_handle) for m in queue._messages
            ):
                return  # deleted already, or an older receipt: succeeds, deletes nothing
            raise ReceiptHandleIsInvalid()
        with contextlib.suppress(ValueError):  # purged since it was received
            queue._messages.remove(message)
        queue._pending_messages.discard(message)
        queue.deleted_messages.update(h for h in message.all_receipt_handles if h)


def _change_message_visibility(
    self: SQSBackend, queue_name: str, receipt_handle: str, visibility_timeout: int
) -> None:
    queue = self.get_queue(queue_name)
    with queue._messages_lock:
        message = _handles(queue).get(receipt_handle)
        if message is None:
            message = next(
                (m for m in queue._messages if m.had_receipt_handle(receipt_handle)), None
            )
        if message is None:
            raise ReceiptHandleIsInvalid
        until = unix_time_millis() + int(visibility_timeout) * 1000
        if until - message.sent_timestamp > MAX_VISIBILITY_TIMEOUT_S * 1000:  # type: ignore[operator]
            raise InvalidParameterValue(
                f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. Reason: "
                f"Total VisibilityTimeout for the message is beyond the limit "
                f"[{MAX_VISIBILITY_TIMEOUT_S} seconds]"
            )
        message.change_visibility(visibility_timeout)
        _changed(queue)
        if unix_time_millis() > message.visible_at:
            queue._pending_messages.discard(message)


@dataclass
class _Counts:
    """A queue's three approximate counts, valid until a message is added (counted on
    arrival), removed, received or changes visibility, or a visibility or delay ends."""

    messages: list[Message]
    length: int
    epoch: tuple[int, int]
    visible: int = 0
    not_visible: int = 0
    delayed: int = 0
    visible_from: float = float("inf")  # the earliest in-flight message's visible_at
    delayed_until: float = float("inf")  # the earliest delayed message's delayed_until

    def add(self, message: Message, now: float) -> None:
        # moto's own definitions: visible once now > visible_at; delayed while now < delayed_until
        if now <= message.visible_at:
            self.not_visible += 1
            self.visible_from = min(self.visible_from, message.visible_at)
        elif now >= message.delayed_until:
            self.visible += 1
        if now < message.delayed_until:
            self.delayed += 1
            self.delayed_until = min(self.delayed_until, message.delayed_until)


def _changed(queue: Queue) -> None:
    queue._count_epoch = getattr(queue, "_count_epoch", 0) + 1  # type: ignore[attr-defined]


def _counts(queue: Queue) -> _Counts:
    with queue._messages_lock:
        now = unix_time_millis()
        messages = queue._messages
        epoch = (_generation, getattr(queue, "_count_epoch", 0))
        cached: _Counts | None = getattr(queue, "_counts_cache", None)
        if (
            cached is None
            or cached.messages is not messages
            or cached.epoch != epoch
            or len(messages) < cached.length
            or now > cached.visible_from
            or now >= cached.delayed_until
        ):
            cached = _Counts(messages, 0, epoch)
        for message in messages[cached.length :]:  # everything, or what arrived since
            cached.add(message, now)
        cached.length = len(messages)
        queue._counts_cache = cached  # type: ignore[attr-defined]
        return cached


_fast_counts = {
    "approximate_number_of_messages": property(lambda q: _counts(q).visible),
    "approximate_number_of_messages_not_visible": property(lambda q: _counts(q).not_visible),
    "approximate_number_of_messages_delayed": property(lambda q: _counts(q).delayed),
}


def install() -> None:
    """Patch moto's DynamoDB and SQS backends (process-wide, idempotent)."""
    global _installed, _generation
    with _lock:
        if _installed:
            return
        for name in WRITES:
            current = getattr(DynamoDBBackend, name)
            _before_install[name] = current
            replacement = _batch_execute_statement if name == "batch_execute_statement" else current
            setattr(DynamoDBBackend, name, _serialised(replacement))
        SQSBackend.send_message_batch = _send_message_batch  # type: ignore[method-assign]
        SQSBackend.receive_message = _receive_message  # type: ignore[method-assign]
        SQSBackend.delete_message = _delete_message  # type: ignore[method-assign]
        SQSBackend.change_message_visibility = _change_message_visibility  # type: ignore[method-assign]
        Message.change_visibility = _change_visibility  # type: ignore[method-assign]
        _generation += 1
        for name, counted in _fast_counts.items():
            setattr(Queue, name, counted)
        _installed = True


def uninstall() -> None:
    global _installed, _generation
    with _lock:
        if not _installed:
            return
        for name, before in _before_install.items():
            setattr(DynamoDBBackend, name, before)
        SQSBackend.send_message_batch = _original_send_message_batch  # type: ignore[method-assign]
        for name, stock in _SQS_STOCK.items():
            setattr(SQSBackend, name, stock)
        Message.change_visibility = _original_change_visibility  # type: ignore[method-assign]
        _generation += 1
        for name, stock in _stock_counts.items():
            setattr(Queue, name, stock)
        _installed = False


@contextmanager
def stock_moto() -> Iterator[None]:
    """moto as released, for the tests that document its gaps."""
    was_installed = _installed
    uninstall()
    try:
        yield
    finally:
        if was_installed:
            install()
