"""docs/stages.md's program hands a key, a topic and a secret to a consumer through
``deploy_stage(defaults=...)``, and each reaches the resources it must (issue 34, item 6).

The page's three blocks (Pulumi.yaml, Pulumi.dev.yaml, __main__.py) are written out as a
project, as a reader would copy them, and run under the offline engine as ``pulumi up``.

AWS: a queue or topic encrypted with a customer managed key needs its producers and consumers
to hold kms:GenerateDataKey and kms:Decrypt on it (SQS Developer Guide, "Key management";
SNS Developer Guide, "Encryption at rest"); sns:Publish on the topic to publish. Pulumi: a value
derived from a secret is a secret (Concepts > Secrets), so the function's environment travels
as one.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.local.unwrap import is_secret
from idempotent_messaging.offline import ProgramRun, run_program
from idempotent_messaging.offline.project import SECRET_PLACEHOLDER

pytestmark = pytest.mark.infra

PAGE = Path(__file__).resolve().parents[2] / "docs" / "stages.md"
SECTION = "## Outputs from the program: a key, a topic, a secret"
CONSUMER_CODE = textwrap.dedent(
    """
    from idempotent_messaging.runtime import Consumer, Notification, lambda_handler

    def writes(message, ctx):
        return []

    def notification(message, event_id):
        return Notification(message=event_id)

    handler = lambda_handler(
        Consumer(writes=writes, notification=notification, namespace="payment")
    )
    """
)


def page_files() -> dict[str, str]:
    """The section's blocks by the file their first line names (``# Pulumi.yaml``)."""
    text = PAGE.read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    files = {}
    for body in re.findall(r"```(?:yaml|python)\n(.*?)```", section, flags=re.DOTALL):
        first, _, rest = body.partition("\n")
        files[first.removeprefix("# ").strip()] = rest
    return files


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> ProgramRun:
    root = tmp_path_factory.mktemp("payments")
    files = page_files()
    assert set(files) == {"Pulumi.yaml", "Pulumi.dev.yaml", "__main__.py"}
    for name, body in files.items():
        (root / name).write_text(body)
    package = root / "app" / "payments"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "consumer.py").write_text(CONSUMER_CODE)
    return run_program(root, "dev")


def one(run: ProgramRun, type_: str, name: str) -> Any:
    (found,) = [r for r in run.resources if r.type == type_ and r.name == name]
    return found


def test_the_key_encrypts_the_consumers_queues_and_tables(run: ProgramRun) -> None:
    key_arn = one(run, "aws:kms/key:Key", "payments").outputs["arn"]
    for queue in ("payments-queue", "payments-queue-dlq"):
        assert one(run, "aws:sqs/queue:Queue", queue).inputs["kmsMasterKeyId"] == key_arn
    encrypted = [
        r.inputs["serverSideEncryption"]
        for r in run.resources
        if r.type == "aws:dynamodb/table:Table"
    ]
    assert encrypted and all(e == {"enabled": True, "kmsKeyArn": key_arn} for e in encrypted)


def test_the_consumer_publishes_to_the_programs_topic_and_makes_none_of_its_own(
    run: ProgramRun,
) -> None:
    topic_arn = one(run, "aws:sns/topic:Topic", "payment-events").outputs["arn"]
    function = one(run, "aws:lambda/function:Function", "payments-consumer")
    variables = function.inputs["environment"]["variables"]
    assert variables["NOTIFICATION_TOPIC_ARN"] == topic_arn
    topics = sorted(r.name for r in run.resources if r.type == "aws:sns/topic:Topic")
    assert topics == ["alarms", "payment-events"]  # the stack's alarm topic and the program's


def test_the_secret_reaches_the_environment_as_a_secret(run: ProgramRun) -> None:
    function = one(run, "aws:lambda/function:Function", "payments-consumer")
    # On the wire the engine receives (and encrypts in state), the variable is a secret.
    value = function.inputs["environment"]["variables"]["PSP_API_KEY"]
    assert is_secret(value)
    # Offline, an encrypted stack-file value is a placeholder; `pulumi up` decrypts it.
    assert value["value"] == SECRET_PLACEHOLDER


def test_the_function_is_granted_the_key_and_the_topic(run: ProgramRun) -> None:
    key_arn = one(run, "aws:kms/key:Key", "payments").outputs["arn"]
    topic_arn = one(run, "aws:sns/topic:Topic", "payment-events").outputs["arn"]
    statements = [
        statement
        for r in run.resources
        if r.type == "aws:iam/rolePolicy:RolePolicy" and r.name.startswith("payments")
        for statement in json.loads(r.inputs["policy"])["Statement"]
    ]

    def granted(action: str, resource: str) -> bool:
        return any(
            action in _list(s["Action"]) and resource in _list(s["Resource"]) for s in statements
        )

    assert granted("sns:Publish", topic_arn)
    assert granted("kms:Decrypt", key_arn) and granted("kms:GenerateDataKey", key_arn)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
