"""Structured stage config: one object per component instance, errors that name the key path,
and a stage list derived from the stack files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from idempotent_messaging.components import (
    BusinessTableArgs,
    IdempotentQueueConsumerArgs,
    MonthlyFanoutArgs,
)
from idempotent_messaging.offline import ProgramError, ProgramRun, run_program
from idempotent_messaging.stage import ArgumentError, args_from_mapping
from tests.stages import PROJECT_DIR, STAGES, stack_files, stages

pytestmark = pytest.mark.infra

FUNCTION = "aws:lambda/function:Function"
TABLE = "aws:dynamodb/table:Table"


def run_with(consumers: dict[str, Any] | None = None, **overrides: Any) -> ProgramRun:
    if consumers is not None:
        overrides["consumers"] = consumers
    return run_program(PROJECT_DIR, "dev", config_overrides=overrides)


def function(run: ProgramRun, name: str) -> dict[str, Any]:
    (fn,) = [r for r in run.resources if r.type == FUNCTION and r.name == name]
    return fn.inputs


# --- Stage list ----------------------------------------------------------------------------


def test_the_makefile_and_the_tests_derive_the_same_stages() -> None:
    made = subprocess.run(
        ["make", "-s", "--no-print-directory", "stacks"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert tuple(made) == STAGES
    assert "dev" in STAGES and "prod" in STAGES
    # Pulumi.localstack.yaml points the provider at localhost: a local target, not a stage.
    assert "localstack" not in STAGES


def test_a_new_stage_is_one_new_stack_file(tmp_path: Path) -> None:
    for name in ("Makefile", "Pulumi.yaml", "Pulumi.dev.yaml", "Pulumi.localstack.yaml"):
        shutil.copy(PROJECT_DIR / name, tmp_path / name)
    (tmp_path / "Pulumi.staging.yaml").write_text("config:\n  aws:region: eu-west-1\n")
    made = subprocess.run(
        ["make", "-s", "--no-print-directory", "stacks"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert made == ["dev", "staging"]
    assert stages(tmp_path) == ("dev", "staging")


# --- Per-instance objects --------------------------------------------------------------------


def test_an_instance_object_sets_the_args_fields_in_camel_case() -> None:
    run = run_with({"orders": {"functionTimeoutSeconds": 45, "memorySizeMb": 384}})
    fn = function(run, "orders-consumer")
    assert (fn["timeout"], fn["memorySize"]) == (45, 384)


def test_a_new_consumer_is_a_config_entry_only() -> None:
    run = run_with(
        {
            "orders": {},
            "payments": {
                "handler": "handlers.orders.handler",
                "businessTable": {"name": "payment_records", "hashKey": "payment_id"},
                "maxReceiveCount": 7,
            },
        }
    )
    assert function(run, "payments-consumer")["handler"] == "handlers.orders.handler"
    tables = {r.inputs["name"]: r.inputs for r in run.resources if r.type == TABLE}
    assert tables["payments-dev-payment_records"]["hashKey"] == "payment_id"
    assert "payments_queue_url" in run.stack_outputs and "orders_queue_url" in run.stack_outputs


@pytest.mark.parametrize(
    ("consumers", "message"),
    [
        (
            {"orders": {"functionTimeoutSeconds": 0}},
            "consumers.orders.functionTimeoutSeconds=0: must be between 1 and 900",
        ),
        (
            {"orders": {"memorySizeMb": "big"}},
            "consumers.orders.memorySizeMb='big': must be an integer",
        ),
        (
            {"orders": {"functionTimeout": 60}},
            "consumers.orders.functionTimeout=60: .*did you mean 'functionTimeoutSeconds'",
        ),
        ({"payments": {}}, "consumers.payments.handler=null: is required"),
        (
            {"payments": {"handler": "handlers.orders.handler", "businessTable": {"name": "t1"}}},
            "consumers.payments.businessTable.hashKey=null: is required",
        ),
        ({"orders": 5}, "consumers.orders=5: must be an object"),
        (
            {"orders": {"batchSize": 25}},
            # In the stack file's words (deploy_stage): the camelCase key, not the Python field.
            r"consumers.orders.batchSize=25: above 10 needs maximumBatchingWindowSeconds",
        ),
    ],
)
def test_errors_name_the_full_key_path(consumers: dict[str, Any], message: str) -> None:
    with pytest.raises(ProgramError, match=message):
        run_with(consumers)


def test_fanout_errors_name_their_key_path_too() -> None:
    with pytest.raises(ProgramError, match=r"fanouts\.monthly-charge\.scheduleExpressionTimezone"):
        run_with(fanouts={"monthly-charge": {"scheduleExpressionTimezone": "Mars/Olympus"}})


def test_every_plain_field_of_both_args_is_settable_from_config() -> None:
    args = args_from_mapping(
        IdempotentQueueConsumerArgs,
        {"handler": "handlers.orders.handler", "tags": {"team": "a"}, "alarmEmails": ["a@b.cd"]},
        "consumers.x",
    )
    assert (args.handler, args.tags, args.alarm_emails) == (
        "handlers.orders.handler",
        {"team": "a"},
        ("a@b.cd",),
    )
    fanout = args_from_mapping(
        MonthlyFanoutArgs,
        {"scheduleExpressionTimezone": "UTC"},
        "fanouts.x",
        defaults={"consumer_handler": "app.handler"},
    )
    assert (fanout.schedule_expression_timezone, fanout.consumer_handler) == ("UTC", "app.handler")
    with pytest.raises(ArgumentError, match=r"fanouts.x.consumerHandler=None: is required"):
        args_from_mapping(MonthlyFanoutArgs, {"scheduleExpressionTimezone": "UTC"}, "fanouts.x")
    with pytest.raises(ArgumentError, match=r"consumers.x.tags.team=1: must be a string"):
        args_from_mapping(IdempotentQueueConsumerArgs, {"tags": {"team": 1}}, "consumers.x")


def test_one_converter_takes_either_key_style_and_nested_args() -> None:
    """A stack file's camelCase object and a component provider's Python-named inputs (numbers
    as floats) build the same args; a nested object becomes its dataclass."""
    table = {"name": "payment_records", "hashKey": "payment_id"}
    from_config = args_from_mapping(
        IdempotentQueueConsumerArgs,
        {"handler": "app.handler", "functionTimeoutSeconds": 45, "businessTable": table},
        "consumers.payments",
    )
    from_inputs = args_from_mapping(
        IdempotentQueueConsumerArgs,
        {
            "handler": "app.handler",
            "function_timeout_seconds": 45.0,
            "business_table": {"name": "payment_records", "hash_key": "payment_id"},
        },
    )
    assert from_config == from_inputs
    assert from_config.business_table == BusinessTableArgs(
        name="payment_records", hash_key="payment_id"
    )
    assert from_config.function_timeout_seconds == 45
    assert isinstance(from_inputs.function_timeout_seconds, int)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"handler": "a.b", "businessTable": {"name": "t", "hashKey": 5}},
            r"^consumers\.x\.businessTable\.hashKey=5: must be a string$",
        ),
        (
            {"handler": "a.b", "maxReceiveCount": 2.5},
            r"^consumers\.x\.maxReceiveCount=2\.5: must be an integer$",
        ),
        (
            {"handler": "a.b", "max_receive_count": 7, "maxReceiveCount": 7},
            r"^consumers\.x\.maxReceiveCount=7: is given twice",
        ),
        (
            {"handler": "a.b", "batch_sise": 7},
            r"^consumers\.x\.batch_sise=7: .*did you mean 'batch_size'\?$",
        ),
        ({"handler": "a.b", "alarmEmails": "a@b.cd"}, r"alarmEmails='a@b\.cd': must be a list"),
        ({"handler": "a.b", "fifo": "yes"}, r"^consumers\.x\.fifo='yes': must be true or false$"),
        (
            {"handler": "a.b", "idempotencyStrategy": "transactional"},
            r"^consumers\.x\.idempotencyStrategy='transactional': was removed in 0\.2\.0",
        ),
    ],
)
def test_converter_errors_are_argument_errors_naming_the_key_path(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ArgumentError, match=message) as raised:
        args_from_mapping(IdempotentQueueConsumerArgs, values, "consumers.x")
    assert isinstance(raised.value, ValueError)
    assert str(raised.value) == f"{raised.value.path}={raised.value.value!r}: {raised.value.rule}"


def test_a_component_error_is_reported_under_its_config_key_path() -> None:
    from idempotent_messaging.stage import config_path

    error = ArgumentError("visibility_timeout_seconds", 60, "must be >= 6 x function timeout")
    with pytest.raises(ArgumentError) as raised, config_path("consumers.orders"):
        raise error
    assert str(raised.value) == (
        "consumers.orders.visibilityTimeoutSeconds=60: must be >= 6 x function timeout"
    )
    assert raised.value.path == "consumers.orders.visibilityTimeoutSeconds"
    assert raised.value.value == 60
    assert raised.value.__cause__ is error


def test_a_consumer_of_its_own_code_is_a_config_entry_too(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def handler(event, context):\n    return {}\n")
    run = run_with(
        {"orders": {}, "payments": {"handler": "app.handler", "codePath": str(tmp_path)}}
    )
    assert function(run, "payments-consumer")["handler"] == "app.handler"
    with pytest.raises(
        ProgramError, match=r"consumers\.payments\.code=.*cannot be set from config"
    ):
        run_with({"payments": {"handler": "app.handler", "code": "x"}})


@pytest.mark.parametrize("stack", sorted(stack_files()))
def test_every_stack_file_lists_its_consumers(stack: str) -> None:
    """A stack value replaces the Pulumi.yaml default whole: with the consumers listed in the
    stack file, `pulumi config set --path 'consumers.<new>.handler'` adds a consumer instead of
    silently dropping the default ones."""
    config = yaml.safe_load(stack_files()[stack].read_text())["config"]
    assert "orders" in config["idempotent-messaging:consumers"]
