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

One deliberate difference, opt-in and reported: `release_failed=True` makes failed records
visible again at once (ChangeMessageVisibility 0) instead of after the queue's visibility
timeout, so that a demo shows retries in seconds rather than minutes.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from idempotent_messaging.local.invoke import InvocationResult, invoke
from idempotent_messaging.local.registry import FunctionConfig, MappingConfig, Registry
from idempotent_messaging.local.server import queue_url_from_arn

MAX_MESSAGES_PER_RECEIVE = 10  # SQS ReceiveMessage limit
REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"


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
    stats: dict[str, MappingStats] = field(default_factory=dict)

    def sqs_mappings(self) -> list[MappingConfig]:
        return [
            m
            for m in self.registry.mappings
            if m.enabled and m.event_source_arn.split(":")[2:3] == ["sqs"]
        ]

    def receive_batch(self, mapping: MappingConfig) -> list[dict[str, Any]]:
        """Assemble up to batch_size messages within the batching window."""
        url = queue_url_from_arn(mapping.event_source_arn, self.endpoint_url)
        deadline = time.monotonic() + mapping.maximum_batching_window_s
        messages: list[dict[str, Any]] = []
        while len(messages) < mapping.batch_size:
            wanted = min(MAX_MESSAGES_PER_RECEIVE, mapping.batch_size - len(messages))
            response = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=wanted,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            )
            self.stats.setdefault(mapping.uuid, MappingStats()).polls += 1
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
        result = invoke(
            fn, {"Records": records}, region=self.registry.region, endpoint_url=self.endpoint_url
        )
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
        if self.release_failed and failed:
            self.sqs.change_message_visibility_batch(
                QueueUrl=url,
                Entries=[
                    {
                        "Id": str(i),
                        "ReceiptHandle": by_id[mid]["ReceiptHandle"],
                        "VisibilityTimeout": 0,
                    }
                    for i, mid in enumerate(failed)
                ],
            )
        stats = self.stats.setdefault(mapping.uuid, MappingStats())
        stats.invocations += 1
        stats.records_delivered += len(messages)
        stats.records_deleted += len(to_delete)
        stats.records_failed += len(failed)
        if not result.ok:
            stats.invocation_errors += 1
            stats.last_error = reason
        return BatchOutcome(len(messages), len(to_delete), failed, result, whole, reason)

    def poll_once(self, mapping: MappingConfig) -> BatchOutcome | None:
        """One poll of one mapping; None when the queue had nothing visible."""
        fn = self.registry.function(mapping.function_name)
        messages = self.receive_batch(mapping)
        if not messages:
            return None
        outcome = self.process_batch(mapping, fn, messages)
        if self.on_batch is not None:
            self.on_batch(mapping, outcome)
        return outcome

    def drain(
        self,
        mappings: list[MappingConfig] | None = None,
        *,
        idle_polls: int = 2,
        timeout_s: float = 60.0,
        idle_sleep_s: float = 0.1,
    ) -> int:
        """Poll round-robin until every mapping saw `idle_polls` empty polls in a row.

        Returns the number of batches processed. Raises TimeoutError past timeout_s, so a
        scenario that never settles fails loudly instead of hanging.
        """
        targets = mappings if mappings is not None else self.sqs_mappings()
        idle = dict.fromkeys((m.uuid for m in targets), 0)
        batches = 0
        deadline = time.monotonic() + timeout_s
        while any(count < idle_polls for count in idle.values()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"queues did not drain within {timeout_s:.0f} s")
            for mapping in targets:
                if self.poll_once(mapping) is None:
                    idle[mapping.uuid] += 1
                else:
                    idle[mapping.uuid] = 0
                    batches += 1
            if all(count > 0 for count in idle.values()):
                time.sleep(idle_sleep_s)
        return batches


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
