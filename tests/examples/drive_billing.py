"""Runs INSIDE the fresh virtualenv that holds the built wheel: the billing example (a fan-out
over its own customers table, its own charge handler) under Pulumi mocks (``mocks``) and/or on the
embedded emulator through the package's Python API (``emulator``); prints one JSON document.

Started by tests/examples/test_billing_example.py as ``<venv>/bin/python <this file> ...``;
unlike drive_inventory.py it needs nothing of the repository: the emulator API ships in the
package (``idempotent_messaging.local``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import idempotent_messaging

EXAMPLE, PARTS = Path(sys.argv[1]), sys.argv[2:]
STACK = "dev"
MONTH = "2026-06"


def run_under_mocks() -> dict[str, Any]:
    from idempotent_messaging.offline import run_program

    run = run_program(EXAMPLE, STACK)
    return {
        "resources": [{"type": r.type, "name": r.name, "inputs": r.inputs} for r in run.resources],
        "outputs": run.stack_outputs,
    }


def customer(tenant: str, subscriber: str, amount: int, currency: str = "EUR", active: bool = True):
    return {
        "tenant_id": {"S": tenant},
        "employee_id": {"S": subscriber},
        "amount": {"N": str(amount)},
        "currency": {"S": currency},
        "active": {"BOOL": active},
    }


def run_on_emulator() -> dict[str, Any]:
    from idempotent_messaging.local import local_stack
    from idempotent_messaging.local.faults import FaultInjector

    faults = FaultInjector()
    declared = {"invoicing-charges": "invoice_key"}
    # The injected crash below is an invocation error: the charge consumer's errors alarm fires.
    expected = ["invoicing-dev-charges-consumer-errors"]
    with (
        local_stack(EXAMPLE, STACK, one_row_per_event=declared, expect_alarms=expected) as s,
        faults.installed(),
    ):
        ddb = s.client("dynamodb")
        table = s.outputs["customers_table_name"]
        for i in range(6):
            ddb.put_item(TableName=table, Item=customer(f"t-{i % 2}", f"sub-{i}", 1000 + i))
        ddb.put_item(TableName=table, Item=customer("t-0", "gone", 500, active=False))
        ddb.put_item(TableName=table, Item=customer("t-1", "typo", 500, currency="euro"))
        (schedule,) = s.schedules
        # The schedule fires twice for June; the first charge batch dies after its commit.
        crash = faults.crash_once("PublishBatch")
        fires = [s.fire(schedule, month=MONTH), s.fire(schedule, month=MONTH)]
        s.drain()
        faults.remove(crash)
        # A producer of its own re-sends one charge (a new message, the same event).
        ledger = s.consumer("invoicing-charges")
        charge = {
            "event_id": f"t-0:sub-0:{MONTH}",
            "idempotency_key": f"t-0:sub-0:{MONTH}",
            "tenant_id": "t-0",
            "employee_id": "sub-0",
            "month": MONTH,
            "amount": 1000,
            "currency": "EUR",
        }
        s.send(ledger.name, charge, group_id=f"t-0#{MONTH}")
        s.drain()
        report = s.report()
        rows = ddb.scan(TableName=ledger.business_table)["Items"]
        return {
            "fires": [f.response for f in fires],
            "crash_fired": crash.fired,
            "report": report.to_json(),
            "text": report.text(),
            "invoices": sorted(
                (
                    r["invoice_key"]["S"],
                    int(r["net"]["N"]),
                    int(r["vat"]["N"]),
                    int(r["gross"]["N"]),
                )
                for r in rows
            ),
        }


# Each part named on the command line, in order, in this one interpreter.
PART_RUNNERS = {"mocks": run_under_mocks, "emulator": run_on_emulator}
result: dict[str, Any] = {part: PART_RUNNERS[part]() for part in PARTS}
result["package_file"] = idempotent_messaging.__file__
print(json.dumps(result, default=repr))
