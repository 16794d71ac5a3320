"""Helpers of the audit-2 tests (issue 22 items 1, 3, 8, 9, 10); it holds no tests itself.

Every test drives a consumer through its Lambda entry point (``handler(event, context)``, the
settings and clients read from the environment of the invocation, as Lambda runs it) against
moto. Faults are injected on the entry point's OWN cached clients (``clients_from_env``), at
botocore's level: an error response from a before-send hook is retried by botocore exactly as
a real throttle; a process death is a ``BaseException`` (``Crash``) that no ``except
Exception`` can swallow.

``Source`` is a real moto SQS queue with the stack's redrive policy to a real moto DLQ, polled
the way Lambda's event source mapping polls it: a crashed invocation acknowledges nothing and
its messages come back after the visibility timeout (``visibility_timeout_passes``); SQS moves
a message to the DLQ itself once its receive count exceeds ``maxReceiveCount`` (SQS Developer
Guide, "Using dead-letter queues"), with none of the consumer's reason attributes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from idempotent_messaging.runtime.clients import clients_from_env, reset_clients
from tests.integration.test_runtime_world import REGION, Aws, Crash, FakeContext

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def use_environment(world: Aws, monkeypatch: pytest.MonkeyPatch, **extra: str) -> None:
    """The function's environment as the component sets it, pointed at the moto world; the
    entry point's cached clients are rebuilt for it and instrumented like the world's (moto's
    stub wrapped, so a fault a test injects at before-send is refused, not applied)."""
    for name, value in world.env(**extra).items():
        monkeypatch.setenv(name, value)
    reset_clients()
    for client in vars(clients_from_env()).values():
        world.instrument(client)


def entry_clients() -> Any:
    """The clients the entry point builds from this environment (the ones faults go on)."""
    return clients_from_env()


@dataclass
class CrashPlan:
    """A process death at a chosen AWS call of the entry point's clients: before the call
    named ``before`` (its ``nth`` occurrence), or after ``after``'s ``nth`` occurrence."""

    before: str | None = None
    after: str | None = None
    nth: int = 1
    seen: dict[str, int] = field(default_factory=dict)

    def install(self) -> None:
        for client in vars(entry_clients()).values():
            client.meta.events.register("before-call.*.*", self._before)
            client.meta.events.register("after-call.*.*", self._after)

    def clear(self) -> None:
        self.before = self.after = None
        self.seen.clear()

    def _before(self, model: Any, **_: Any) -> None:
        self.seen[model.name] = self.seen.get(model.name, 0) + 1
        if model.name == self.before and self.seen[model.name] == self.nth:
            raise Crash(f"process died before {model.name}")

    def _after(self, model: Any, **_: Any) -> None:
        if model.name == self.after and self.seen.get(model.name) == self.nth:
            raise Crash(f"process died after {model.name}")


def lambda_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """An SQS message as Lambda's poller hands it to the function."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {
            name: {"stringValue": value.get("StringValue"), "dataType": value["DataType"]}
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


@dataclass
class Source:
    """A moto source queue with a redrive policy to the world's DLQ, and a Lambda-like poller."""

    world: Aws
    url: str
    arn: str
    handler: Handler
    in_flight: list[str] = field(default_factory=list)

    def send(self, body: str, **kwargs: Any) -> str:
        answer = self.world.sqs.send_message(QueueUrl=self.url, MessageBody=body, **kwargs)
        return str(answer["MessageId"])

    def invoke(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """One invocation: (partial batch response, or None after a process death; records)."""
        answer = self.world.sqs.receive_message(
            QueueUrl=self.url,
            MaxNumberOfMessages=10,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = answer.get("Messages", [])
        records = [lambda_record(m, self.arn) for m in messages]
        if not messages:
            return {"batchItemFailures": []}, []
        try:
            response = self.handler({"Records": records}, FakeContext())
        except Crash:
            self.in_flight.extend(m["ReceiptHandle"] for m in messages)
            return None, records
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        for m in messages:
            if m["MessageId"] in failed:
                self.in_flight.append(m["ReceiptHandle"])
            else:
                self.world.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=m["ReceiptHandle"])
        return response, records

    def visibility_timeout_passes(self) -> None:
        for handle in self.in_flight:
            self.world.sqs.change_message_visibility(
                QueueUrl=self.url, ReceiptHandle=handle, VisibilityTimeout=0
            )
        self.in_flight.clear()

    def depth(self) -> int:
        attributes = self.world.sqs.get_queue_attributes(
            QueueUrl=self.url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return sum(int(v) for v in attributes.values())


def source_queue(world: Aws, handler: Handler, *, max_receive_count: int, name: str) -> Source:
    """A standard source queue whose redrive policy targets the world's DLQ."""
    dlq_arn = world.sqs.get_queue_attributes(QueueUrl=world.dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    url = world.sqs.create_queue(
        QueueName=name,
        Attributes={
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count}
            )
        },
    )["QueueUrl"]
    arn = world.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return Source(world, url, arn, handler)


def dlq_copies(world: Aws) -> list[dict[str, Any]]:
    """The DLQ's messages (drained): body, system attributes and message attributes."""
    return world.dlq_messages()


def attributes_of(message: dict[str, Any]) -> dict[str, str]:
    return {
        name: str(value.get("StringValue"))
        for name, value in message.get("MessageAttributes", {}).items()
    }


@contextmanager
def entry_point(world: Aws, monkeypatch: pytest.MonkeyPatch, **extra: str) -> Iterator[None]:
    """The environment for a test's invocations, clients rebuilt before and forgotten after."""
    use_environment(world, monkeypatch, **extra)
    try:
        yield
    finally:
        reset_clients()
