"""DLQ copies are sized as SQS counts them (issue 22, item 2).

AWS facts (SQS API reference as shipped in botocore 1.44's SQS model, SendMessageBatch and
MessageAttributeValue):

* "All parts of the message attribute, including Name, Type, and Value, are part of the
  message size restriction";
* SendMessageBatch: at most 10 entries; "The maximum allowed individual message size and the
  maximum total payload size (the sum of the individual lengths of all of the batched messages)
  are both 1 MiB"; a longer batch is refused whole (``BatchRequestTooLong``);
* a queue's ``MaximumMessageSize`` is 1,024 .. 1,048,576 bytes (1 MiB the default for queues
  created since 2025; the Pulumi/Terraform provider still creates 262,144 unless told);
* a message carries at most 10 message attributes.

Before: DLQ batches were sized by body + reason + 512 bytes, so ten poison messages with
~105 KB of attributes each made every SendMessageBatch fail on every receive (SQS finally
moved them to the DLQ with none of our reasons), and a copy larger than the DLQ's maximum took
its whole batch down with it.

moto sizes batches by body characters only; ``local/moto_patches.py`` (installed by the suite)
measures them as SQS does; the first test holds the patch to that contract and shows stock moto
does not.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from handlers import orders
from idempotent_messaging.local import moto_patches
from idempotent_messaging.runtime import env, logger
from idempotent_messaging.runtime.clients import clients_from_env, reset_clients
from idempotent_messaging.runtime.quarantine import ATTR_DROPPED, ATTR_FAILURE_KIND
from tests.integration.test_runtime_world import Aws, FakeContext, record, sqs_event

pytestmark = pytest.mark.integration

KIB = 1024
ATTRIBUTE_BYTES = 35_000  # three of these: ~105 KB of attributes per message


@pytest.fixture
def lambda_env(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name, value in aws.env().items():
        monkeypatch.setenv(name, value)
    aws.claims_in_items = True
    reset_clients()
    yield aws
    reset_clients()


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    target = logging.getLogger(logger.name)
    target.addHandler(handler)
    yield stream
    target.removeHandler(handler)


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line]


def _attrs(**values: str) -> dict[str, dict[str, str]]:
    return {name: {"stringValue": value, "dataType": "String"} for name, value in values.items()}


def _with_attributes(body: str, attributes: dict[str, dict[str, str]]) -> dict[str, Any]:
    rec = record(body)
    rec["messageAttributes"] = attributes
    return rec


def _limit_dlq(world: Aws, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """The DLQ's MaximumMessageSize, and the variable the component sets to tell the runtime."""
    world.sqs.set_queue_attributes(
        QueueUrl=world.dlq_url, Attributes={"MaximumMessageSize": str(limit)}
    )
    monkeypatch.setenv(env.DLQ_MAX_MESSAGE_BYTES, str(limit))


# --- the emulator obeys the contract --------------------------------------------------------
def _entry(i: int, attribute_bytes: int, body: str = "x") -> dict[str, Any]:
    return {
        "Id": f"e{i}",
        "MessageBody": body,
        "MessageAttributes": {
            name: {"DataType": "String", "StringValue": "v" * attribute_bytes}
            for name in ("a1", "a2", "a3")
        },
    }


def test_the_emulator_counts_attributes_toward_message_and_batch_sizes(aws: Aws) -> None:
    """AWS: attribute names, types and values count; 1 MiB per batch; a message above the
    queue's MaximumMessageSize is refused. Stock moto counts body characters only."""
    big = [_entry(i, ATTRIBUTE_BYTES) for i in range(10)]
    with pytest.raises(ClientError) as refused:
        aws.sqs.send_message_batch(QueueUrl=aws.dlq_url, Entries=big)
    assert refused.value.response["Error"]["Code"].endswith("BatchRequestTooLong")
    aws.sqs.set_queue_attributes(QueueUrl=aws.dlq_url, Attributes={"MaximumMessageSize": "1024"})
    # 400 x 'あ' = 1,200 UTF-8 bytes: over 1,024 though only 400 characters.
    for entry in ({"Id": "u", "MessageBody": "あ" * 400}, _entry(0, 400)):
        with pytest.raises(ClientError) as too_long:
            aws.sqs.send_message_batch(QueueUrl=aws.dlq_url, Entries=[entry])
        assert too_long.value.response["Error"]["Code"].endswith("InvalidParameterValue")
    aws.sqs.send_message_batch(QueueUrl=aws.dlq_url, Entries=[_entry(0, 300)])  # 942 bytes: fits
    with moto_patches.stock_moto():  # the gap the patch fills
        aws.sqs.set_queue_attributes(
            QueueUrl=aws.dlq_url, Attributes={"MaximumMessageSize": "1048576"}
        )
        assert len(aws.sqs.send_message_batch(QueueUrl=aws.dlq_url, Entries=big)["Successful"])


