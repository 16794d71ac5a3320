"""What the emulator deploy materialised outside moto: functions, mappings, schedules, alarms.

moto stores Lambda functions but cannot run them (invoke needs Docker) and would invoke them
itself if it held an SQS event source mapping, so the deploy keeps the runtime-relevant
settings here and the poller / scheduler driver act on them in-process. The registry is
serialisable so that a kept emulator's state can be used from another process (ops CLI).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class FunctionConfig:
    name: str
    arn: str
    handler: str
    runtime: str
    timeout_s: int
    memory_mb: int
    environment: dict[str, str]
    role_arn: str = ""
    logical_name: str = ""
    code_root: str = ""  # directory the code archive was built from (the import root)
    # Asynchronous invocation (FunctionEventInvokeConfig): Lambda's defaults are 2 retries.
    async_max_retries: int = 2
    async_max_event_age_s: int = 21600
    async_on_failure: str | None = None
    recursive_loop: str = "Terminate"
    tags: dict[str, str] = field(default_factory=dict)
    """The function's tags: the components tag each child with the instance that created it
    (idempotent-messaging:component), which names the consumer in local reports."""


@dataclass
class MappingConfig:
    uuid: str
    function_name: str
    event_source_arn: str
    batch_size: int
    maximum_batching_window_s: int
    function_response_types: list[str]
    enabled: bool = True
    maximum_concurrency: int | None = None
    logical_name: str = ""


@dataclass
class ScheduleConfig:
    name: str
    arn: str
    group: str
    expression: str
    timezone: str
    target_arn: str
    target_input: str | None
    role_arn: str
    retry_policy: dict[str, Any] = field(default_factory=dict)
    dead_letter_arn: str | None = None
    flexible_time_window: dict[str, Any] = field(default_factory=dict)
    state: str = "ENABLED"
    logical_name: str = ""


@dataclass
class AlarmConfig:
    name: str
    metric_name: str
    namespace: str
    comparison_operator: str
    threshold: float
    dimensions: dict[str, str]
    statistic: str | None = None
    alarm_actions: list[str] = field(default_factory=list)
    ok_actions: list[str] = field(default_factory=list)
    logical_name: str = ""


@dataclass
class DeployedResource:
    """One resource the program declared and what the emulator did with it."""

    type: str
    name: str
    status: str  # "created" | "component" | "provider" | "unsupported" | "failed"
    physical_id: str = ""
    detail: str = ""


@dataclass
class Registry:
    region: str
    endpoint_url: str = ""
    functions: dict[str, FunctionConfig] = field(default_factory=dict)  # by function name
    mappings: list[MappingConfig] = field(default_factory=list)
    schedules: dict[str, ScheduleConfig] = field(default_factory=dict)  # by schedule name
    alarms: list[AlarmConfig] = field(default_factory=list)
    resources: list[DeployedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, resource: DeployedResource) -> None:
        with self._lock:
            self.resources.append(resource)

    def function(self, name_or_arn: str) -> FunctionConfig:
        """Look a function up by name, ARN or qualified ARN (as a mapping or target names it)."""
        for fn in self.functions.values():
            if name_or_arn in (fn.name, fn.arn) or name_or_arn.startswith(fn.arn + ":"):
                return fn
        known = ", ".join(sorted(self.functions)) or "none"
        raise KeyError(f"no function {name_or_arn!r} in the emulator deploy (known: {known})")

    def unsupported(self) -> list[DeployedResource]:
        return [r for r in self.resources if r.status in ("unsupported", "failed")]

    def to_json(self) -> dict[str, Any]:
        # asdict() on self would try to deep-copy the lock.
        return {
            "region": self.region,
            "endpoint_url": self.endpoint_url,
            "functions": {k: asdict(v) for k, v in self.functions.items()},
            "mappings": [asdict(m) for m in self.mappings],
            "schedules": {k: asdict(v) for k, v in self.schedules.items()},
            "alarms": [asdict(a) for a in self.alarms],
            "resources": [asdict(r) for r in self.resources],
            "outputs": self.outputs,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Registry:
        return cls(
            region=data["region"],
            endpoint_url=data.get("endpoint_url", ""),
            functions={k: FunctionConfig(**v) for k, v in data.get("functions", {}).items()},
            mappings=[MappingConfig(**m) for m in data.get("mappings", [])],
            schedules={k: ScheduleConfig(**v) for k, v in data.get("schedules", {}).items()},
            alarms=[AlarmConfig(**a) for a in data.get("alarms", [])],
            resources=[DeployedResource(**r) for r in data.get("resources", [])],
            outputs=data.get("outputs", {}),
        )

    def save(self, path: Path) -> None:
        """Readable by the owner alone: the functions' environments hold the stack's secrets
        in plaintext (the handlers of another process need them, as Lambda does)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(descriptor, 0o600)  # a file an older run left readable by others
        with os.fdopen(descriptor, "w") as out:
            out.write(json.dumps(self.to_json(), indent=2, default=str) + "\n")

    @classmethod
    def load(cls, path: Path) -> Registry:
        return cls.from_json(json.loads(path.read_text()))
