"""`ops run-month --target emulator` runs the emulator's own program and relays its result.

The happy paths (attach to a kept emulator, seed, drain) are in test_monthly.py and
test_demo.py; here: ops loads none of the emulator, and a failed run reaches the user.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from idempotent_messaging.ops.cli import main

pytestmark = pytest.mark.e2e

PROJECT = Path(__file__).resolve().parents[2]


def test_the_ops_cli_loads_neither_the_emulator_nor_its_machinery() -> None:
    """Operators install ops against real AWS: moto and the Pulumi engine must stay out."""
    probe = (
        "import sys, idempotent_messaging.ops.cli, idempotent_messaging.ops.month\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'emulator', 'moto', 'pulumi', 'pulumi_aws', 'pulumi_policy'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_a_failed_emulator_run_exits_2_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EMULATOR_STATE_DIR", str(tmp_path))  # no kept emulator: a fresh deploy
    missing = tmp_path / "no-such-project"
    args = ["run-month", "--month", "2026-06", "--stack", "e2e", "--target", "emulator"]
    assert main([*args, "--project", str(missing)]) == 2
    captured = capfd.readouterr()
    assert "no running emulator for stack e2e: starting one" in captured.err  # progress
    assert f"error: project directory {missing} does not exist" in captured.err
    assert captured.out == ""  # stdout carries a result document or nothing


def test_a_bad_month_is_refused_before_any_emulator_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run-month", "--month", "2026-6", "--target", "emulator"]) == 2
    assert "--month must be YYYY-MM (e.g. 2026-06), got '2026-6'" in capsys.readouterr().err
