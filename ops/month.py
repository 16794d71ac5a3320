"""run-month: invoke the monthly dispatcher for one month, on real AWS or in the emulator."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from handlers.dispatch import env as dispatch_env
from ops.dlq import OpsError
from ops.outputs import find_value

MANUAL_TRIGGER = "manual"
DISPATCHER_HANDLER_PREFIX = "handlers.dispatch"


def validate_month(month: str) -> str:
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
        raise OpsError(f"--month must be YYYY-MM (e.g. 2026-06), got {month!r}")
    return month


def manual_payload(month: str) -> dict[str, str]:
    return {"month": validate_month(month), "trigger": MANUAL_TRIGGER}


def dispatcher_name(outputs: dict[str, Any]) -> str:
    name = find_value(outputs, "dispatcher", "name")
    if not name:
        raise OpsError(
            "the stack outputs name no dispatcher function (an output key containing "
            "'dispatcher' and 'name'); is a MonthlyFanout deployed in this stack?"
        )
    return name


def run_month_aws(lambda_client: Any, outputs: dict[str, Any], month: str) -> dict[str, Any]:
    """Synchronous Lambda invoke of the deployed dispatcher with the manual trigger."""
    name = dispatcher_name(outputs)
    response = lambda_client.invoke(
        FunctionName=name,
        InvocationType="RequestResponse",
        Payload=json.dumps(manual_payload(month)).encode(),
    )
    payload = response["Payload"].read().decode() if response.get("Payload") else ""
    try:
        body: Any = json.loads(payload) if payload else None
    except json.JSONDecodeError:
        body = payload
    if response.get("FunctionError"):
        raise OpsError(f"dispatcher {name} failed ({response['FunctionError']}): {body}")
    return {"function": name, "response": body}


def run_month_emulator(
    stack: str,
    month: str,
    *,
    seed: int = 0,
    project_dir: Path | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Invoke the dispatcher in-process against the kept emulator of `stack` (or a fresh one),
    then drain the work queue through the charge consumer with the emulator poller."""
    # Imported here: real-AWS use of the CLI needs neither moto nor the Pulumi runtime.
    from emulator.invoke import handler_output_to, invoke
    from emulator.session import attach_session, start_session
    from ops.outputs import emulator_state_dir

    validate_month(month)
    session = attach_session(stack)
    if session is None:
        log(f"no running emulator for stack {stack}: starting one and deploying the stack")
        session = start_session(stack, project_dir) if project_dir else start_session(stack)
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
        # The handlers' log lines go to a file; stdout keeps the summary.
        with handler_output_to(log_path):
            result = invoke(
                dispatcher,
                manual_payload(month),
                region=session.region,
                endpoint_url=session.endpoint_url,
            )
            # The session's poller releases failed records at once instead of after the
            # visibility timeout, so the drain finishes in seconds (a deliberate difference).
            batches = session.drain(timeout_s=120) if result.ok else 0
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
