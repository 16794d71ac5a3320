"""Pulumi mocks for the infra layer: a recording monitor and a harness that runs a program.

``set_mocks`` is process-global, so every test gets its own harness (function scope), and
each run executes in a fresh ``contextvars.Context`` (Pulumi keeps its settings, config and
root stack in context variables), so runs never see each other's resources.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pytest
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

PROJECT = "idempotent-messaging"
ACCOUNT = "111122223333"
REGION = "ap-northeast-1"
UNKNOWN = "<unknown>"


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


def _plain(value: Any) -> Any:
    """Deserialized values with Pulumi's Unknown markers replaced by UNKNOWN."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if type(value).__name__ == "Unknown" or value == rpc.UNKNOWN:
        return UNKNOWN
    return value


class RealisticMocks(pulumi.runtime.Mocks):
    """Echo inputs and add the ARNs/URLs AWS would compute (realistic shapes, so ARN parsing
    in the component is exercised). In preview, computed outputs are omitted and become
    unknown, as in a real `pulumi preview` of new resources."""

    def __init__(self, *, preview: bool) -> None:
        self.preview = preview

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        inputs = dict(args.inputs)
        if self.preview or not args.custom:
            return "", inputs
        name = str(inputs.get("name", args.name))
        arn_prefix = f"arn:aws:{{}}:{REGION}:{ACCOUNT}"
        computed: dict[str, Any]
        typ = args.typ
        if typ == "aws:sqs/queue:Queue":
            url = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
            computed = {"arn": f"{arn_prefix.format('sqs')}:{name}", "url": url}
            return url, {**inputs, **computed}
        if typ == "aws:dynamodb/table:Table":
            computed = {"arn": f"{arn_prefix.format('dynamodb')}:table/{name}"}
        elif typ == "aws:sns/topic:Topic":
            computed = {"arn": f"{arn_prefix.format('sns')}:{name}"}
        elif typ == "aws:lambda/function:Function":
            computed = {"arn": f"{arn_prefix.format('lambda')}:function:{name}"}
        elif typ == "aws:iam/role:Role":
            computed = {"arn": f"arn:aws:iam::{ACCOUNT}:role/{name}"}
        elif typ == "aws:cloudwatch/logGroup:LogGroup":
            computed = {"arn": f"{arn_prefix.format('logs')}:log-group:{name}"}
        elif typ == "aws:cloudwatch/metricAlarm:MetricAlarm":
            computed = {"arn": f"{arn_prefix.format('cloudwatch')}:alarm:{name}"}
        elif typ == "aws:kms/key:Key":
            key_id = hashlib.md5(args.name.encode()).hexdigest()
            computed = {"arn": f"{arn_prefix.format('kms')}:key/{key_id}", "keyId": key_id}
        else:
            computed = {}
        return f"{args.name}-id", {**inputs, **computed}

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        raise AssertionError(f"the component must not call invokes; it called {args.token}")


class RecordingMonitor(MockMonitor):
    """MockMonitor that records every RegisterResource request (type, name, parent,
    dependencies, property dependencies, inputs) and the mocked outputs."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registered: list[Registered] = []
        self.component_outputs: dict[str, dict[str, Any]] = {}
        """URN -> what a component passed to ``register_outputs``."""

    def RegisterResourceOutputs(self, request: Any) -> Any:
        self.component_outputs[request.urn] = _plain(rpc.deserialize_properties(request.outputs))
        return super().RegisterResourceOutputs(request)

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            state = self.resources.get(response.urn)
            self.registered.append(
                Registered(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    parent=request.parent,
                    custom=bool(request.custom),
                    dependencies=list(request.dependencies),
                    property_dependencies={
                        k: list(v.urns) for k, v in request.propertyDependencies.items()
                    },
                    inputs=_plain(rpc.deserialize_properties(request.object)),
                    outputs=_plain(dict(state.state)) if state is not None else {},
                )
            )
        return response


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
    """Runs a program function under mocks. When it returns a mapping of names to Outputs,
    the run's ``values`` hold them resolved (UNKNOWN where a preview cannot know them)."""

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
        mocks = RealisticMocks(preview=preview)
        monitor = RecordingMonitor(mocks)
        values: dict[str, Any] = {}

        def execute() -> None:
            pulumi.runtime.set_mocks(
                mocks, project=PROJECT, stack=stack, preview=preview, monitor=monitor
            )
            pulumi.runtime.set_all_config(dict(self.config if config is None else config))
            SETTINGS.rpc_manager.clear()
            SETTINGS.outputs.clear()

            async def body() -> None:
                exported = program()
                if not isinstance(exported, Mapping):
                    return
                for key, value in exported.items():
                    out = pulumi.Output.from_input(value)
                    values[key] = await out.future() if await out.is_known() else UNKNOWN

            _sync_await(run_pulumi_func(body))

        contextvars.Context().run(execute)
        return Run(monitor.registered, values, monitor.component_outputs)


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


def consumer_args(**overrides: Any) -> Any:
    from components import IdempotentQueueConsumerArgs

    return IdempotentQueueConsumerArgs(**{"handler": DEFAULT_HANDLER, **overrides})


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
        from components import IdempotentQueueConsumer

        args = consumer_args(**overrides)

        def program() -> dict[str, Any]:
            consumer = IdempotentQueueConsumer(name, args)
            return {output: getattr(consumer, output) for output in OUTPUT_NAMES}

        return pulumi_harness.run(program, preview=preview, config=config)

    return runner
