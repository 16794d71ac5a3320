"""run-month: invoke the monthly dispatcher for one month, on real AWS or in the emulator.

On AWS (or any endpoint that runs Lambda) this is a synchronous Invoke. The emulator path is
the emulator's own program (`python -m
idempotent_messaging.local.run_month`), which this module runs as a child
process: ops never imports the emulator.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from idempotent_messaging.ops.dlq import OpsError
from idempotent_messaging.ops.outputs import find_value

MANUAL_TRIGGER = "manual"
# The emulator's entry for --target emulator (the package's `local` extra installs its moto).
EMULATOR_RUN_MONTH = "idempotent_messaging.local.run_month"


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


def run_month_in_emulator(
    stack: str,
    month: str,
    *,
    seed: int = 0,
    project_dir: Path | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """Run the emulator's own run-month entry as a child process, relaying its output.

    The emulator is this repository's development tooling (moto, the Pulumi engine under
    mocks); this CLI works against real AWS and never imports it, so it runs the emulator as
    a program, as `--stack` runs the `pulumi` CLI. The child's stdout (its result document, as
    JSON) is relayed to ``out``; its progress and errors go to stderr, which it shares.
    Returns 0, or 2 when the run failed (the child has printed why on stderr)."""
    validate_month(month)
    if importlib.util.find_spec("moto") is None:
        raise OpsError(
            "--target emulator needs the embedded emulator: "
            "pip install 'idempotent-messaging[local]' (or use --target aws with --endpoint-url "
            "for another emulator)"
        )
    command = [sys.executable, "-u", "-m", EMULATOR_RUN_MONTH, "--stack", stack, "--month", month]
    command += ["--seed", str(seed)]
    if project_dir is not None:
        command += ["--project", str(project_dir.resolve())]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None
        for line in child.stdout:
            out(line.rstrip("\n"))
    return 0 if child.returncode == 0 else 2
