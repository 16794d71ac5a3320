"""A deployed stack in the emulator: started here, or attached to a kept one (KEEP=1).

`make demo KEEP=1` saves the deploy (function registry, mappings, schedules, alarms, outputs,
endpoint) to .emulator/<stack>.json; another process (the ops CLI) attaches to it and can
invoke the stack's functions in-process against the same emulator.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulator.deploy import PROJECT_DIR, DeployResult, deploy, stack_region
from emulator.registry import Registry
from emulator.server import Emulator, emulator_environment, start_emulator
from ops.outputs import emulator_state_path


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
    registry: Registry
    endpoint_url: str
    emulator: Emulator | None = None  # set when this process owns the server
    deploy_result: DeployResult | None = None

    @property
    def region(self) -> str:
        return self.registry.region

    def client(self, service: str) -> Any:
        import boto3

        env = emulator_environment(self.endpoint_url, self.region)
        return boto3.client(
            service,
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=env["AWS_SESSION_TOKEN"],
        )

    def save(self, path: Path) -> None:
        self.registry.endpoint_url = self.endpoint_url
        self.registry.save(path)

    def close(self) -> None:
        if self.emulator is not None:
            self.emulator.stop()
            self.emulator = None


def start_session(stack: str, project_dir: Path = PROJECT_DIR) -> StackSession:
    """Start a fresh emulator in the stack's region and deploy the stack into it."""
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
