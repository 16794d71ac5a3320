"""run-month in the emulator: the dispatcher invoked in-process, the work queue drained.

    python -m idempotent_messaging.local.run_month --month 2026-06 [--stack dev] \
        [--seed 12] [--project DIR]

`python -m idempotent_messaging.ops run-month --target emulator` runs this entry as a child
process: the ops CLI works against real AWS and never imports the emulator (moto, the Pulumi
engine under mocks).
Lambda's Invoke needs Docker in moto, so the dispatcher runs here, in-process, against the
kept emulator of the stack (`make demo KEEP=1`) or a fresh one deployed for this run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from idempotent_messaging.dispatch import env as dispatch_env

# The deploy's own error type: a stack program that cannot run, named with its cause.
from idempotent_messaging.local.deploy import PROJECT_DIR, ProgramError
from idempotent_messaging.local.invoke import handler_output_to, invoke
from idempotent_messaging.local.session import attach_session, start_session
from idempotent_messaging.ops.dlq import OpsError
from idempotent_messaging.ops.month import manual_payload, validate_month
from idempotent_messaging.ops.outputs import OutputsError, emulator_state_dir

DISPATCHER_HANDLER_PREFIX = "idempotent_messaging.dispatch"
# A month of the demo's size drains in seconds; past this the scenario never settles.
DRAIN_TIMEOUT_S = 120.0


def run_month(
    stack: str,
    month: str,
    *,
    seed: int = 0,
    project_dir: Path = PROJECT_DIR,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Invoke the dispatcher in-process against the kept emulator of `stack` (or a fresh one),
    then drain the work queue through the charge consumer with the emulator poller. Progress
    goes to ``log`` (default: stderr; stdout carries the result document alone)."""
    log = log or _progress
    validate_month(month)
    session = attach_session(stack)
    if session is None:
        log(f"no running emulator for stack {stack}: starting one and deploying the stack")
        session = start_session(stack, project_dir)
    else:
        log(f"attached to the kept emulator at {session.endpoint_url}")
    try:
        dispatchers = [
            fn
            for fn in session.registry.functions.values()
            if fn.handler.startswith(DISPATCHER_HANDLER_PREFIX)
        ]
        if len(dispatchers) != 1:
            raise OpsError(
                f"expected one dispatcher function (handler {DISPATCHER_HANDLER_PREFIX}.*) in "
                f"the emulator deploy of {stack}, found {len(dispatchers)}"
            )
        dispatcher = dispatchers[0]
        if seed:
            seeded = seed_billing_accounts(session.client("dynamodb"), dispatcher.environment, seed)
            log(f"seeded {len(seeded)} active billing accounts")
        log_path = emulator_state_dir() / f"run-month-{stack}.log"
        # The handlers' log lines go to a file; stdout keeps the result document.
        with handler_output_to(log_path):
            result = invoke(
                dispatcher,
                manual_payload(month),
                region=session.region,
                endpoint_url=session.endpoint_url,
            )
            # The session's poller releases failed records at once instead of after the
            # visibility timeout, so the drain finishes in seconds (a deliberate difference).
            batches = session.drain(timeout_s=DRAIN_TIMEOUT_S) if result.ok else 0
        if not result.ok:
            raise OpsError(
                f"dispatcher {dispatcher.name} failed: {result.error!r} (log {log_path})"
            )
        log(f"dispatcher {dispatcher.name}: {json.dumps(result.response, default=str)}")
        log(f"drained {batches} batch(es) through the stack's event source mappings")
        log(f"handler logs: {log_path}")
        return {
            "function": dispatcher.name,
            "response": result.response,
            "batches": batches,
            "mappings": {m: vars(s) for m, s in session.poller.stats.items()},
        }
    finally:
        session.close()


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def seed_billing_accounts(
    ddb: Any, dispatcher_env: dict[str, str], count: int
) -> list[tuple[str, str]]:
    """Demo data for the dispatcher's billing_accounts table: `count` active employees,
    spread over three tenants. Returns their (tenant_id, employee_id) keys."""
    table = dispatcher_env.get(dispatch_env.BILLING_ACCOUNTS_TABLE)
    if not table:
        raise OpsError(
            f"the dispatcher has no {dispatch_env.BILLING_ACCOUNTS_TABLE} variable: cannot seed"
        )
    keys = [(f"tenant-{i % 3 + 1}", f"emp-{i:04d}") for i in range(count)]
    for i, (tenant, employee) in enumerate(keys):
        ddb.put_item(
            TableName=table,
            Item={
                "tenant_id": {"S": tenant},
                "employee_id": {"S": employee},
                "amount": {"N": str(1000 + i)},
                "currency": {"S": "JPY"},
                "active": {"BOOL": True},
            },
        )
    return keys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m idempotent_messaging.local.run_month", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--stack", default="dev", help="stack name (default: dev)")
    parser.add_argument("--month", required=True, help="billing month YYYY-MM")
    parser.add_argument("--seed", type=int, default=0, help="seed N demo billing accounts first")
    parser.add_argument(
        "--project",
        type=Path,
        default=PROJECT_DIR,
        help="Pulumi project dir (default: the current directory)",
    )
    args = parser.parse_args(argv)
    try:
        result = run_month(args.stack, args.month, seed=args.seed, project_dir=args.project)
    except (OpsError, OutputsError, ProgramError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (ClientError, BotoCoreError) as exc:
        print(f"error: emulator call failed: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
