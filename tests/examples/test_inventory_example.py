"""examples/inventory, a consumer project of its own, against the package as users get it.

The wheel is built from this checkout and installed into a FRESH virtualenv; the example then
runs in THAT interpreter (a subprocess): under Pulumi mocks (the resources and settings it
declares) and on the embedded emulator (its own handler, duplicates and a crash). The example
depends on the package only through that install.

The wheel and the virtualenv are the session's (tests/examples/conftest.py: built once for
every example test).
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ..distributions import PYPROJECT, requirement_lines, requirement_name
from .conftest import REPOSITORY, site_packages

pytestmark = pytest.mark.e2e

EXAMPLE = REPOSITORY / "examples" / "inventory"
DRIVER = Path(__file__).parent / "drive_inventory.py"
# Names a careless layout would put at the top of site-packages (the repository's own dirs).
GENERIC = {
    "components", "handlers", "policy", "ops", "runtime", "dispatch", "tests", "emulator",
    "bench", "tools", "provider", "examples", "docs",
}  # fmt: skip
CONSUMER = "idempotent-messaging:index:IdempotentQueueConsumer"


def drive(venv: Path, *parts: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(venv / "bin" / "python"), str(DRIVER), str(EXAMPLE), str(REPOSITORY), *parts],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=3600,  # a hang guard: both parts take about 15 s wall on a loaded machine
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    # The package the example ran on is the installed wheel, not this checkout.
    assert result["package_file"].startswith(str(site_packages(venv))), result["package_file"]
    return result


@pytest.fixture(scope="module")
def driven(venv: Path) -> dict[str, Any]:
    """Both parts in ONE interpreter of the fresh venv (its imports paid once)."""
    return drive(venv, "mocks", "emulator")


def test_the_wheel_holds_one_import_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"idempotent_messaging", wheel.name.split("-py3")[0] + ".dist-info"}
    for module in ("runtime/consumer.py", "rules/pack.py", "offline/cli.py", "limits.py"):
        assert f"idempotent_messaging/{module}" in names
    assert not [n for n in names if n.startswith("idempotent_messaging/") and "/tests/" in n]


def test_only_idempotent_messaging_lands_in_site_packages(venv: Path) -> None:
    entries = {p.name for p in site_packages(venv).iterdir()}
    assert "idempotent_messaging" in entries
    assert not entries & GENERIC
    (dist_info,) = site_packages(venv).glob("idempotent_messaging-*.dist-info")
    assert (dist_info / "top_level.txt").read_text().split() == ["idempotent_messaging"]
    # The console script of the offline check is installed with it.
    assert (venv / "bin" / "idempotent-messaging-check").is_file()
    metadata = (dist_info / "METADATA").read_text()
    import idempotent_messaging

    assert f"Version: {idempotent_messaging.__version__}" in metadata
    required = {
        requirement_name(line.split(":", 1)[1])
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    }
    assert required == {requirement_name(r) for r in PYPROJECT["dependencies"]}


def test_the_example_names_the_package_as_its_only_link_to_it() -> None:
    assert [requirement_name(r) for r in requirement_lines(EXAMPLE / "requirements.txt")] == [
        "idempotent-messaging"
    ]
    for path in EXAMPLE.rglob("*.py"):
        text = path.read_text()
        assert "sys.path" not in text, path
        for generic in ("components", "handlers", "policy", "emulator"):
            assert f"from {generic}" not in text and f"import {generic}" not in text, path


def test_the_example_declares_its_consumer_under_mocks(driven: dict[str, Any]) -> None:
    run = driven["mocks"]
    resources = run["resources"]
    (component,) = [r for r in resources if r["type"] == CONSUMER]
    assert component["name"] == "stock"

    def one(type_: str, name: str | None = None) -> dict[str, Any]:
        (found,) = [
            r for r in resources if r["type"] == type_ and (name is None or r["name"] == name)
        ]
        return found

    fn = one("aws:lambda/function:Function")["inputs"]
    assert fn["handler"] == "inventory.stock.handler"
    assert fn["timeout"] == 15  # Pulumi.dev.yaml's functionTimeoutSeconds
    env = fn["environment"]["variables"]
    assert env["BUSINESS_TABLE"] == "stock-dev-stock_levels"
    assert env["POWERTOOLS_SERVICE_NAME"] == "inventory-stock"
    table = one("aws:dynamodb/table:Table", "stock-stock_levels")["inputs"]
    assert (table["hashKey"], table["rangeKey"]) == ("sku", "warehouse")
    queue = one("aws:sqs/queue:Queue", "stock-queue")["inputs"]
    # AWS advises a visibility timeout of at least 6 x the function timeout for an SQS event
    # source (and Lambda refuses one below the function timeout).
    assert queue["visibilityTimeoutSeconds"] >= 6 * 15
    mapping = one("aws:lambda/eventSourceMapping:EventSourceMapping")["inputs"]
    assert mapping["functionResponseTypes"] == ["ReportBatchItemFailures"]
    subscription = one("aws:sns/topicSubscription:TopicSubscription")["inputs"]
    assert subscription["endpoint"] == "stock-oncall@example.com"
    assert set(run["outputs"]) >= {"stock_queue_url", "stock_levels_table_name"}


def test_the_examples_handler_applies_each_adjustment_once_on_the_emulator(
    driven: dict[str, Any],
) -> None:
    result = driven["emulator"]
    assert result["crash_fired"] == 1
    # e-1 (+5) and e-2 (-2) on sku-1; e-3 (+7) and e-4 (+3, crashed after its commit, then
    # redelivered and re-sent) on sku-2: every event exactly once despite every duplicate.
    assert result["stock"] == {"sku-1@berlin": 3, "sku-2@berlin": 10}
    # e-5 has no warehouse and no delta: quarantined with its reason, never applied
    assert result["dead_letters"] == [["e-5", "schema"]]


@pytest.mark.parametrize("mode", [[], ["--preview"]], ids=["up", "preview"])
def test_the_installed_console_script_checks_the_example_clean(venv: Path, mode: list[str]) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "idempotent-messaging-check"), "--project", ".", "--stack", "dev",
         "--format", "json", *mode],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    # Exit 0: no mandatory violation (1 would be one, 2 a program that failed to run).
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["violations"] == []
