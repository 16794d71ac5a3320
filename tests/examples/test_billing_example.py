"""examples/billing, a fan-out with its own source and its own charge handler, against the
package as users get it: the session's wheel in a fresh virtualenv (tests/examples/conftest.py).

Under Pulumi mocks it declares a MonthlyFanout from its stack file whose billing source is its
own customers table (an Output passed through ``deploy_stage(defaults=...)``); on the embedded
emulator, through the package's own ``idempotent_messaging.local`` API and console script, a
double fire of the month, a crash after a commit and a producer re-send leave one invoice line
per active subscriber.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..distributions import requirement_extras, requirement_lines, requirement_name
from .conftest import REPOSITORY, site_packages

pytestmark = pytest.mark.e2e

EXAMPLE = REPOSITORY / "examples" / "billing"
DRIVER = Path(__file__).parent / "drive_billing.py"
FANOUT = "idempotent-messaging:index:MonthlyFanout"
MONTH = "2026-06"


def drive(venv: Path, *parts: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(venv / "bin" / "python"), str(DRIVER), str(EXAMPLE), *parts],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=3600,  # a hang guard: both parts take about 15 s wall on a loaded machine
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["package_file"].startswith(str(site_packages(venv))), result["package_file"]
    return result


@pytest.fixture(scope="module")
def driven(venv: Path) -> dict[str, Any]:
    """Both parts in ONE interpreter of the fresh venv (its imports paid once)."""
    return drive(venv, "mocks", "emulator")


def test_the_example_names_the_package_with_the_local_extra_as_its_only_link() -> None:
    (line,) = requirement_lines(EXAMPLE / "requirements.txt")
    assert requirement_name(line) == "idempotent-messaging"
    assert requirement_extras(line) == ["local"]
    for path in EXAMPLE.rglob("*.py"):
        text = path.read_text()
        assert "sys.path" not in text, path
        assert "from handlers" not in text and "import handlers" not in text, path


def test_the_fanout_comes_from_the_stack_file_and_reads_the_projects_own_table(
    driven: dict[str, Any],
) -> None:
    run = driven["mocks"]
    resources = run["resources"]
    (fanout,) = [r for r in resources if r["type"] == FANOUT]
    assert fanout["name"] == "invoicing"
    functions = {r["name"]: r["inputs"] for r in resources if r["type"].endswith(":Function")}
    dispatcher = functions["invoicing-dispatcher"]["environment"]["variables"]
    assert dispatcher["BILLING_ACCOUNTS_TABLE"] == "billing-dev-customers"
    assert dispatcher["SCHEDULE_TIMEZONE"] == "Europe/Berlin"
    charges = functions["invoicing-charges-consumer"]
    assert charges["handler"] == "invoices.charges.handler"
    assert charges["timeout"] == 20
    tables = {r["inputs"]["name"] for r in resources if r["type"] == "aws:dynamodb/table:Table"}
    assert "billing-dev-customers" in tables
    assert not [t for t in tables if t.endswith("billing-accounts")]  # its own source instead
    assert {"invoicing_schedule_name", "customers_table_name"} <= set(run["outputs"])


def test_each_active_subscriber_is_invoiced_once_per_month_on_the_emulator(
    driven: dict[str, Any],
) -> None:
    result = driven["emulator"]
    first, second = result["fires"]
    assert (first["enqueued"], first["rejected"]) == (6, 1)  # "euro" is no ISO 4217 code
    assert second["enqueued"] == 0 and "already finished" in second["reason"]
    assert result["crash_fired"] == 1
    invoices = result["invoices"]
    assert [key for key, *_ in invoices] == sorted(f"t-{i % 2}:sub-{i}:{MONTH}" for i in range(6))
    assert all(
        vat == (net * 19 + 50) // 100 and gross == net + vat for _, net, vat, gross in invoices
    )
    charges = result["report"]["consumers"]["invoicing-charges"]
    # The redelivered batch that died after its commit only publishes; the re-send is skipped.
    assert charges["outcomes"]["republished"] >= 1
    assert charges["outcomes"]["duplicate_skipped"] == 1
    (check,) = charges["checks"]
    assert check["passed"], check["detail"]
    assert result["report"]["ok"] is True
    assert "consumer invoicing-charges" in result["text"]


def test_the_installed_console_scripts_run_the_example(venv: Path, tmp_path: Path) -> None:
    for script in ("idempotent-messaging-ops", "idempotent-messaging-local"):
        helped = subprocess.run(
            [str(venv / "bin" / script), "--help"], capture_output=True, text=True, timeout=120
        )
        assert helped.returncode == 0, helped.stderr
    done = subprocess.run(
        [str(venv / "bin" / "idempotent-messaging-local"), "--project", ".", "--stack", "dev",
         "--one-row-per-event", "invoicing-charges=invoice_key",
         "fire", "--schedule", "invoicing-dev", "--month", MONTH],
        cwd=EXAMPLE,
        env={"PATH": "/usr/bin:/bin", "EMULATOR_STATE_DIR": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "firing schedule invoicing-dev" in done.stderr  # progress
    assert "consumer invoicing-charges" in done.stdout  # the report
    assert (
        "RESULT: OK (2 consumer(s), 1 declared invariant(s), 0 expected alarm(s), 1 schedule "
        "fire(s); nothing failed)" in done.stdout
    )


@pytest.mark.parametrize("mode", [[], ["--preview"]], ids=["up", "preview"])
def test_the_offline_check_passes_the_example(venv: Path, mode: list[str]) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "idempotent-messaging-check"), "--project", ".", "--stack", "dev",
         "--format", "json", *mode],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert json.loads(done.stdout)["violations"] == []
