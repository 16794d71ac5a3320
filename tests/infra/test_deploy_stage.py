"""``deploy_stage()``: a user's config-driven program in two lines, its own consumers and
fan-outs declared in its stack file, and every refusal ONE line in the stack file's words."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from idempotent_messaging.components import IdempotentQueueConsumerArgs, MonthlyFanoutArgs
from idempotent_messaging.offline import ProgramError, ProgramRun, run_program
from idempotent_messaging.offline import runner as offline_runner
from idempotent_messaging.stage import StageConfigError
from idempotent_messaging.stage.deploy import in_stack_file_words

pytestmark = pytest.mark.infra

FUNCTION = "aws:lambda/function:Function"
PROGRAM = "from idempotent_messaging.stage import deploy_stage\n\ndeploy_stage()\n"
CONSUMER_CODE = textwrap.dedent(
    """
    from idempotent_messaging.runtime import Consumer, lambda_handler

    def payment_writes(message, ctx):
        return []

    handler = lambda_handler(Consumer(writes=payment_writes, namespace="payment"))
    """
)
CHARGE_CODE = "def handler(event, context):\n    return {'batchItemFailures': []}\n"
SECRET_TOKEN = "xoxb-0123456789-very-secret"


def payments_project(root: Path, *, stack_config: dict[str, Any] | None = None) -> Path:
    """A project of its own: Pulumi.yaml declaring one setting of its own, a dev stack with one
    consumer and one fan-out, its code under app/."""
    (root / "Pulumi.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "payments",
                "runtime": "python",
                "config": {"slackWebhook": {"type": "string", "default": ""}},
            }
        )
    )
    config: dict[str, Any] = {
        "aws:region": "eu-west-1",
        "payments:slackWebhook": "https://hooks.example.com/services/T000",
        "payments:consumers": {
            "payments": {
                "handler": "payments.consumer.handler",
                "codePath": "app",
                "businessTable": {"name": "payment_records", "hashKey": "payment_id"},
                "functionTimeoutSeconds": 20,
            }
        },
        "payments:fanouts": {
            "invoicing": {
                "scheduleExpressionTimezone": "Europe/Berlin",
                "consumerHandler": "billing.charges.handler",
                "consumerCodePath": "app",
            }
        },
    }
    config.update(stack_config or {})
    (root / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": config}))
    (root / "__main__.py").write_text(PROGRAM)
    for package, module, source in (
        ("payments", "consumer", CONSUMER_CODE),
        ("billing", "charges", CHARGE_CODE),
    ):
        (root / "app" / package).mkdir(parents=True, exist_ok=True)
        (root / "app" / package / "__init__.py").write_text("")
        (root / "app" / package / f"{module}.py").write_text(source)
    return root


def refusal(project: Path, *, preview: bool = True, **overrides: Any) -> StageConfigError:
    """The StageConfigError the program stops with (as `pulumi preview` by default)."""
    with pytest.raises(ProgramError) as raised:
        run_program(project, "dev", preview=preview, config_overrides=overrides)
    cause = raised.value.__cause__
    assert isinstance(cause, StageConfigError), raised.value
    return cause


def functions(run: ProgramRun) -> dict[str, dict[str, Any]]:
    return {r.name: r.inputs for r in run.resources if r.type == FUNCTION}


# --- A program of two lines ------------------------------------------------------------------


def test_a_users_two_line_program_deploys_the_consumers_and_fanouts_of_its_stack_file(
    tmp_path: Path,
) -> None:
    project = payments_project(tmp_path)
    run = run_program(project, "dev")
    fns = functions(run)
    consumer = fns["payments-consumer"]
    assert consumer["handler"] == "payments.consumer.handler"
    assert consumer["timeout"] == 20
    assert consumer["environment"]["variables"]["BUSINESS_TABLE"] == "payments-dev-payment_records"
    assert fns["invoicing-charges-consumer"]["handler"] == "billing.charges.handler"
    outputs = run.stack_outputs
    for key in (
        "alarm_topic_arn",
        "payments_queue_url",
        "payments_business_table_name",
        "invoicing_schedule_name",
        "invoicing_consumer_queue_url",
    ):
        assert key in outputs, key


def test_a_relative_code_path_is_resolved_from_the_project_directory(tmp_path: Path) -> None:
    from idempotent_messaging.components import consumer as consumer_module

    seen: list[str | None] = []
    original = consumer_module.consumer_code

    def spy(handler: str, code_path: str | None, code: Any, prefix: str = "") -> Any:
        seen.append(code_path)
        return original(handler, code_path, code, prefix)

    project = payments_project(tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(consumer_module, "consumer_code", spy)
        run_program(project, "dev")
    assert str(tmp_path.resolve() / "app") in {str(Path(p).resolve()) for p in seen if p}


def test_a_stack_without_instances_creates_nothing(tmp_path: Path) -> None:
    project = payments_project(tmp_path)
    run = run_program(project, "dev", config_overrides={"consumers": {}, "fanouts": {}})
    assert [r.type for r in run.resources if r.type != "pulumi:pulumi:Stack"] == []


def test_a_setting_declared_in_the_projects_own_pulumi_yaml_is_not_refused(tmp_path: Path) -> None:
    project = payments_project(tmp_path)
    run = run_program(project, "dev")
    assert run.config.values["payments:slackWebhook"].startswith("https://hooks.example.com")


# --- Refusals: one line, stack-file key path, value, rule and fix ----------------------------


def test_an_unknown_key_of_the_namespace_is_refused_with_a_did_you_mean(tmp_path: Path) -> None:
    project = payments_project(tmp_path)
    error = refusal(project, consumer={"payments": {}})
    message = str(error)
    assert message.startswith('payments:consumer={"payments": {}}: is neither a stage setting')
    assert "did you mean payments:consumers?" in message
    assert isinstance(error, pulumi.RunError) and isinstance(error, ValueError)
    assert "\n" not in message


def test_an_unknown_key_without_a_close_match_says_how_to_keep_it(tmp_path: Path) -> None:
    message = str(refusal(payments_project(tmp_path), pagerDutyKey="abc"))
    assert "payments:pagerDutyKey='abc'" in message
    assert "declare it in Pulumi.yaml: config: pagerDutyKey: {type: string}" in message


def test_a_refused_value_names_the_key_path_the_value_rule_and_fix_in_yaml_words(
    tmp_path: Path,
) -> None:
    project = payments_project(tmp_path)
    consumers = {
        "payments": {
            "handler": "payments.consumer.handler",
            "codePath": "app",
            "visibilityTimeoutSeconds": 60,
        }
    }
    message = str(refusal(project, consumers=consumers))
    assert message.startswith("payments:consumers.payments.visibilityTimeoutSeconds=60: ")
    assert "set allowVisibilityBelowRecommended: true" in message
    assert "allow_visibility_below_recommended" not in message and "True" not in message
    assert message.endswith("(set in Pulumi.dev.yaml)")


@pytest.mark.parametrize(
    ("consumers", "expected"),
    [
        (
            {"payments": {"handler": "payments.consumer.handler", "codePath": "app", "fifo": 1}},
            "payments:consumers.payments.fifo=1: must be true or false",
        ),
        (
            {"payments": {"codePath": "app"}},
            "payments:consumers.payments.handler=null: is required for a consumer",
        ),
        (
            {
                "payments": {
                    "handler": "payments.consumer.handler",
                    "codePath": "app",
                    "batchSise": 5,
                }
            },
            "payments:consumers.payments.batchSise=5: is not a consumer setting; did you mean "
            "'batchSize'?",
        ),
        (
            {
                "payments": {
                    "handler": "payments.consumer.handler",
                    "codePath": "app",
                    "contentBasedDeduplication": True,
                }
            },
            "payments:consumers.payments.contentBasedDeduplication=true: applies to FIFO queues "
            "only; set fifo: true or leave it false",
        ),
    ],
    ids=["type", "required", "unknown-field", "python-constants"],
)
def test_refusals_speak_the_stack_files_language(
    tmp_path: Path, consumers: dict[str, Any], expected: str
) -> None:
    message = str(refusal(payments_project(tmp_path), consumers=consumers))
    assert message.startswith(expected), message
    python_fields = {
        f.name
        for cls in (IdempotentQueueConsumerArgs, MonthlyFanoutArgs)
        for f in __import__("dataclasses").fields(cls)
        if "_" in f.name
    }
    assert not [f for f in python_fields if re.search(rf"\b{f}\b", message)], message
    assert "IdempotentQueueConsumerArgs" not in message


def test_a_handler_the_module_does_not_bind_is_refused_naming_the_file(tmp_path: Path) -> None:
    project = payments_project(tmp_path)
    consumers = {"payments": {"handler": "payments.consumer.handle", "codePath": "app"}}
    message = str(refusal(project, consumers=consumers))
    assert message.startswith("payments:consumers.payments.handler='payments.consumer.handle': ")
    assert f"{tmp_path.resolve() / 'app' / 'payments' / 'consumer.py'}" in message
    assert "binds no 'handle' at module level" in message


def test_a_fanouts_charge_handler_is_checked_too(tmp_path: Path) -> None:
    project = payments_project(tmp_path)
    fanouts = {
        "invoicing": {
            "scheduleExpressionTimezone": "Europe/Berlin",
            "consumerHandler": "billing.charges.charge",
            "consumerCodePath": "app",
        }
    }
    message = str(refusal(project, fanouts=fanouts, preview=False))
    assert message.startswith("payments:fanouts.invoicing.consumerHandler='billing.charges.charge'")


def test_a_default_from_pulumi_yaml_says_where_to_override_it(tmp_path: Path) -> None:
    project = payments_project(tmp_path)
    document = yaml.safe_load((project / "Pulumi.yaml").read_text())
    document["config"]["logRetentionDays"] = {"type": "integer", "default": 4}
    (project / "Pulumi.yaml").write_text(yaml.safe_dump(document))
    message = str(refusal(project))
    # The instance inherits the stack-wide key: the refusal names that key, not the instance.
    assert message.startswith("payments:logRetentionDays=4: must be a CloudWatch Logs retention")
    assert message.endswith(
        "(a stack-wide setting; from the default in Pulumi.yaml; override it in Pulumi.dev.yaml)"
    )


# --- Secrets -----------------------------------------------------------------------------------


@pytest.fixture
def secret_config(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Stack-file values the Pulumi CLI would decrypt and mark secret (the offline engine cannot
    decrypt `secure:` values, so the test puts the plaintext in, as the CLI does)."""
    secrets: dict[str, Any] = {}
    load = offline_runner.load_stack_config

    def decrypted(project: Any, stack: str) -> Any:
        config = load(project, stack)
        for key, value in secrets.items():
            config.values[key] = value if isinstance(value, str) else json.dumps(value)
            config.secret_keys.append(key)
        return config

    monkeypatch.setattr(offline_runner, "load_stack_config", decrypted)
    return secrets