# --- through the entry point --------------------------------------------------------------------
def test_ten_poison_messages_with_large_attributes_all_reach_the_dlq_with_their_reasons(
    lambda_env: Aws,
) -> None:
    """Ten copies of ~105 KB each exceed SendMessageBatch's 1 MiB together: they must be split
    by their real size, never sent as one refused batch."""
    records = [
        _with_attributes(
            f"not json {i}", _attrs(**{f"p{k}": "v" * ATTRIBUTE_BYTES for k in range(3)})
        )
        for i in range(10)
    ]
    response = orders.handler(sqs_event(*records), FakeContext())
    assert response == {"batchItemFailures": []}
    copies = lambda_env.dlq_messages()
    assert len(copies) == 10
    for copy in copies:
        attributes = copy["MessageAttributes"]
        assert attributes[ATTR_FAILURE_KIND]["StringValue"] == "not_json"
        assert {"p0", "p1", "p2"} <= set(attributes)  # each copy fits alone: nothing dropped
        assert ATTR_DROPPED not in attributes


def test_a_copy_over_the_dlq_maximum_drops_producer_attributes_and_names_them(
    lambda_env: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source message of 262,000 bytes (body + attributes) fits a 256 KiB source queue; with
    our reason attributes its copy does not fit a 256 KiB DLQ. The producer's largest attribute
    goes (listed in dropped_attributes), the reason stays, and its neighbour is unaffected."""
    _limit_dlq(lambda_env, monkeypatch, 256 * KIB)
    body = "n" * 161_980
    large = _with_attributes(body, _attrs(big="b" * 100_000, small="s"))
    neighbour = _with_attributes("also not json", _attrs(note="n"))
    response = orders.handler(sqs_event(large, neighbour), FakeContext())
    assert response == {"batchItemFailures": []}
    copies = {c["Body"][:4]: c for c in lambda_env.dlq_messages()}
    assert set(copies) == {"nnnn", "also"}
    kept = copies["nnnn"]["MessageAttributes"]
    assert kept[ATTR_FAILURE_KIND]["StringValue"] == "not_json"
    assert kept[ATTR_DROPPED]["StringValue"] == "big"
    assert kept["small"]["StringValue"] == "s" and "big" not in kept
    assert copies["nnnn"]["Body"] == body  # the body is never touched
    assert copies["also"]["MessageAttributes"]["note"]["StringValue"] == "n"


def test_a_body_too_large_for_its_reason_is_failed_alone_and_its_reason_logged(
    lambda_env: Aws, monkeypatch: pytest.MonkeyPatch, log_lines: io.StringIO
) -> None:
    """When even the reason cannot ride with the body, the record is reported failed (SQS
    keeps it; its redrive policy moves it to the DLQ unchanged) and the log line under its
    message id says why: never silently to SQS's redrive, never taking its neighbours down."""
    _limit_dlq(lambda_env, monkeypatch, 256 * KIB)
    monkeypatch.setenv(env.MAX_RECEIVE_COUNT, "3")
    huge = record("h" * (256 * KIB - 40), receive_count=3)  # its last receive
    neighbour = record("not json either")
    sent: list[str] = []
    clients_from_env().sqs.meta.events.register(
        "before-parameter-build.sqs.SendMessageBatch",
        lambda params, **_: sent.extend(e["MessageBody"][:4] for e in params["Entries"]),
    )
    response = orders.handler(sqs_event(huge, neighbour), FakeContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": huge["messageId"]}]}
    assert "hhhh" not in sent  # never sent for SQS to refuse
    (copy,) = lambda_env.dlq_messages()
    assert copy["Body"] == "not json either"
    (line,) = [ln for ln in _lines(log_lines) if ln.get("message_id") == huge["messageId"]]
    assert line["outcome"] == "failed"
    assert "not_json" in line["reason"] and "body is not JSON" in line["reason"]
    assert "DLQ copy" in line["reason"] and str(256 * KIB) in line["reason"]
