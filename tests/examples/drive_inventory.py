"""Runs INSIDE the fresh virtualenv that holds the built wheel: the inventory example under
Pulumi mocks (``mocks``) and/or on the embedded emulator (``emulator``); prints one JSON document.

Started by tests/examples/test_inventory_example.py as ``<venv>/bin/python <this file> ...``:
a script's own directory is sys.path[0], so nothing of the repository is importable until the
repository is appended AFTER site-packages below (for the emulator tooling only); the package
always comes from the virtualenv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import idempotent_messaging

EXAMPLE, REPOSITORY, PARTS = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
STACK = "dev"


def run_under_mocks() -> dict[str, Any]:
    from idempotent_messaging.offline import run_program

    run = run_program(EXAMPLE, STACK)
    return {
        "resources": [
            {"type": r.type, "name": r.name, "parent": r.parent, "inputs": r.inputs}
            for r in run.resources
        ],
        "outputs": run.stack_outputs,
    }


def stock_body(event_id: str, sku: str, delta: int) -> str:
    return json.dumps({"event_id": event_id, "sku": sku, "warehouse": "berlin", "delta": delta})


def run_on_emulator() -> dict[str, Any]:
    sys.path.append(str(REPOSITORY))  # after site-packages: the tooling, never the package
    from idempotent_messaging.local.faults import FaultInjector
    from idempotent_messaging.local.session import start_session

    faults = FaultInjector()
    with start_session(STACK, EXAMPLE) as stack, faults.installed():
        out = stack.outputs
        sqs, ddb = stack.client("sqs"), stack.client("dynamodb")
        queue = out["stock_queue_url"]
        # Three events, each sent twice (a producer retry: new messageIds, same event id).
        events = {"e-1": ("sku-1", 5), "e-2": ("sku-1", -2), "e-3": ("sku-2", 7)}
        for _ in range(2):
            for event_id, (sku, delta) in events.items():
                sqs.send_message(QueueUrl=queue, MessageBody=stock_body(event_id, sku, delta))
        stack.drain()
        # A crash after the commit: the process dies in the SNS publish of this event's batch;
        # SQS redelivers it and the runtime must only re-publish, never re-apply the delta.
        crash = faults.crash_once("PublishBatch")
        sqs.send_message(QueueUrl=queue, MessageBody=stock_body("e-4", "sku-2", 3))
        stack.drain()
        faults.remove(crash)
        sqs.send_message(QueueUrl=queue, MessageBody=stock_body("e-4", "sku-2", 3))  # + a dup
        sqs.send_message(QueueUrl=queue, MessageBody='{"event_id": "e-5", "sku": "sku-1"}')
        stack.drain()
        rows = ddb.scan(TableName=out["stock_levels_table_name"])["Items"]
        dead = sqs.receive_message(
            QueueUrl=out["stock_dlq_url"], MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        ).get("Messages", [])
        return {
            "crash_fired": crash.fired,
            "stock": {
                f"{r['sku']['S']}@{r['warehouse']['S']}": int(r["quantity"]["N"]) for r in rows
            },
            "dead_letters": [
                [
                    json.loads(m["Body"]).get("event_id"),
                    m.get("MessageAttributes", {}).get("failure_kind", {}).get("StringValue"),
                ]
                for m in dead
            ],
        }


# Each part named on the command line, in order, in this one interpreter.
PART_RUNNERS = {"mocks": run_under_mocks, "emulator": run_on_emulator}
result: dict[str, Any] = {part: PART_RUNNERS[part]() for part in PARTS}
result["package_file"] = idempotent_messaging.__file__
print(json.dumps(result, default=repr))
