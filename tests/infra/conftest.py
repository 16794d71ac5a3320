"""Pulumi mocks for the infra layer: a harness that runs a program function and records it.

The engine is the offline policy engine's (``policy.offline``: one recorder, one set of AWS
mocks for the offline check, these tests and the emulator deploy). ``set_mocks`` is
process-global, so every test gets its own harness (function scope), and each run executes
in a fresh ``contextvars.Context`` (Pulumi keeps its settings, config and root stack in
context variables), so runs never see each other's resources.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockCallArgs, MockResourceArgs

from idempotent_messaging.offline.mocks import AwsMocks
from idempotent_messaging.offline.recorder import RecordedResource
from idempotent_messaging.offline.runner import run_function
from idempotent_messaging.rules.values import UNKNOWN

PROJECT = "idempotent-messaging"
ACCOUNT = "111122223333"
REGION = "ap-northeast-1"


@dataclass
class Registered:
    """One RegisterResource request as the engine received it."""

    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)

    def json(self, prop: str) -> Any:
        """A JSON-string input (policies, redrive policies) parsed."""
        return json.loads(self.inputs[prop])

    @classmethod
    def of(cls, recorded: RecordedResource) -> Registered:
        return cls(
            type=recorded.type,
            name=recorded.name,
            urn=recorded.urn,
            parent=recorded.parent or "",
            custom=recorded.custom,
            dependencies=recorded.dependencies,
            property_dependencies=recorded.property_dependencies,
            inputs=_deserialized(recorded.inputs_struct),
            outputs=_deserialized(recorded.outputs_struct),
        )


def _deserialized(struct: struct_pb2.Struct) -> dict[str, Any]:
    return dict(_plain(rpc.deserialize_properties(struct, keep_unknowns=True)))


def _plain(value: Any) -> Any:
    """Deserialized values with Pulumi's Unknown markers replaced by UNKNOWN."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if type(value).__name__ == "Unknown" or value == rpc.UNKNOWN:
        return UNKNOWN
    return value


LOG_GROUP_TYPE = "aws:cloudwatch/logGroup:LogGroup"


def with_log_group_arn(typ: str, outputs: dict[str, Any]) -> dict[str, Any]:
    """A log group's ``arn`` as AWS gives it: ``arn:<partition>:logs:<region>:<account>:
    log-group:<name>`` (CloudWatch Logs API reference, LogGroup; pulumi-aws drops the trailing
    ``:*``). The offline engine's mocks give it their generic ``arn:aws:cloudwatch:...:<name>``,
    which no IAM database matches (tests/infra/test_policy_database.py reads it from the role
    policies)."""
    arn = outputs.get("arn")
    if typ != LOG_GROUP_TYPE or not isinstance(arn, str) or not arn.startswith("arn:"):
        return outputs
    partition, region, account = arn.split(":")[1], arn.split(":")[3], arn.split(":")[4]
    name = outputs.get("name")
    return {**outputs, "arn": f"arn:{partition}:logs:{region}:{account}:log-group:{name}"}


class ComponentMocks(AwsMocks):
    """The offline engine's AWS mocks (realistic ARNs/URLs in this stack's region and account,
    so ARN parsing in the component is exercised; computed outputs unknown in a preview),
    refusing invokes: the components must not depend on data sources."""

    def __init__(self, *, preview: bool) -> None:
        super().__init__(preview=preview, region=REGION, account_id=ACCOUNT)

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, outputs = super().new_resource(args)
        return resource_id, with_log_group_arn(args.typ, outputs)

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        raise AssertionError(f"the component must not call invokes; it called {args.token}")


@dataclass
class Run:
    """What one program run registered, plus the values its outputs resolved to."""

    registered: list[Registered]
    values: dict[str, Any]
    component_outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """URN -> outputs a component registered (``register_outputs``)."""

    def of_type(self, typ: str) -> list[Registered]:
        return [r for r in self.registered if r.type == typ]

    def one(self, typ: str, name: str | None = None) -> Registered:
        found = [r for r in self.of_type(typ) if name is None or r.name == name]
        assert len(found) == 1, f"expected one {typ} {name or ''}, got {[r.name for r in found]}"
        return found[0]

    def by_urn(self, urn: str) -> Registered:
        return next(r for r in self.registered if r.urn == urn)


class PulumiHarness:
    """Runs a program function under the offline engine's mocks and recorder. When it returns
    a mapping of names to Outputs, the run's ``values`` hold them resolved (UNKNOWN where a
    preview cannot know them)."""

    def __init__(self) -> None:
        # The stack's region, as `aws:region` in a stack file gives it.
        self.config: dict[str, str] = {"aws:region": REGION}

    def run(
        self,
        program: Callable[[], Any],
        *,
        preview: bool = False,
        stack: str = "test",
        config: Mapping[str, str] | None = None,
    ) -> Run:
        result = run_function(
            program,
            project=PROJECT,
            stack=stack,
            preview=preview,
            mocks=ComponentMocks(preview=preview),
            config=dict(self.config if config is None else config),
        )
        return Run(
            [Registered.of(r) for r in result.resources if r.type != "pulumi:pulumi:Stack"],
            result.values,
            {urn: _deserialized(s) for urn, s in result.component_outputs.items()},
        )


@pytest.fixture
def pulumi_harness() -> Iterator[PulumiHarness]:
    """A fresh harness per test (set_mocks is global: never share it across tests)."""
    yield PulumiHarness()


OUTPUT_NAMES = (
    "queue_url", "queue_arn", "queue_name", "dlq_url", "dlq_arn", "dlq_name",
    "state_table_name", "state_table_arn", "business_table_name", "topic_arn",
    "function_name", "function_arn", "role_arn", "alarm_names", "alarm_topic_arn",
)  # fmt: skip
DEFAULT_HANDLER = "handlers.orders.handler"
HANDLERS_DIR = Path(__file__).resolve().parents[2] / "handlers"


def reference_code() -> Any:
    """The reference program's handlers/ as the reference program passes it (__main__.py)."""
    import pulumi

    return pulumi.AssetArchive({"handlers": pulumi.FileArchive(str(HANDLERS_DIR))})


def consumer_args(**overrides: Any) -> Any:
    """Args of a consumer running the reference ``orders`` handler, unless overridden."""
    from idempotent_messaging.components import IdempotentQueueConsumerArgs

    defaults: dict[str, Any] = {"handler": DEFAULT_HANDLER}
    if "code_path" not in overrides and "code" not in overrides:
        defaults["code"] = reference_code()
    return IdempotentQueueConsumerArgs(**{**defaults, **overrides})


ConsumerRunner = Callable[..., Run]


@pytest.fixture
def run_consumer(pulumi_harness: PulumiHarness) -> ConsumerRunner:
    """Build one IdempotentQueueConsumer named ``orders`` from arg overrides; the Run's
    ``values`` hold every component output, resolved."""

    def runner(
        *,
        preview: bool = False,
        name: str = "orders",
        config: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> Run:
        from idempotent_messaging.components import IdempotentQueueConsumer

        args = consumer_args(**overrides)

        def program() -> dict[str, Any]:
            consumer = IdempotentQueueConsumer(name, args)
            return {output: getattr(consumer, output) for output in OUTPUT_NAMES}

        return pulumi_harness.run(program, preview=preview, config=config)

    return runner
