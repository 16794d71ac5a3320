"""Dashboards: one per consumer and per fan-out, their bodies valid JSON that name the
stack's own queues, functions and the metrics the deployed code emits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.components import dashboards
from idempotent_messaging.dispatch import app as dispatcher_app
from idempotent_messaging.offline import ProgramRun, run_program
from idempotent_messaging.rules.values import is_unknown
from idempotent_messaging.runtime.observability import Outcome
from tests.stages import PROJECT_DIR

pytestmark = pytest.mark.infra

DASHBOARD = "aws:cloudwatch/dashboard:Dashboard"


@pytest.fixture(scope="module")
def dev() -> ProgramRun:
    return run_program(PROJECT_DIR, "dev")


def body(run: ProgramRun, name: str) -> dict[str, Any]:
    (dashboard,) = [r for r in run.resources if r.type == DASHBOARD and r.name == name]
    parsed: dict[str, Any] = json.loads(dashboard.inputs["dashboardBody"])
    return parsed


def metrics(parsed: dict[str, Any]) -> list[list[Any]]:
    return [m for w in parsed["widgets"] for m in w["properties"]["metrics"]]


def named(run: ProgramRun, type_: str, logical: str) -> str:
    (resource,) = [r for r in run.resources if r.type == type_ and r.name == logical]
    name: str = resource.inputs["name"]
    return name


def test_the_outcome_names_are_the_ones_the_runtime_emits() -> None:
    assert set(dashboards.RECORD_OUTCOMES) == {str(o) for o in Outcome}
    source = Path(dispatcher_app.__file__).read_text()
    for metric in dashboards.DISPATCHER_METRICS:
        assert f'"{metric}"' in source, metric


def test_each_consumer_has_a_dashboard_of_its_queue_dlq_function_and_outcomes(
    dev: ProgramRun,
) -> None:
    parsed = body(dev, "orders-dashboard")
    queue = named(dev, "aws:sqs/queue:Queue", "orders-queue")
    dlq = named(dev, "aws:sqs/queue:Queue", "orders-queue-dlq")
    function = named(dev, "aws:lambda/function:Function", "orders-consumer")
    found = metrics(parsed)
    # AWS/SQS metrics are keyed by QueueName, AWS/Lambda by FunctionName.
    assert ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", queue] in [
        m[:4] for m in found
    ]
    assert ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", queue] in [
        m[:4] for m in found
    ]
    assert ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", dlq] in [
        m[:4] for m in found
    ]
    for metric in ("Errors", "Throttles", "Duration"):
        assert ["AWS/Lambda", metric, "FunctionName", function] in [m[:4] for m in found]
    # Powertools EMF: the function's namespace, dimension service = POWERTOOLS_SERVICE_NAME.
    fn = next(r for r in dev.resources if r.name == "orders-consumer" and r.custom)
    env = fn.inputs["environment"]["variables"]
    for outcome in ("processed", "duplicate_skipped", "republished", "quarantined", "failed"):
        expected = [
            env["POWERTOOLS_METRICS_NAMESPACE"],
            outcome,
            "service",
            env["POWERTOOLS_SERVICE_NAME"],
        ]
        assert expected in [m[:4] for m in found], outcome
    assert {w["properties"]["region"] for w in parsed["widgets"]} == {"ap-northeast-1"}
    assert dev.stack_outputs["orders_dashboard_name"] == "orders-dev-consumer"


def test_the_fanout_dashboard_shows_the_runs_progress(dev: ProgramRun) -> None:
    found = [m[:4] for m in metrics(body(dev, "monthly-charge-dashboard"))]
    dispatcher = next(
        r for r in dev.resources if r.name == "monthly-charge-dispatcher" and r.custom
    )
    env = dispatcher.inputs["environment"]["variables"]
    namespace, service = env["POWERTOOLS_METRICS_NAMESPACE"], env["POWERTOOLS_SERVICE_NAME"]
    for metric in ("ChargesEnqueued", "ItemsRejected", "SegmentsHandedOff"):
        assert [namespace, metric, "service", service] in found, metric
    control = named(dev, "aws:sqs/queue:Queue", "monthly-charge-control")
    schedule_dlq = named(dev, "aws:sqs/queue:Queue", "monthly-charge-schedule-dlq")
    for queue in (control, schedule_dlq):
        assert ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", queue] in found
    assert ["AWS/Lambda", "Errors", "FunctionName", dispatcher.inputs["name"]] in found
    # the charge consumer is an IdempotentQueueConsumer: it has its own dashboard as well
    assert body(dev, "monthly-charge-charges-dashboard")["widgets"]


def test_dashboards_are_opt_out() -> None:
    run = run_program(
        PROJECT_DIR,
        "dev",
        config_overrides={
            "consumers": {"orders": {"createDashboard": False}},
            "fanouts": {
                "monthly-charge": {
                    "scheduleExpressionTimezone": "Asia/Tokyo",
                    "createDashboard": False,
                }
            },
        },
    )
    assert [r.name for r in run.resources if r.type == DASHBOARD] == []
    assert run.stack_outputs["orders_dashboard_name"] is None


def test_at_preview_the_dashboards_exist_with_their_body_unknown() -> None:
    """Queue and function names of new resources are unknown during `pulumi preview`."""
    run = run_program(PROJECT_DIR, "dev", preview=True)
    found = {r.name: r.inputs for r in run.resources if r.type == DASHBOARD}
    assert set(found) == {
        "orders-dashboard",
        "monthly-charge-dashboard",
        "monthly-charge-charges-dashboard",
    }
    assert all(is_unknown(inputs.get("dashboardBody")) for inputs in found.values())


def test_the_conflict_alarm_and_widget_watch_the_runtimes_conflict_count() -> None:
    """Issue 27: components/alarms.py names the metric without importing the runtime's code."""
    from idempotent_messaging.components.alarms import CONFLICT_METRIC
    from idempotent_messaging.runtime import env
    from idempotent_messaging.runtime.errors import PoisonKind

    assert CONFLICT_METRIC == env.CONFLICTING_DUPLICATE == PoisonKind.CONFLICTING_DUPLICATE
