"""The scheduler driver fires a deployed schedule as EventBridge Scheduler would."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from idempotent_messaging.local.observe import scan_all
from idempotent_messaging.local.poller import Poller
from idempotent_messaging.local.registry import ScheduleConfig
from idempotent_messaging.local.scheduler import fire, render_input, scheduled_time_for_month
from idempotent_messaging.local.session import StackSession

pytestmark = pytest.mark.e2e


def _schedule(expression: str = "cron(0 3 1 * ? *)", tz: str = "Asia/Tokyo") -> ScheduleConfig:
    return ScheduleConfig(
        name="s",
        arn="arn:aws:scheduler:ap-northeast-1:123456789012:schedule/default/s",
        group="default",
        expression=expression,
        timezone=tz,
        target_arn="arn:aws:lambda:ap-northeast-1:123456789012:function:f",
        target_input=(
            '{"t": "<aws.scheduler.scheduled-time>", "n": "<aws.scheduler.attempt-number>"}'
        ),
        role_arn="arn:aws:iam::123456789012:role/r",
    )


def test_monthly_fire_time_is_computed_in_the_schedule_time_zone() -> None:
    # 03:00 on June 1st in Tokyo is still May 31st in UTC.
    assert scheduled_time_for_month(_schedule(), "2026-06") == datetime(
        2026, 5, 31, 18, 0, tzinfo=UTC
    )
    assert scheduled_time_for_month(_schedule(tz="UTC"), "2026-06") == datetime(
        2026, 6, 1, 3, 0, tzinfo=UTC
    )
    with pytest.raises(ValueError, match="rate"):
        scheduled_time_for_month(_schedule("rate(1 day)"), "2026-06")
    with pytest.raises(ValueError, match="YYYY-MM"):
        scheduled_time_for_month(_schedule(), "June")


def test_input_template_gets_the_scheduler_context_attributes() -> None:
    event = render_input(_schedule(), datetime(2026, 5, 31, 18, 0, tzinfo=UTC), attempt=2)
    assert event == {"t": "2026-05-31T18:00:00Z", "n": "2"}


def test_schedule_fired_twice_for_one_month_yields_one_row_per_item(mini: StackSession) -> None:
    """dispatcher -> FIFO work queue -> charge consumer, the schedule firing twice."""
    when = scheduled_time_for_month(mini.registry.schedules["mini-monthly"], "2026-06")
    results = [
        fire(mini.registry, "mini-monthly", when, endpoint_url=mini.endpoint_url, attempt=n)
        for n in (1, 2)
    ]
    assert all(r.ok for r in results)
    # The fixture dispatcher takes the month of the UTC instant (the real one uses the zone).
    assert [r.response["month"] for r in results] == ["2026-05", "2026-05"]
    assert 0 < results[0].response["remaining_ms"] <= 60_000
    sqs = mini.client("sqs")
    Poller(mini.registry, mini.endpoint_url, sqs).drain(timeout_s=20)
    rows = scan_all(mini.client("dynamodb"), mini.registry.outputs["orders"]["business_table_name"])
    assert sorted(r["order_id"]["S"] for r in rows) == [f"charge-t1-e{i}-2026-05" for i in range(3)]
    assert json.loads(mini.registry.schedules["mini-monthly"].target_input or "{}") == {
        "scheduled_time": "<aws.scheduler.scheduled-time>"
    }


def test_a_failing_target_is_retried_as_configured_then_sent_to_its_destination(
    mini: StackSession,
) -> None:
    """FunctionEventInvokeConfig: 1 retry, on-failure destination an SQS queue."""
    dispatcher = mini.registry.functions["mini-dispatcher-fn"]
    assert (dispatcher.async_max_retries, dispatcher.recursive_loop) == (1, "Allow")
    dispatcher.environment.pop("WORK_QUEUE_URL")  # a broken deployment
    sqs = mini.client("sqs")
    when = datetime(2026, 5, 31, 18, 0, tzinfo=UTC)
    result = fire(mini.registry, "mini-monthly", when, endpoint_url=mini.endpoint_url, sqs=sqs)
    assert not result.ok and isinstance(result.error, KeyError)
    (message,) = sqs.receive_message(
        QueueUrl=mini.registry.outputs["dispatch_failures_url"], MaxNumberOfMessages=10
    )["Messages"]
    record = json.loads(message["Body"])
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 2
    assert record["requestPayload"] == {"scheduled_time": "2026-05-31T18:00:00Z"}
    assert record["responsePayload"]["errorType"] == "KeyError"
