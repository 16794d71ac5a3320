"""A deployed stack in the emulator: the Python API for scenarios of your own.

    from idempotent_messaging.local.session import start_session

    with start_session("dev") as stack:          # fresh emulator + the dev stack deployed
        sqs = stack.client("sqs")
        sqs.send_message(QueueUrl=stack.outputs["orders_queue_url"], MessageBody=...)
        stack.drain()                             # the stack's pollers run the real handlers
        stack.client("dynamodb").scan(TableName=stack.outputs["orders_business_table_name"])

`make demo KEEP=1` saves its deploy (endpoint, outputs, function registry, mappings,
schedules, alarms) to .emulator/<stack>.json and keeps polling; `attach_session(stack)` gives
another process the same API over that kept emulator (`local.run_month` uses it).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idempotent_messaging.local.deploy import PROJECT_DIR, DeployResult, deploy, stack_region
from idempotent_messaging.local.poller import Poller
from idempotent_messaging.local.registry import Registry
from idempotent_messaging.local.server import Emulator, emulator_client, start_emulator
from idempotent_messaging.ops.outputs import emulator_state_path

# A drain that has not settled by then means a scenario that never settles: fail loudly.
DEFAULT_DRAIN_TIMEOUT_S = 60.0


def state_path(stack: str) -> Path:
    """The kept emulator's state file (the ops CLI reads the same path)."""
    return emulator_state_path(stack)


def reachable(endpoint_url: str) -> bool:
    """True when something answers HTTP at the endpoint (any status: it is listening)."""
    try:
        with urllib.request.urlopen(endpoint_url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


@dataclass
class StackSession:
    """A stack deployed in a running emulator: its outputs, clients and pollers."""

    registry: Registry
    endpoint_url: str
    emulator: Emulator | None = None  # set when this process owns the server
    deploy_result: DeployResult | None = None
    _poller: Poller | None = None

    @property
    def region(self) -> str:
        return self.registry.region

    @property
    def outputs(self) -> dict[str, Any]:
        """The stack outputs, as `pulumi stack output --json` gives them, holding the
        emulator's real queue URLs, ARNs and table names."""
        return self.registry.outputs

    def client(self, service: str, **config: Any) -> Any:
        """A boto3 client bound to this emulator (fake credentials, the stack's region)."""
        return emulator_client(service, self.endpoint_url, self.region, **config)

    @property
    def poller(self) -> Poller:
        """The stack's event-source-mapping pollers (one Poller serves every mapping).

        Failed records are made visible again at once instead of after the queue's
        visibility timeout (190 s in dev), so that a scenario's retries take seconds; the
        poller's own tests check the Lambda behaviour with this off.
        """
        if self._poller is None:
            self._poller = Poller(
                self.registry, self.endpoint_url, self.client("sqs"), release_failed=True
            )
        return self._poller

    def drain(self, timeout_s: float = DEFAULT_DRAIN_TIMEOUT_S) -> int:
        """Run every SQS mapping of the stack until its queue stays empty; returns the number
        of batches the handlers processed. Raises TimeoutError past timeout_s."""
        return self.poller.drain(timeout_s=timeout_s)

    def save(self, path: Path) -> None:
        self.registry.endpoint_url = self.endpoint_url
        self.registry.save(path)

    def close(self) -> None:
        """Stop the emulator if this process started it (an attached one keeps running)."""
        if self.emulator is not None:
            self.emulator.stop()
            self.emulator = None

    def __enter__(self) -> StackSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def start_session(stack: str, project_dir: Path = PROJECT_DIR) -> StackSession:
    """Start a fresh emulator in the stack's region and deploy the stack into it.

    Every resource type the emulator cannot materialise is listed in
    `session.registry.unsupported()` (the deploy report prints them as NOT MATERIALISED).
    """
    region = stack_region(project_dir, stack, "ap-northeast-1")
    emulator = start_emulator(region)
    try:
        result = deploy(emulator, stack, project_dir)
    except BaseException:
        emulator.stop()
        raise
    return StackSession(result.registry, emulator.endpoint_url, emulator, result)


def attach_session(stack: str) -> StackSession | None:
    """The kept emulator of `stack`, if its state file exists and its endpoint answers."""
    path = state_path(stack)
    if not path.is_file():
        return None
    registry = Registry.load(path)
    if not registry.endpoint_url or not reachable(registry.endpoint_url):
        return None
    return StackSession(registry, registry.endpoint_url)
