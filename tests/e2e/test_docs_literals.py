"""Every fault literal the docs show fires on the reference stack, and a bounded soak keeps every
invariant under load (``make soak`` is the full size).

One deploy of the reference dev stack serves both (the soak reads back only its own events).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from idempotent_messaging.local.deploy import PROJECT_DIR
from idempotent_messaging.local.faults import FaultInjector, FaultNeverFired
from idempotent_messaging.local.run_month import seed_billing_accounts
from idempotent_messaging.local.soak import FAULT_KINDS, SoakConfig, fault_category, run
from idempotent_messaging.local.stack import LocalStack, local_stack
from tests.unit.test_docs_literals import fault_literals

pytestmark = pytest.mark.e2e

MONTH = "2026-06"


@pytest.fixture(scope="module")
def reference() -> Iterator[LocalStack]:
    with local_stack(PROJECT_DIR, "dev") as stack:
        yield stack


def drive(stack: LocalStack, round_: int) -> None:
    """Traffic that makes every call the reference consumers make: fresh orders, a re-send
    after they were done (the redelivery read), poison (a DLQ copy), a monthly fan-out (the
    FIFO charge consumer's transaction)."""
    orders = [
        {"event_id": f"docs-{round_}-{i}", "order": {"order_id": f"o-{round_}-{i}"}}
        for i in range(3)
    ]
    for order in orders:
        stack.send("orders", order)
    stack.drain()
    stack.send("orders", orders[0])  # a producer re-send of a done event
    stack.send("orders", {"event_id": f"docs-{round_}-bad", "order": {}})  # poison
    stack.drain()


def drive_monthly(stack: LocalStack, round_: int) -> None:
    schedule = next(iter(stack.schedules.values()))
    dispatcher = stack.session.registry.function(schedule.target_arn)
    seed_billing_accounts(stack.client("dynamodb"), dispatcher.environment, 3)
    stack.fire(schedule.name, month=f"2026-{round_ + 1:02d}")
    stack.drain()


def arm_all(injector: FaultInjector) -> dict[str, Any]:
    namespace: dict[str, Any] = {"faults": injector}
    armed = {}
    for page, literal in fault_literals():
        armed[f"{page}: `{literal}`"] = eval(f"faults.{literal}", namespace)
    return armed


def test_every_fault_literal_in_the_docs_fires_on_the_reference_stack(
    reference: LocalStack,
) -> None:
    """The docs once showed `crash_once("Publish")`, which never fires (the runtime calls
    PublishBatch): a literal that names a real operation no consumer calls fails here."""
    injector = FaultInjector(retry_sleep_scale=0.01)
    with injector.installed(check_fired=False):
        armed = arm_all(injector)
        for round_ in range(3):
            drive(reference, round_)
            if all(f.fired for f in armed.values()):
                break
        if not all(f.fired for f in armed.values()):
            drive_monthly(reference, 0)
    silent = [where for where, fault in armed.items() if not fault.fired]
    assert not silent, f"documented faults that never fired on the reference stack: {silent}"
    with pytest.raises(FaultNeverFired):
        injector.crash_once("Publish")
        injector.check_fired()


def test_a_bounded_soak_keeps_every_invariant_under_concurrency_and_faults(
    reference: LocalStack,
) -> None:
    """The soak's full size is `make soak`; here 30 events, still with every planned kind of
    fault, concurrent invocations and visibility timeouts on the accelerated clock."""
    config = SoakConfig(
        seed=4242, events=30, visibility_scale=0.001, retry_sleep_scale=0.01, timeout_s=120
    )
    result = run(config, stack=reference)
    assert result.ok, "\n".join(result.lines())
    assert result.peak_concurrency >= 2, "the mapping never ran two invocations at once"
    assert result.max_concurrency == 5  # dev's maximumConcurrency
    fired = {fault_category(label) for label in result.faults_by_label}
    assert fired >= {
        "throttle",
        "death before a call",
        "death after an applied call",
        "failed entry in a 200",
    }, result.faults_by_label
    assert set(result.faults_by_label) & {k for k, _, _ in FAULT_KINDS}
    assert result.sent["conflict"] >= 1 and result.sent["poison"] >= 1
    assert result.redriven >= result.sent["poison"]
    assert json.dumps(result.to_json(), default=str)
