"""What the demo and the tests read back from the emulator: rows, notifications, DLQs, alarms.

Notifications are counted through an observer SQS queue subscribed to the topic (raw message
delivery), as a subscriber would see them. Alarms are evaluated against the emulator's current
queue attributes and the poller's invocation counts: moto keeps no metric history, so this is
"the state the alarm would reach if the current value persisted", stated as such in reports.
"""

from __future__ import annotations

import json
import logging
import operator
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from idempotent_messaging.local.registry import AlarmConfig, Registry
from idempotent_messaging.local.signals import MetricTap, statistic
from idempotent_messaging.ops.dlq import queue_depth

_COMPARE = {
    "GreaterThanOrEqualToThreshold": operator.ge,
    "GreaterThanThreshold": operator.gt,
    "LessThanThreshold": operator.lt,
    "LessThanOrEqualToThreshold": operator.le,
}


def scan_all(ddb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table}
    while True:
        page = ddb.scan(**kwargs)
        items.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def queue_counts(sqs: Any, url: str) -> dict[str, int]:
    """visible / in_flight / delayed message counts (ops.dlq.queue_depth, short names)."""
    depth = queue_depth(sqs, url)
    return {
        "visible": depth.get("ApproximateNumberOfMessages", 0),
        "in_flight": depth.get("ApproximateNumberOfMessagesNotVisible", 0),
        "delayed": depth.get("ApproximateNumberOfMessagesDelayed", 0),
    }


@dataclass
class Observer:
    """An SQS queue subscribed to a topic; collects every notification published to it."""

    sqs: Any
    queue_url: str
    messages: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def subscribe(cls, sqs: Any, sns: Any, topic_arn: str, name: str) -> Observer:
        url = sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        sns.subscribe(
            TopicArn=topic_arn,
            Protocol="sqs",
            Endpoint=arn,
            Attributes={"RawMessageDelivery": "true"},
        )
        return cls(sqs, url)

    def collect(self) -> list[dict[str, Any]]:
        while True:
            batch = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=10,
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            ).get("Messages", [])
            if not batch:
                return self.messages
            for m in batch:
                self.messages.append(m)
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])

    def by_key(self, key: str) -> Counter[str]:
        """Notifications per value of `key` (message attribute, else a body JSON field)."""
        counts: Counter[str] = Counter()
        for m in self.collect():
            attribute = m.get("MessageAttributes", {}).get(key, {}).get("StringValue")
            if attribute is None:
                try:
                    body = json.loads(m["Body"])
                    attribute = body.get(key) if isinstance(body, dict) else None
                except json.JSONDecodeError:
                    attribute = None
            counts[str(attribute)] += 1
        return counts


class OutcomeCounter(logging.Handler):
    """Counts the runtime's per-record outcomes from its structured log records.

    Installed on the root logger: Powertools loggers propagate, and each record carries the
    `outcome` extra field (and `count` when one line stands for several records). The
    invoking function is the one whose environment is active (local.invoke switches
    os.environ per invocation).
    """

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.counts: dict[str, Counter[str]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        # Powertools adds a SuppressFilter to every root handler so its records are not
        # printed twice; this handler prints nothing, it only counts, so it takes them all.
        return True

    def emit(self, record: logging.LogRecord) -> None:
        outcome = getattr(record, "outcome", None)
        # DEBUG lines repeat, record by record, what a processed summary line already counts.
        if outcome is None or record.levelno < logging.INFO:
            return
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "?")
        # A batch's processed records share one line whose `count` says how many
        # (observability.record_outcomes); every other line is one record.
        count = getattr(record, "count", 1)
        self.counts.setdefault(function, Counter())[str(outcome)] += (
            count if isinstance(count, int) else 1
        )

    def install(self) -> OutcomeCounter:
        logging.getLogger().addHandler(self)
        return self

    def uninstall(self) -> None:
        logging.getLogger().removeHandler(self)


