"""The components as a Pulumi component package (components/PulumiPlugin.yaml).

The schema is the one the Python SDK's analyzer infers in-process (``pulumi.provider.
experimental``), as the engine receives it from GetSchema; construct is the provider's own
``ComponentProvider.construct`` under Pulumi mocks, i.e. what runs when a TypeScript or YAML
program declares a component.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import grpc
import pulumi
import pytest
import yaml
from pulumi.runtime import proto
from pulumi.runtime.proto import provider_pb2_grpc

import idempotent_messaging
from idempotent_messaging.components import (
    CONSUMER_OUTPUTS,
    FANOUT_OUTPUTS,
    BusinessTableArgs,
    IdempotentQueueConsumer,
    IdempotentQueueConsumerArgs,
    MonthlyFanout,
    MonthlyFanoutArgs,
)
from idempotent_messaging.components.function_args import FunctionArgs
from idempotent_messaging.components.provider import PACKAGE_NAME, IdempotentMessagingProvider
from idempotent_messaging.offline.recorder import RecordingMonitor
from idempotent_messaging.stage import camel

from ..distributions import (
    ONLY_REQUIREMENTS,
    requirement_closure,
    requirement_lines,
    requirement_name,
)
from .conftest import PulumiHarness, Run, reference_code

pytestmark = pytest.mark.infra

REPOSITORY = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPOSITORY / "components"
VERSION = idempotent_messaging.__version__
CONSUMER = f"{PACKAGE_NAME}:index:IdempotentQueueConsumer"
FANOUT = f"{PACKAGE_NAME}:index:MonthlyFanout"
BUSINESS_TABLE = f"{PACKAGE_NAME}:index:BusinessTableArgs"
# What another language can pass and hold (the Pulumi package schema's own vocabulary): plain
# types, arrays, maps, the package's object types and Pulumi's Archive. No Python callables.
SCHEMA_TYPES = {"string", "integer", "number", "boolean", "array", "object"}
PULUMI_REFS = {"pulumi.json#/Archive", "pulumi.json#/Asset"}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return IdempotentMessagingProvider(VERSION).schema_json()


def fields_of(args_type: type) -> dict[str, dataclasses.Field[Any]]:
    return {camel(f.name): f for f in dataclasses.fields(args_type)}


def without_default(args_type: type) -> set[str]:
    return {
        name
        for name, f in fields_of(args_type).items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }


def type_problems(where: str, prop: dict[str, Any], schema: dict[str, Any]) -> Iterator[str]:
    """Every way ``prop`` (and the items or values it holds) lacks a type another language
    can express."""
    ref = prop.get("$ref")
    if ref is not None:
        local = ref.removeprefix("#/types/")
        if ref not in PULUMI_REFS and local not in schema["types"]:
            yield f"{where}: $ref {ref} is neither a package type nor a Pulumi type"
        return
    kind = prop.get("type")
    if kind not in SCHEMA_TYPES:
        yield f"{where}: no schema type ({prop})"
    if kind == "array":
        yield from type_problems(f"{where}[]", prop.get("items", {}), schema)
    if kind == "object" and "additionalProperties" in prop:
        yield from type_problems(f"{where}{{}}", prop["additionalProperties"], schema)


# --- Schema ------------------------------------------------------------------------------------


def test_schema_holds_both_components_under_index_tokens(schema: dict[str, Any]) -> None:
    # The engine asks a component package's provider to construct `<package>:index:<Class>`.
    assert schema["name"] == PACKAGE_NAME
    assert schema["version"] == VERSION
    assert set(schema["resources"]) == {CONSUMER, FANOUT}
    assert all(r["isComponent"] for r in schema["resources"].values())
    assert set(schema["types"]) == {BUSINESS_TABLE}


@pytest.mark.parametrize(
    ("token", "args_type"),
    [(CONSUMER, IdempotentQueueConsumerArgs), (FANOUT, MonthlyFanoutArgs)],
)
def test_inputs_are_exactly_the_args_fields_and_required_are_those_without_default(
    schema: dict[str, Any], token: str, args_type: type
) -> None:
    resource = schema["resources"][token]
    assert set(resource["inputProperties"]) == set(fields_of(args_type))
    assert set(resource.get("requiredInputs", [])) == without_default(args_type)


def test_business_table_type_requires_what_its_dataclass_requires(schema: dict[str, Any]) -> None:
    table = schema["types"][BUSINESS_TABLE]
    assert set(table["properties"]) == set(fields_of(BusinessTableArgs))
    assert set(table["required"]) == without_default(BusinessTableArgs) == {"name", "hashKey"}
    consumer_inputs = schema["resources"][CONSUMER]["inputProperties"]
    assert consumer_inputs["businessTable"]["$ref"] == f"#/types/{BUSINESS_TABLE}"


@pytest.mark.parametrize(
    ("token", "outputs"), [(CONSUMER, CONSUMER_OUTPUTS), (FANOUT, FANOUT_OUTPUTS)]
)
def test_outputs_are_the_registered_outputs(
    schema: dict[str, Any], token: str, outputs: tuple[str, ...]
) -> None:
    assert set(schema["resources"][token]["properties"]) == {camel(o) for o in outputs}


def test_every_input_and_output_has_a_type_and_a_description(schema: dict[str, Any]) -> None:
    problems: list[str] = []
    described: list[tuple[str, dict[str, Any]]] = []
    for token, resource in schema["resources"].items():
        assert resource.get("description"), f"{token} has no description"
        for section in ("inputProperties", "properties"):
            for name, prop in resource[section].items():
                described.append((f"{token}.{section}.{name}", prop))
    for token, typ in schema["types"].items():
        assert typ.get("description"), f"{token} has no description"
        for name, prop in typ["properties"].items():
            described.append((f"{token}.{name}", prop))
    for where, prop in described:
        problems.extend(type_problems(where, prop, schema))
        if not str(prop.get("description", "")).strip():
            problems.append(f"{where}: no description")
    assert len(described) > 100  # both components' inputs and outputs were walked
    assert problems == []


def test_inherited_inputs_keep_the_description_of_the_class_that_declares_them(
    schema: dict[str, Any],
) -> None:
    # The SDK reads attribute docstrings from the source of the args class alone; FunctionArgs'
    # fields must still carry theirs, in both components.
    source = inspect.getsource(FunctionArgs)
    expected = re.search(r'architecture: str = "arm64"\n\s+"""(.*?)"""', source, re.S)
    assert expected is not None
    for token in (CONSUMER, FANOUT):
        described = schema["resources"][token]["inputProperties"]["architecture"]["description"]
        assert described == inspect.cleandoc(expected.group(1))


def test_archive_code_is_an_archive_and_resource_deciding_inputs_are_plain(
    schema: dict[str, Any],
) -> None:
    inputs = schema["resources"][CONSUMER]["inputProperties"]
    assert inputs["code"]["$ref"] == "pulumi.json#/Archive"
    # Plain: the value decides which resources exist, so it may not be an unknown Output.
    assert inputs["fifo"].get("plain") is True
    assert inputs["batchSize"] == {**inputs["batchSize"], "type": "integer", "plain": True}
    # An Input: another resource's ARN may flow in.
    assert inputs["kmsMasterKeyId"]["type"] == "string"
    assert "plain" not in inputs["kmsMasterKeyId"]


# --- Construct: another language declaring a component ----------------------------------------


def comparable(value: Any) -> Any:
    """Inputs with archives and assets as what they hold (they have no equality of their own)."""
    if isinstance(value, pulumi.AssetArchive):
        return ("AssetArchive", {k: comparable(v) for k, v in value.assets.items()})
    if isinstance(value, pulumi.FileAsset | pulumi.FileArchive):
        return (type(value).__name__, value.path)
    if isinstance(value, pulumi.StringAsset):
        return ("StringAsset", value.text)
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def registered_shape(run: Run) -> list[tuple[str, str, Any]]:
    return sorted((r.type, r.name, comparable(r.inputs)) for r in run.registered)


def construct(token: str, name: str, inputs: dict[str, Any]) -> Mapping[str, Any]:
    provider = IdempotentMessagingProvider(VERSION)
    return provider.construct(name, token, inputs, None).state


def test_constructing_a_consumer_from_schema_inputs_creates_what_the_python_api_creates(
    pulumi_harness: PulumiHarness,
) -> None:
    # Numbers reach a provider as floats (protobuf Struct has one number type).
    inputs = {
        "handler": "handlers.orders.handler",
        "code": reference_code(),
        "functionTimeoutSeconds": 60.0,
        "maxReceiveCount": 7.0,
        "businessTable": {"name": "order_records", "hashKey": "order_id"},
        "createNotificationTopic": True,
        "environment": {"ORDERS_MODE": "strict"},
        "alarmEmails": ["ops@example.com"],
        "tags": {"team": "billing"},
    }
    python_args = IdempotentQueueConsumerArgs(
        handler="handlers.orders.handler",
        code=reference_code(),
        function_timeout_seconds=60,
        max_receive_count=7,
        business_table=BusinessTableArgs(name="order_records", hash_key="order_id"),
        create_notification_topic=True,
        environment={"ORDERS_MODE": "strict"},
        alarm_emails=("ops@example.com",),
        tags={"team": "billing"},
    )
    from_schema = pulumi_harness.run(lambda: construct(CONSUMER, "orders", inputs))
    from_python = pulumi_harness.run(
        lambda: {
            camel(o): getattr(c, o)
            for c in [IdempotentQueueConsumer("orders", python_args)]
            for o in CONSUMER_OUTPUTS
        }
    )
    assert registered_shape(from_schema) == registered_shape(from_python)
    assert len(from_schema.registered) > 15
    assert from_schema.values == from_python.values
    assert from_schema.values["businessTableName"] == "orders-test-order_records"
    queue = from_schema.one("aws:sqs/queue:Queue", "orders-queue")
    # AWS advises a visibility timeout of at least 6 x the function timeout for Lambda
    # consumers; the component derives it from the 60 s timeout passed as a schema input.
    assert queue.inputs["visibilityTimeoutSeconds"] == 6 * 60


def test_constructing_a_fanout_from_schema_inputs_creates_what_the_python_api_creates(
    pulumi_harness: PulumiHarness,
) -> None:
    inputs = {
        "scheduleExpressionTimezone": "Asia/Tokyo",
        "scanSegments": 8.0,
        "consumerHandler": "handlers.charges.handler",
        "consumerCode": reference_code(),
    }
    python_args = MonthlyFanoutArgs(
        schedule_expression_timezone="Asia/Tokyo",
        scan_segments=8,
        consumer_handler="handlers.charges.handler",
        consumer_code=reference_code(),
    )
    from_schema = pulumi_harness.run(lambda: construct(FANOUT, "monthly-charge", inputs))
    from_python = pulumi_harness.run(lambda: MonthlyFanout("monthly-charge", python_args))
    assert registered_shape(from_schema) == registered_shape(from_python)
    assert len(from_schema.of_type(CONSUMER)) == 1  # the charge consumer child


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({}, r"Missing required input 'handler'"),
        (
            {"handler": "handlers.orders.handler", "functionTimeoutSeconds": 0.0},
            r"functionTimeoutSeconds=0: must be between 1 and 900",
        ),
        (
            {"handler": "handlers.orders.handler", "batchSize": 2.5},
            r"batchSize=2.5: must be an integer",
        ),
        (
            {"handler": "handlers.orders.handler", "businessTable": {"name": "t"}},
            r"Missing required input 'businessTable.hashKey'",
        ),
        (
            {
                "handler": "handlers.orders.handler",
                "businessTable": {"name": "order_records", "hashKey": "id", "hashKeyType": "X"},
            },
            r"businessTable.hashKeyType='X': must be one of",
        ),
        (
            {"handler": "handlers.orders.handler", "alarmEmails": ["not-an-address"]},
            r"alarmEmails='not-an-address': is not an email address",
        ),
    ],
)
def test_bad_schema_inputs_fail_naming_the_input_as_the_program_spells_it(
    pulumi_harness: PulumiHarness, inputs: dict[str, Any], message: str
) -> None:
    with pytest.raises(Exception, match=message):
        pulumi_harness.run(lambda: construct(CONSUMER, "orders", inputs))


def test_an_output_of_another_resource_is_refused_where_a_plain_value_decides_resources(
    pulumi_harness: PulumiHarness,
) -> None:
    # An input with dependencies reaches construct as an Output (ProviderServicer._select_value)
    with pytest.raises(Exception, match=r"fifo=.*must be a plain value"):
        pulumi_harness.run(
            lambda: construct(
                CONSUMER,
                "orders",
                {"handler": "handlers.orders.handler", "fifo": pulumi.Output.from_input(True)},
            )
        )


# --- Type token change: existing stacks keep their resources ----------------------------------


class AliasRecordingMonitor(RecordingMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks, *, preview: bool = False) -> None:
        super().__init__(mocks, preview=preview)
        self.alias_types: dict[tuple[str, str], list[str]] = {}

    def RegisterResource(self, request: Any) -> Any:
        self.alias_types[(request.type, request.name)] = [a.spec.type for a in request.aliases]
        return super().RegisterResource(request)


@pytest.mark.parametrize(
    ("component", "args", "token"),
    [
        (
            IdempotentQueueConsumer,
            {"handler": "handlers.orders.handler", "code": reference_code()},
            CONSUMER,
        ),
        (
            MonthlyFanout,
            {
                "schedule_expression_timezone": "Asia/Tokyo",
                "consumer_handler": "handlers.charges.handler",
                "consumer_code": reference_code(),
            },
            FANOUT,
        ),
    ],
)
def test_the_former_components_type_token_is_an_alias(
    pulumi_harness: PulumiHarness,
    monkeypatch: pytest.MonkeyPatch,
    component: type,
    args: dict[str, Any],
    token: str,
) -> None:
    # Before the component package the tokens were `idempotent-messaging:components:<Class>`.
    # A parent's alias re-addresses its children too: with alias specs the engine derives each
    # child's former URN from its parent's aliases.
    monitors: list[AliasRecordingMonitor] = []

    def recording(mocks: pulumi.runtime.Mocks, *, preview: bool = False) -> AliasRecordingMonitor:
        monitors.append(AliasRecordingMonitor(mocks, preview=preview))
        return monitors[-1]

    monkeypatch.setattr("idempotent_messaging.offline.runner.RecordingMonitor", recording)
    pulumi_harness.run(lambda: component("x", args))
    name = token.rsplit(":", 1)[1]
    assert monitors[0].alias_types[(token, "x")] == [f"{PACKAGE_NAME}:components:{name}"]


# --- The plugin as the Pulumi CLI runs it ------------------------------------------------------


def test_plugin_manifest_declares_a_python_plugin_with_its_own_virtualenv() -> None:
    manifest = yaml.safe_load((PLUGIN_DIR / "PulumiPlugin.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    # The python language host runs `python <dir>`, i.e. <dir>/__main__.py, in this venv.
    assert manifest["runtime"]["options"]["virtualenv"] == "venv"
    assert (PLUGIN_DIR / "__main__.py").is_file()


# Runs in a fresh interpreter: every distribution outside the plugin's requirements is made
# absent, as in the plugin's own venv, then the provider is built (imports + schema).
SERVE_COMPONENTS = (
    ONLY_REQUIREMENTS
    + """
