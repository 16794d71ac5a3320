"""CloudWatch dashboards: one per consumer, one per fan-out, built from the metrics the
deployed code really emits.

AWS/SQS and AWS/Lambda metrics are keyed by QueueName / FunctionName. The runtime and the
dispatcher publish Powertools EMF metrics in the component's metrics namespace with the one
dimension ``service`` (POWERTOOLS_SERVICE_NAME, which the component sets per function).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from idempotent_messaging.names import CLOUDWATCH_DASHBOARD, fit

from .alarms import CONFLICT_METRIC, LAMBDA_NAMESPACE, SQS_NAMESPACE
from .powertools import region_and_partition_of

PERIOD_S = 60
SERVICE_DIMENSION = "service"
"""The dimension Powertools Metrics adds to every metric: the function's service name."""
RECORD_OUTCOMES = (
    "processed",
    "duplicate_skipped",
    "republished",
    "quarantined",
    "retried",
    "failed",
)
"""Count metrics the consumer runtime emits per record (runtime/observability.py
Outcome; tests/infra/test_dashboards.py keeps the two equal)."""
DISPATCHER_METRICS = ("ChargesEnqueued", "ItemsRejected", "SegmentsHandedOff")
"""Count metrics the monthly dispatcher emits per invocation (dispatch/app.py)."""
WIDGET_WIDTH = 12
WIDGET_HEIGHT = 6

Metric = list[Any]


@dataclass(frozen=True)
class Widget:
    title: str
    metrics: Sequence[Metric]
    stat: str = "Sum"


def sqs(metric: str, queue_name: str, label: str) -> Metric:
    return [SQS_NAMESPACE, metric, "QueueName", queue_name, {"stat": "Maximum", "label": label}]


def lambda_metric(metric: str, function_name: str, stat: str = "Sum", label: str = "") -> Metric:
    return [
        LAMBDA_NAMESPACE,
        metric,
        "FunctionName",
        function_name,
        {"stat": stat, "label": label or metric},
    ]


def emf(namespace: str, metric: str, service: str) -> Metric:
    return [namespace, metric, SERVICE_DIMENSION, service, {"stat": "Sum", "label": metric}]


def dashboard_body(region: str, widgets: Sequence[Widget]) -> str:
    """The DashboardBody JSON: metric widgets two per row."""
    body = {
        "widgets": [
            {
                "type": "metric",
                "x": (i % 2) * WIDGET_WIDTH,
                "y": (i // 2) * WIDGET_HEIGHT,
                "width": WIDGET_WIDTH,
                "height": WIDGET_HEIGHT,
                "properties": {
                    "title": w.title,
                    "region": region,
                    "view": "timeSeries",
                    "stacked": False,
                    "period": PERIOD_S,
                    "stat": w.stat,
                    "metrics": [list(m) for m in w.metrics],
                },
            }
            for i, w in enumerate(widgets)
        ]
    }
    return json.dumps(body, sort_keys=True)


def function_widgets(function_name: str, what: str) -> list[Widget]:
    return [
        Widget(
            f"{what}: invocations, errors, throttles",
            [
                lambda_metric("Invocations", function_name),
                lambda_metric("Errors", function_name),
                lambda_metric("Throttles", function_name),
            ],
        ),
        Widget(
            f"{what}: duration (ms)",
            [
                lambda_metric("Duration", function_name, "p50", "p50"),
                lambda_metric("Duration", function_name, "p99", "p99"),
                lambda_metric("Duration", function_name, "Maximum", "max"),
            ],
            stat="Maximum",
        ),
    ]


def consumer_widgets(
    *,
    queue_name: str,
    dlq_name: str,
    function_name: str,
    metrics_namespace: str,
    service_name: str,
) -> list[Widget]:
    return [
        Widget(
            "Queue depth",
            [
                sqs("ApproximateNumberOfMessagesVisible", queue_name, "waiting"),
                sqs("ApproximateNumberOfMessagesNotVisible", queue_name, "in flight"),
            ],
            stat="Maximum",
        ),
        Widget(
            "Age of oldest message (s)",
            [sqs("ApproximateAgeOfOldestMessage", queue_name, "oldest")],
            stat="Maximum",
        ),
        Widget(
            "Dead-letter queue depth",
            [sqs("ApproximateNumberOfMessagesVisible", dlq_name, "in DLQ")],
            stat="Maximum",
        ),
        Widget(
            "Record outcomes",
            [emf(metrics_namespace, outcome, service_name) for outcome in RECORD_OUTCOMES],
        ),
        Widget(
            "Conflicting duplicates (same event id, other content)",
            [emf(metrics_namespace, CONFLICT_METRIC, service_name)],
        ),
        *function_widgets(function_name, "Consumer"),
    ]


def fanout_widgets(
    *,
    dispatcher_name: str,
    control_queue_name: str,
    control_dlq_name: str,
    schedule_dlq_name: str,
    work_queue_name: str,
    metrics_namespace: str,
    dispatcher_service: str,
    consumer_service: str,
) -> list[Widget]:
    return [
        Widget(
            "Run progress: dispatcher",
            [emf(metrics_namespace, m, dispatcher_service) for m in DISPATCHER_METRICS],
        ),
        Widget(
            "Run progress: charges enqueued vs processed",
            [
                emf(metrics_namespace, "ChargesEnqueued", dispatcher_service),
                emf(metrics_namespace, "processed", consumer_service),
                emf(metrics_namespace, "duplicate_skipped", consumer_service),
            ],
        ),
        Widget(
            "Work queue depth and pending continuations",
            [
                sqs("ApproximateNumberOfMessagesVisible", work_queue_name, "charges waiting"),
                sqs("ApproximateNumberOfMessagesVisible", control_queue_name, "continuations"),
            ],
            stat="Maximum",
        ),
        Widget(
            "Failed fires and continuations (DLQs)",
            [
                sqs("ApproximateNumberOfMessagesVisible", schedule_dlq_name, "schedule DLQ"),
                sqs("ApproximateNumberOfMessagesVisible", control_dlq_name, "control DLQ"),
            ],
            stat="Maximum",
        ),
        *function_widgets(dispatcher_name, "Dispatcher"),
    ]


def create_dashboard(
    resource_name: str,
    *,
    dashboard_name: str,
    regional_arn: pulumi.Input[str],
    names: dict[str, pulumi.Input[str]],
    build: Callable[..., Sequence[Widget]],
    parent: pulumi.Resource,
) -> aws.cloudwatch.Dashboard:
    """A dashboard whose body is ``build(**resolved names)`` in the region of ``regional_arn``
    (the ARN of a resource the component created, so an explicit provider's region wins)."""
    keys = list(names)

    def body(values: list[Any]) -> str:
        region = region_and_partition_of(values[0])[0]
        resolved = dict(zip(keys, values[1:], strict=True))
        return dashboard_body(region, build(**resolved))

    return aws.cloudwatch.Dashboard(
        resource_name,
        dashboard_name=fit(dashboard_name, CLOUDWATCH_DASHBOARD),
        dashboard_body=pulumi.Output.all(regional_arn, *names.values()).apply(body),
        opts=pulumi.ResourceOptions(parent=parent),
    )
