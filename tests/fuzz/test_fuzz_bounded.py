"""The atheris fuzz target, bounded to a few seconds inside the normal suite (``make fuzz``
runs it for minutes). The seeds alone must also keep the promise."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.runtime_target import check

pytestmark = pytest.mark.unit

SEEDS = Path(__file__).parent / "seeds"
ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize("seed", sorted(p.name for p in SEEDS.iterdir()))
def test_every_seed_input_keeps_the_promise(seed: str) -> None:
    check((SEEDS / seed).read_bytes())


def test_the_checker_detects_a_batch_that_fails_a_healthy_neighbour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The invariant can fail: a runtime that reports every record failed is caught."""
    from idempotent_messaging.runtime.consumer import Consumer

    monkeypatch.setattr(
        Consumer,
        "process",
        lambda self, event, context, runtime: {
            "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]
        },
    )
    with pytest.raises(AssertionError, match="healthy record"):
        check((SEEDS / "valid-0").read_bytes())


def test_a_bounded_coverage_guided_run_finds_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(SEEDS, corpus)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.fuzz.runtime_target",
            str(corpus),
            "-runs=3000",
            "-max_total_time=20",
            "-max_len=8192",
            f"-artifact_prefix={tmp_path}/",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    tail = "\n".join(line for line in result.stderr.splitlines() if not line.startswith("{"))
    assert result.returncode == 0, tail[-3000:]
    assert "Done" in result.stderr
