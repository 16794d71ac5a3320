"""tools.preview prints the resource tree of a stack, computed from the real program."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.components import IdempotentQueueConsumerArgs
from idempotent_messaging.offline import load_project, load_stack_config
from idempotent_messaging.stage import args_from_mapping
from tests.stages import STAGES
from tools import preview

pytestmark = pytest.mark.infra

PROJECT_DIR = Path(__file__).resolve().parents[2]


def orders_settings(stack: str) -> dict[str, Any]:
    """The orders consumer's effective settings in a stack: its config object over the args'
    defaults (read from the stack file, so a new stage needs no edit here)."""
    config = load_stack_config(load_project(PROJECT_DIR), stack)
    consumers = json.loads(config.values["idempotent-messaging:consumers"])
    args = args_from_mapping(
        IdempotentQueueConsumerArgs,
        consumers["orders"],
        "consumers.orders",
        defaults={"handler": "handlers.orders.handler"},
    )
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(args)}


@pytest.mark.parametrize("stack", STAGES)
def test_preview_prints_the_tree_with_key_settings(
    stack: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert preview.main(["--stack", stack]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Stack idempotent-messaging/{stack} (up, offline under Pulumi mocks)")
    # top-level components (sibling order follows registration, which is asynchronous)
    assert re.search(
        r"^[├└]─ idempotent-messaging:index:IdempotentQueueConsumer  orders$", out, re.M
    )
    assert re.search(r"^[├└]─ idempotent-messaging:index:MonthlyFanout  monthly-charge$", out, re.M)
    assert re.search(r"^[│ ]  [├└]─ aws:sqs/queue:Queue  orders-queue$", out, re.M)  # a child
    orders = orders_settings(stack)
    assert f"redrive -> orders-queue-dlq after {orders['max_receive_count']} receives" in out
    assert "response types [ReportBatchItemFailures]" in out
    assert "TTL ttl" in out and "PITR on" in out
    assert "ApproximateNumberOfMessagesVisible" in out
    # Lambda's guidance the component follows: visibility >= 6 x function timeout + window.
    timeout = orders["function_timeout_seconds"]
    window = orders["maximum_batching_window_seconds"]
    required = 6 * timeout + window
    assert f"= {required} s: ok" in out
    assert f"orders_queue_name: orders-{stack}" in out


def test_preview_mode_marks_computed_values_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert preview.main(["--stack", "dev", "--preview"]) == 0
    out = capsys.readouterr().out
    assert "(preview, offline under Pulumi mocks)" in out
    assert "orders_queue_arn: (known after apply)" in out


def test_unknown_stack_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert preview.main(["--stack", "nope"]) == 2
    assert "no stack 'nope'" in capsys.readouterr().err


def test_module_entry_point_exits_zero() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tools.preview", "--stack", "dev"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "aws:lambda/eventSourceMapping:EventSourceMapping  orders-esm" in result.stdout