from idempotent_messaging.components.provider import IdempotentMessagingProvider
IdempotentMessagingProvider("0.0.0")
"""
)


def test_plugin_requirements_are_enough_to_import_and_serve_the_components() -> None:
    requirements = requirement_lines(PLUGIN_DIR / "requirements.txt")
    # The plugin depends on the installed package, not on a checkout's path.
    assert [requirement_name(r) for r in requirements] == ["idempotent-messaging"]
    closure = requirement_closure(requirements)
    assert {"pulumi", "pulumi-aws"} <= closure
    result = subprocess.run(
        [sys.executable, "-c", SERVE_COMPONENTS, *sorted(closure)],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # The check can fail: without pulumi-aws the components cannot be imported.
    without_aws = subprocess.run(
        [sys.executable, "-c", SERVE_COMPONENTS, *sorted(closure - {"pulumi-aws"})],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
    )
    assert "No module named 'pulumi_aws'" in without_aws.stderr


def test_the_plugin_directory_serves_the_same_schema_over_grpc(schema: dict[str, Any]) -> None:
    # `python provider <engine address>` is what the language host runs for the plugin.
    proc = subprocess.Popen(  # killed below: it serves until the engine stops it
        [sys.executable, str(PLUGIN_DIR), "127.0.0.1:1"],
        cwd=PLUGIN_DIR,
        # The package as the plugin's venv would hold it (here: this checkout's source).
        env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().decode().strip() or "0")
        assert port > 0, proc.stderr.read().decode() if proc.stderr else "no port printed"
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=20)
        served = provider_pb2_grpc.ResourceProviderStub(channel).GetSchema(
            proto.GetSchemaRequest(version=0)
        )
        channel.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert json.loads(served.schema) == schema
