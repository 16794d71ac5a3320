"""Where the ops CLI finds the consumers: stack outputs, from Pulumi, a file or the emulator.

Outputs are read, never guessed: a consumer is any output object (at any depth) that names a
source queue and its DLQ (`queue_url`/`queueUrl` and `dlq_url`/`dlqUrl`, or the ARNs), or a
flat family of keys sharing a prefix (`orders_queue_url`, `orders_dlq_url`, ...).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Where a kept emulator saves its deploy; EMULATOR_STATE_DIR overrides (tests, parallel runs).
STATE_DIR_VARIABLE = "EMULATOR_STATE_DIR"
DEFAULT_STATE_DIR = Path(".emulator")
"""Relative to the current directory: the project whose emulator was kept (`make demo KEEP=1`)."""


def emulator_state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_VARIABLE) or DEFAULT_STATE_DIR)


class OutputsError(Exception):
    """Stack outputs could not be read; the message says where from and why."""


@dataclass
class DeployedConsumer:
    """A consumer as a stack's outputs describe it: its queue, DLQ and function, by name/URL/ARN."""

    name: str
    queue_url: str | None = None
    queue_arn: str | None = None
    dlq_url: str | None = None
    dlq_arn: str | None = None
    function_name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def fifo(self) -> bool:
        ref = self.queue_url or self.queue_arn or ""
        return ref.endswith(".fifo")


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).replace("-", "_").lower()


_FIELDS = {
    "queue_url": "queue_url",
    "queue_arn": "queue_arn",
    "dlq_url": "dlq_url",
    "dlq_arn": "dlq_arn",
    "function_name": "function_name",
}


def _consumer_from(name: str, values: dict[str, Any]) -> DeployedConsumer | None:
    snake = {_snake(k): v for k, v in values.items() if isinstance(v, str)}
    found = {attr: snake[key] for key, attr in _FIELDS.items() if key in snake}
    has_source = "queue_url" in found or "queue_arn" in found
    has_dlq = "dlq_url" in found or "dlq_arn" in found
    if not (has_source and has_dlq):
        return None
    extra = {k: v for k, v in snake.items() if k not in _FIELDS}
    return DeployedConsumer(name=name, extra=extra, **found)


def find_consumers(outputs: dict[str, Any]) -> list[DeployedConsumer]:
    """Every consumer the outputs describe, named by its output path (`monthly-charge/consumer`)."""
    consumers: list[DeployedConsumer] = []

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            return
        consumer = _consumer_from(path or "stack", node)
        if consumer is not None:
            consumers.append(consumer)
        else:
            consumers.extend(_flat_consumers(node, path))
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, f"{path}/{key}" if path else key)

    walk(outputs, "")
    return consumers


def _flat_consumers(node: dict[str, Any], path: str) -> list[DeployedConsumer]:
    """`<prefix>_queue_url` + `<prefix>_dlq_url` (+ any other `<prefix>_*`) style exports."""
    snake = {_snake(k): v for k, v in node.items()}
    prefixes = sorted(
        {k[: -len(s) - 1] for k in snake for s in ("queue_url", "queue_arn") if k.endswith("_" + s)}
    )
    consumers = []
    for prefix in prefixes:
        values = {k[len(prefix) + 1 :]: v for k, v in snake.items() if k.startswith(prefix + "_")}
        consumer = _consumer_from(f"{path}/{prefix}" if path else prefix, values)
        if consumer is not None:
            consumers.append(consumer)
    return consumers


def find_value(outputs: dict[str, Any], *words: str) -> str | None:
    """The first string output whose key path contains every word (e.g. "dispatcher", "name")."""
    matches: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}/{_snake(key)}")
        elif isinstance(node, str) and all(w in path for w in words):
            matches.append(node)

    walk(outputs, "")
    return matches[0] if matches else None


def load_outputs_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise OutputsError(f"outputs file {path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise OutputsError(f"outputs file {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise OutputsError(f"outputs file {path} must hold a JSON object of stack outputs")
    # The emulator state file wraps the outputs with the deploy registry.
    if "outputs" in data and "functions" in data:
        return dict(data["outputs"])
    return data


def pulumi_stack_outputs(stack: str, cwd: Path | None = None) -> dict[str, Any]:
    """`pulumi stack output --json --show-secrets --stack S` (real stacks)."""
    if shutil.which("pulumi") is None:
        raise OutputsError(
            "the pulumi CLI is not on PATH: install it, or pass --outputs FILE "
            "(e.g. `pulumi stack output --json > outputs.json` where the CLI is available)"
        )
    proc = subprocess.run(
        ["pulumi", "stack", "output", "--json", "--show-secrets", "--stack", stack],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )
    if proc.returncode != 0:
        raise OutputsError(f"pulumi stack output --stack {stack} failed: {proc.stderr.strip()}")
    data = json.loads(proc.stdout or "{}")
    if not isinstance(data, dict):
        raise OutputsError("pulumi stack output did not return a JSON object")
    return data


def emulator_state_path(stack: str) -> Path:
    """Where a kept emulator (`make demo KEEP=1`) writes its deploy: registry + outputs."""
    return emulator_state_dir() / f"{stack}.json"
