"""Bring your own code: the consumer ships the user's handler code with our runtime in one
archive, under the same IAM, environment and validation as the reference consumers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest

from idempotent_messaging.components import bundle

from .conftest import ConsumerRunner, PulumiHarness, consumer_args

pytestmark = pytest.mark.infra

NOT_LAMBDA = ("components", "policy", "ops")
HANDLER_SOURCE = (
    "from idempotent_messaging.runtime import Consumer, lambda_handler\n"
    "def handler(event, context):\n"
    "    return {'batchItemFailures': []}\n"
)


@pytest.fixture
def user_code(tmp_path: Path) -> Path:
    """A consumer project of its own: a handler module, a helper package and cache litter."""
    (tmp_path / "app.py").write_text(HANDLER_SOURCE)
    (tmp_path / "billing").mkdir()
    (tmp_path / "billing" / "__init__.py").write_text("")
    (tmp_path / "billing" / "rules.json").write_text("{}")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "venv" / "lib").mkdir(parents=True)  # the project's virtualenv stays out
    (tmp_path / "venv" / "lib" / "site.py").write_text("")
    return tmp_path


def archive_keys(code: pulumi.Archive) -> list[str]:
    assert isinstance(code, pulumi.AssetArchive)
    return sorted(code.assets)


def test_a_directory_ships_with_the_runtime_in_one_archive(
    run_consumer: ConsumerRunner, user_code: Path
) -> None:
    run = run_consumer(handler="app.handler", code_path=str(user_code))
    fn = run.one("aws:lambda/function:Function")
    assert fn.inputs["handler"] == "app.handler"
    keys = archive_keys(fn.inputs["code"])
    runtime = sorted(bundle.runtime_files())
    assert "idempotent_messaging/runtime/consumer.py" in runtime
    assert "idempotent_messaging/__init__.py" in runtime
    assert keys == sorted(["app.py", "billing/__init__.py", "billing/rules.json", *runtime])
    # none of the reference program's own consumers travel with the user's code, nor the
    # library's deploy-time code (components, policy pack, ops)
    assert not [k for k in keys if k.startswith("handlers/")]
    assert not [
        k for k in keys if k.startswith(tuple(f"idempotent_messaging/{p}/" for p in NOT_LAMBDA))
    ]


def test_own_code_keeps_the_env_contract_and_least_privilege(
    run_consumer: ConsumerRunner, user_code: Path
) -> None:
    reference = run_consumer()
    own = run_consumer(handler="app.handler", code_path=str(user_code))
    fn_ref = reference.one("aws:lambda/function:Function").inputs
    fn_own = own.one("aws:lambda/function:Function").inputs
    assert fn_own["environment"] == fn_ref["environment"]
    assert fn_own["layers"] == fn_ref["layers"]
    policy_ref = reference.one("aws:iam/rolePolicy:RolePolicy").json("policy")
    policy_own = own.one("aws:iam/rolePolicy:RolePolicy").json("policy")
    assert policy_own == policy_ref


def test_an_asset_archive_is_merged_key_by_key(run_consumer: ConsumerRunner) -> None:
    code = pulumi.AssetArchive(
        {
            "consumers/payments.py": pulumi.StringAsset(HANDLER_SOURCE),
            "consumers/__init__.py": pulumi.StringAsset(""),
        }
    )
    run = run_consumer(handler="consumers.payments.handler", code=code)
    keys = archive_keys(run.one("aws:lambda/function:Function").inputs["code"])
    assert {"consumers/payments.py", "idempotent_messaging/runtime/entry.py"} <= set(keys)


def test_no_consumer_code_is_refused_naming_both_ways_to_give_it(
    pulumi_harness: PulumiHarness,
) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer, IdempotentQueueConsumerArgs

    with pytest.raises(ValueError, match=r"code_path=None: give your handler's code: code_path"):
        pulumi_harness.run(
            lambda: IdempotentQueueConsumer(
                "orders", IdempotentQueueConsumerArgs(handler="app.handler")
            )
        )


def test_the_users_own_handlers_package_keeps_its_init(
    run_consumer: ConsumerRunner, tmp_path: Path
) -> None:
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "__init__.py").write_text("# theirs\n")
    (tmp_path / "handlers" / "payments.py").write_text(HANDLER_SOURCE)
    run = run_consumer(handler="handlers.payments.handler", code_path=str(tmp_path))
    code = run.one("aws:lambda/function:Function").inputs["code"]
    init = code.assets["handlers/__init__.py"]
    assert Path(init.path) == tmp_path / "handlers" / "__init__.py"
    assert "idempotent_messaging/runtime/consumer.py" in code.assets


@pytest.mark.parametrize(
    ("layout", "handler", "message"),
    [
        ({"app.py": HANDLER_SOURCE}, "main.handler", r"handler='main.handler': .*main.py"),
        (
            {"app.py": HANDLER_SOURCE, "idempotent_messaging/runtime/__init__.py": ""},
            "app.handler",
            r"code_path=.*idempotent_messaging/runtime/__init__.py.*shadow the runtime",
        ),
        (
            {"app.py": HANDLER_SOURCE, "idempotent_messaging.py": ""},
            "app.handler",
            "shadow the runtime",
        ),
        ({"app.py": HANDLER_SOURCE}, "app", r"handler='app': must be '<module>.<function>'"),
    ],
    ids=["missing-module", "shadowing-package", "shadowing-module", "no-function"],
)
def test_own_code_is_checked_before_any_resource(
    pulumi_harness: PulumiHarness,
    tmp_path: Path,
    layout: dict[str, str],
    handler: str,
    message: str,
) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer

    for key, text in layout.items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_text(text)

    errors: list[ValueError] = []

    def program() -> None:
        try:
            IdempotentQueueConsumer(
                "orders", consumer_args(handler=handler, code_path=str(tmp_path))
            )
        except ValueError as error:
            errors.append(error)

    run = pulumi_harness.run(program)
    assert len(errors) == 1, "the code was accepted"
    assert re.search(message, str(errors[0])), str(errors[0])
    assert run.registered == []  # not even the component itself


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"code_path": "/does/not/exist"}, "code_path='/does/not/exist': is not a directory"),
        ({"code": pulumi.RemoteArchive("https://example.com/c.zip")}, "code='RemoteArchive'"),
        ({"code": pulumi.FileArchive("bundle.zip")}, "code='bundle.zip': is a packed archive"),
        (
            {"code_path": ".", "code": pulumi.AssetArchive({})},
            "either code_path or code, not both",
        ),
    ],
    ids=["not-a-directory", "remote-archive", "zip-archive", "both"],
)
def test_code_that_cannot_take_the_runtime_is_refused(
    pulumi_harness: PulumiHarness, overrides: dict[str, object], message: str
) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer

    errors: list[ValueError] = []

    def program() -> None:
        try:
            IdempotentQueueConsumer("orders", consumer_args(handler="app.handler", **overrides))
        except ValueError as error:
            errors.append(error)

    run = pulumi_harness.run(program)
    assert len(errors) == 1, "the code was accepted"
    assert message in str(errors[0])
    assert run.registered == []


def test_the_shipped_archive_imports_on_its_own(tmp_path: Path, user_code: Path) -> None:
    """Unpacked alone (as Lambda does into /var/task), the archive's handler imports our
    runtime from the archive itself: nothing else of this repository is needed."""
    (user_code / "app.py").write_text(
        "from idempotent_messaging.runtime import Consumer, lambda_handler\n"
        "import idempotent_messaging.runtime.entry\n"
        "def handler(event, context):\n"
        "    return {'batchItemFailures': []}\n"
    )
    files = bundle.directory_files(user_code)
    archive = bundle.user_code_archive("app.handler", files, "code_path", str(user_code))
    task = tmp_path / "task"
    for key, asset in archive.assets.items():
        assert isinstance(asset, pulumi.FileAsset)
        (task / key).parent.mkdir(parents=True, exist_ok=True)
        (task / key).write_bytes(Path(asset.path).read_bytes())
    probe = (
        "import app, idempotent_messaging.runtime as rt, sys;"
        "assert rt.__file__.startswith(sys.argv[1]), rt.__file__;"
        "print(app.handler({'Records': []}, None))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(task)],
        cwd=task,
        env={**os.environ, "PYTHONPATH": str(task), "AWS_DEFAULT_REGION": "us-east-1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "batchItemFailures" in done.stdout
