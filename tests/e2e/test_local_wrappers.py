"""A local run never reports success over a failure (issue 34, item 1).

tests/e2e/fixtures/secrets is a team's project whose functions' environments hold secrets
(``config.require_secret``, ``pulumi.Output.secret``) and values derived from them
(``Output.concat``/``format``/``all``, an Output whose apply returns an Output, a whole
variables map as one secret Output over other Outputs). Before the emulator saw through
Pulumi's wire wrappers, the consumer ``payments`` ran with an EMPTY environment: every record
failed (``IDEMPOTENCY_STATE_TABLE is missing``), SQS dead-lettered them all, and the report
said ``RESULT: OK``. Its ``alerts`` consumer publishes notifications but is deployed without a
topic: a configuration error the verdict must name.

Pulumi: a secret is a property of the value's handling, not of the value the resource gets
(Pulumi docs, Concepts > Secrets: "Encryption ensures that these values never appear as plain
text in your state file"; SDK changelog of `Output.secret`: "If this value flows into a
resource, the plaintext will not be stored in the state file"), so AWS, and the emulator,
receive the plaintext. SQS moves a message received maxReceiveCount times without being deleted
to the queue's DLQ (SQS Developer Guide, "Using dead-letter queues").
"""

from __future__ import annotations

import stat
from collections import Counter
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.output import Unknown

from idempotent_messaging.local.materialise import EmulatorMocks
from idempotent_messaging.local.registry import Registry
from idempotent_messaging.local.report import StackReport
from idempotent_messaging.local.server import start_emulator
from tests.e2e.conftest import FIXTURES

pytestmark = pytest.mark.e2e

SECRETS = FIXTURES / "secrets"
API_KEY = "ak-local-0123"  # Pulumi.e2e.yaml, read with config.require_secret
SIGNING_KEY = "sign-local-4567"  # pulumi.Output.secret in the program


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from idempotent_messaging.local import local_stack

    with local_stack(SECRETS, "e2e") as s:
        s.send("payments", {"event_id": "pay-{i}", "payment_id": "p-{i}"}, count=3)
        s.send("alerts", {"event_id": "alert-{i}"}, count=2)
        s.drain()
        lam = s.client("lambda")
        configurations = {
            name: lam.get_function_configuration(FunctionName=name)
            for name in s.session.registry.functions
        }
        tags = lam.list_tags(Resource=s.session.registry.functions["secretshop-derived"].arn)
        state = tmp_path_factory.mktemp("kept") / "e2e.json"
        s.session.save(state)
        return {
            "report": s.report(),
            "registry": s.session.registry,
            "outputs": s.outputs,
            "configurations": configurations,
            "tags": tags["Tags"],
            "state": state,
        }


def environment(run: dict[str, Any], function: str) -> dict[str, str]:
    """The function's environment as the emulator's Lambda holds it (what AWS would hold)."""
    variables: dict[str, str] = run["configurations"][function]["Environment"]["Variables"]
    assert run["registry"].functions[function].environment == variables  # what handlers get
    return variables


def test_a_consumer_whose_environment_holds_secrets_runs_with_its_whole_environment(
    run: dict[str, Any],
) -> None:
    """The issue's scenario: a config secret and a program secret in a consumer's
    environment (handed through deploy_stage(defaults=...))."""
    variables = environment(run, "payments-e2e-consumer")
    assert variables["API_KEY"] == API_KEY
    assert variables["SIGNING_KEY"] == SIGNING_KEY
    assert variables["IDEMPOTENCY_STATE_TABLE"] == "payments-e2e-idempotency-state"
    assert variables["BUSINESS_TABLE"] == "payments-e2e-payments"
    payments = run["report"]["payments"]
    assert (payments.processed, payments.dlq_depth, payments.reasons) == (3, 0, {})
    assert payments.failures == [], [f.text() for f in payments.failures]


def test_variables_derived_from_secrets_and_outputs_are_their_values(run: dict[str, Any]) -> None:
    assert environment(run, "secretshop-derived") == {
        "CONCAT": f"Bearer {API_KEY}",
        "FORMAT": f"secretshop-audit-log/{SIGNING_KEY}",
        "ALL": f"secretshop-audit-log|{API_KEY}",
        "NESTED": f"secretshop-audit-log:{API_KEY[-4:]}",
        "PLAIN": "plain-value",
    }


def test_a_whole_variables_map_given_as_one_secret_output_is_its_values(
    run: dict[str, Any],
) -> None:
    assert environment(run, "secretshop-whole") == {
        "AUDIT_TABLE": "secretshop-audit-log",
        "API_KEY": API_KEY,
    }


def test_secret_tags_and_stack_outputs_are_their_values(run: dict[str, Any]) -> None:
    assert run["tags"] == {"owner": "payments-team"}
    assert run["outputs"]["api_key"] == API_KEY
    assert run["outputs"]["audit_table"] == "secretshop-audit-log"


def test_the_kept_state_holding_the_secrets_is_readable_by_its_owner_alone(
    run: dict[str, Any],
) -> None:
    state: Path = run["state"]
    assert API_KEY in state.read_text()  # the kept emulator's handlers need it
    assert stat.S_IMODE(state.stat().st_mode) == 0o600


def test_a_configuration_error_fails_the_run_with_its_reason(run: dict[str, Any]) -> None:
    report: StackReport = run["report"]
    alerts = report["alerts"]
    reason = "NOTIFICATION_TOPIC_ARN is missing but this consumer sends notifications"
    # maxReceiveCount 3: each of the 2 messages failed on 3 deliveries, then SQS moved it.
    assert alerts.configuration_failures == Counter({reason: 6})
    assert alerts.dlq_depth == 2
    kinds = [f.kind for f in alerts.failures]
    assert kinds == ["configuration", "alarm"], kinds  # its DLQ alarm would fire too
    assert "alerts-e2e-dlq-not-empty would be in ALARM" in alerts.failures[1].detail
    assert not report.ok
    text = report.text()
    assert "RESULT: OK" not in text
    assert "RESULT: FAILED (2 failure(s)):" in text
    assert f"  - alerts: configuration: 6 deliveries failed: {reason}" in text
    assert "  verdict: FAILED (configuration, alarm)" in text.split("consumer alerts")[1]
    document = report.to_json()
    assert document["ok"] is False
    assert [(f["consumer"], f["kind"]) for f in document["failures"]] == [
        ("alerts", "configuration"),
        ("alerts", "alarm"),
    ]


def test_an_unknown_input_refuses_the_resource_naming_its_property(tmp_path: Path) -> None:
    """An input the engine does not know is never created as a placeholder: the resource is
    refused (and the run with it, by type and name, as any refused resource)."""
    with start_emulator("eu-west-1") as emulator:
        registry = Registry(region="eu-west-1", endpoint_url=emulator.endpoint_url)
        mocks = EmulatorMocks(emulator, registry, tmp_path)
        queue = pulumi.runtime.MockResourceArgs(
            typ="aws:sqs/queue:Queue",
            name="orders",
            inputs={"name": "orders", "tags": {"team": Unknown()}},
            provider="",
            resource_id="",
            custom=True,
        )
        mocks.new_resource(queue)
        queues = emulator.client("sqs").list_queues().get("QueueUrls", [])
    (refused,) = registry.unsupported()
    assert (refused.type, refused.name, refused.status) == (
        "aws:sqs/queue:Queue",
        "orders",
        "failed",
    )
    assert "input tags.team is unknown when the emulator creates the resource" in refused.detail
    assert queues == []