def test_a_secret_unknown_key_never_shows_its_value(
    tmp_path: Path, secret_config: dict[str, Any]
) -> None:
    secret_config["payments:slackWebhok"] = SECRET_TOKEN
    message = str(refusal(payments_project(tmp_path)))
    assert message.startswith("payments:slackWebhok=[secret]: ")
    assert "did you mean payments:slackWebhook?" in message
    assert SECRET_TOKEN not in message


def test_a_refusal_inside_a_secret_object_shows_none_of_its_values(
    tmp_path: Path, secret_config: dict[str, Any]
) -> None:
    secret_config["payments:consumers"] = {
        "payments": {
            "handler": "payments.consumer.handler",
            "codePath": "app",
            "environment": {"SLACK_TOKEN": SECRET_TOKEN, "AWS_SECRET": SECRET_TOKEN},
        }
    }
    message = str(refusal(payments_project(tmp_path)))
    assert message.startswith("payments:consumers.payments.environment=[secret]: ")
    assert SECRET_TOKEN not in message


# --- The rule translation itself ----------------------------------------------------------------


def test_python_names_become_stack_file_names() -> None:
    assert in_stack_file_words(
        "above 10 needs maximum_batching_window_seconds >= 1; or set "
        "allow_visibility_below_recommended=True, leave it None to derive it"
    ) == (
        "above 10 needs maximumBatchingWindowSeconds >= 1; or set "
        "allowVisibilityBelowRecommended: true, leave it out to derive it"
    )
    # Words that are not fields keep their spelling (a table name, a handler string).
    assert in_stack_file_words("table order_records") == "table order_records"