@dataclass
class AlarmVerdict:
    alarm: AlarmConfig
    value: float | None
    in_alarm: bool
    basis: str


def evaluate_alarms(
    registry: Registry,
    sqs: Any,
    endpoint_url: str,
    function_errors: Counter[str] | None = None,
    metrics: MetricTap | None = None,
    invocations: Counter[str] | None = None,
) -> list[AlarmVerdict]:
    """Each deployed alarm's metric, read from the emulator now, against its threshold.

    AWS/SQS metrics are the queues' attributes now; AWS/Lambda Errors (and Invocations, when
    ``invocations`` are given) the poller's counts of this run; any other namespace the EMF
    metrics the functions emitted (``metrics``), the alarm's statistic over all of them."""
    verdicts = []
    errors = function_errors or Counter()
    for alarm in registry.alarms:
        value: float | None = None
        basis = "metric not observable in the emulator"
        if alarm.namespace == "AWS/SQS" and "QueueName" in alarm.dimensions:
            url = f"{endpoint_url}/{_account(registry)}/{alarm.dimensions['QueueName']}"
            try:
                value, basis = _sqs_metric(sqs, url, alarm.metric_name)
            except Exception as exc:  # a queue the alarm names but the emulator lacks
                basis = f"queue not readable: {exc}"
        elif alarm.namespace == "AWS/Lambda" and "FunctionName" in alarm.dimensions:
            fn = alarm.dimensions["FunctionName"]
            if alarm.metric_name == "Errors":
                value, basis = float(errors[fn]), "invocation errors during this run"
            elif alarm.metric_name == "Throttles":
                value, basis = 0.0, "the emulator never throttles"
            elif alarm.metric_name == "Invocations" and invocations is not None:
                value, basis = float(invocations[fn]), "invocations during this run"
        elif metrics is not None and alarm.namespace and alarm.metric_name:
            points = metrics.matching(alarm.namespace, alarm.metric_name, alarm.dimensions)
            values = [v for point in points for v in point.values]
            if values:
                value, how = statistic(values, alarm.statistic)
                basis = f"{how} of {len(values)} EMF value(s) the functions emitted in this run"
            else:
                basis = "no EMF value with exactly these dimensions was emitted in this run"
        compare = _COMPARE.get(alarm.comparison_operator)
        in_alarm = bool(value is not None and compare and compare(value, alarm.threshold))
        verdicts.append(AlarmVerdict(alarm, value, in_alarm, basis))
    return verdicts


def _account(registry: Registry) -> str:
    for fn in registry.functions.values():
        return fn.arn.split(":")[4]
    return "123456789012"


def _sqs_metric(sqs: Any, url: str, metric: str) -> tuple[float | None, str]:
    counts = queue_counts(sqs, url)
    if metric == "ApproximateNumberOfMessagesVisible":
        return float(counts["visible"]), "ApproximateNumberOfMessages now"
    if metric == "ApproximateNumberOfMessagesNotVisible":
        return float(counts["in_flight"]), "ApproximateNumberOfMessagesNotVisible now"
    if metric == "ApproximateAgeOfOldestMessage":
        return _oldest_age(sqs, url), "age of the oldest visible message now"
    return None, f"{metric} not observable in the emulator"


def _oldest_age(sqs: Any, url: str) -> float:
    """Peek (then release) visible messages for the oldest SentTimestamp."""
    held: list[dict[str, Any]] = []
    oldest = time.time()
    try:
        while len(held) < 100:
            batch = sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                VisibilityTimeout=30,
                WaitTimeSeconds=0,  # the queue may long-poll by default
                MessageSystemAttributeNames=["SentTimestamp"],
            ).get("Messages", [])
            if not batch:
                break
            held.extend(batch)
            for m in batch:
                oldest = min(oldest, int(m["Attributes"]["SentTimestamp"]) / 1000)
    finally:
        for m in held:
            sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
            )
    return max(0.0, time.time() - oldest) if held else 0.0
