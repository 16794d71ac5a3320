"""Coverage-guided fuzz target (atheris) for decode + plug-in dispatch of the consumer runtime.

Each input becomes one SQS batch: a fuzzed record (body bytes decoded as UTF-8 with surrogate
escapes, so any text reaches the decoder; optionally a FIFO group; optionally a plug-in
exception) between two healthy neighbours, run through the orders consumer with in-memory
AWS clients. The invariant: no exception escapes, every record ends processed, quarantined
alone or failed alone, and the neighbours are processed (on FIFO: unless their group is held
by the fuzzed record's failure).

    python -m tests.fuzz.runtime_target -runs=2000          # bounded (the pytest wrapper)
    make fuzz                                               # longer run
"""

from __future__ import annotations

import json
import sys
from typing import Any

EXCEPTIONS: list[type[Exception]] = [ZeroDivisionError, RuntimeError, LookupError, OSError]


class _Dynamo:
    def transact_write_items(self, TransactItems: list[Any]) -> dict[str, Any]:
        json.dumps(TransactItems)  # what botocore would have to serialise
        return {}

    def batch_get_item(self, **_: Any) -> dict[str, Any]:
        return {"Responses": {}}

    def update_item(self, **_: Any) -> dict[str, Any]:
        return {}

    def put_item(self, Item: dict[str, Any], **_: Any) -> dict[str, Any]:
        json.dumps(Item)  # the batch's publish receipt
        return {}

    def batch_execute_statement(self, Statements: list[Any]) -> dict[str, Any]:
        json.dumps(Statements)
        return {"Responses": [{} for _ in Statements]}


class _Sns:
    def publish_batch(self, PublishBatchRequestEntries: list[Any], **_: Any) -> dict[str, Any]:
        return {
            "Successful": [
                {"Id": e["Id"], "MessageId": f"m-{e['Id']}"} for e in PublishBatchRequestEntries
            ]
        }


class _Sqs:
    def send_message_batch(self, Entries: list[Any], **_: Any) -> dict[str, Any]:
        return {"Successful": [{"Id": e["Id"]} for e in Entries]}


def _runtime() -> Any:
    from idempotent_messaging.runtime import Runtime, Settings

    return Runtime(
        Settings(
            state_table="state",
            business_table="orders",
            topic_arn="arn:aws:sns:ap-northeast-1:123456789012:orders",
            dlq_url="https://sqs.ap-northeast-1.amazonaws.com/123456789012/dlq",
            remaining_time_guard_ms=0,
        ),
        _Dynamo(),
        _Sns(),
        _Sqs(),
    )


def _record(index: int, body: str, group: str | None) -> dict[str, Any]:
    attributes = {"ApproximateReceiveCount": "1"}
    if group is not None:
        attributes["MessageGroupId"] = group
    return {
        "messageId": f"m{index}",
        "body": body,
        "attributes": attributes,
        "messageAttributes": {},
        "eventSourceARN": "arn:aws:sqs:ap-northeast-1:123456789012:orders"
        + (".fifo" if group is not None else ""),
    }


def check(data: bytes) -> None:
    """One fuzz input; raises AssertionError when the promise breaks."""
    from handlers.orders import order_notification, order_writes
    from idempotent_messaging.runtime import Consumer

    head, body_bytes = data[:2], data[2:]
    flags = head[0] if head else 0
    fifo = bool(flags & 1)
    raise_at = (flags >> 1) & 3  # 0: none, 1: writes, 2: notification
    exception = EXCEPTIONS[(head[1] if len(head) > 1 else 0) % len(EXCEPTIONS)]
    body = body_bytes.decode("utf-8", errors="surrogateescape")

    def writes(message: Any, ctx: Any) -> Any:
        if raise_at == 1 and ctx.message_id == "m1":
            raise exception("fuzz")
        return order_writes(message, ctx)

    def notification(message: Any, event_id: str) -> Any:
        if raise_at == 2 and event_id not in ("n0", "n2"):
            raise exception("fuzz")
        return order_notification(message, event_id)

    consumer = Consumer(writes=writes, notification=notification, namespace="order")
    good = [
        json.dumps({"event_id": f"n{i}", "order": {"order_id": f"o{i}", "amount": 1}})
        for i in (0, 2)
    ]
    groups = ["g", "g" if flags & 8 else "h", "g"] if fifo else [None, None, None]
    records = [
        _record(0, good[0], groups[0]),
        _record(1, body, groups[1]),
        _record(2, good[1], groups[2]),
    ]
    response = consumer.process({"Records": records}, None, _runtime())
    failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
    assert "m0" not in failed, "a healthy record before the fuzzed one failed"
    if "m1" in failed and fifo and groups[1] == groups[2]:
        assert "m2" in failed, "FIFO: a record after a failure of its group went on"
    else:
        assert "m2" not in failed, "a healthy record after the fuzzed one failed"
    assert failed <= {"m1", "m2"}


def main(argv: list[str]) -> None:
    import atheris

    # Coverage feedback from the runtime and the reference consumer only (instrumenting
    # every loaded library takes minutes).
    with atheris.instrument_imports(include=["handlers"]):
        import handlers.orders  # noqa: F401
        from idempotent_messaging.runtime import logger

    logger.setLevel("CRITICAL")  # one JSON line per record would dominate the run time
    atheris.Setup(argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
