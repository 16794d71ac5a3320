"""What several test modules build ONCE per test run (the session, every xdist worker of it
included): the wheel `make dist` builds and fresh virtualenvs.

Each is built under a file lock in the run's shared temporary root (pytest-xdist's documented
pattern for session data shared by workers: ``tmp_path_factory.getbasetemp().parent``), so the
first worker that needs it builds it and every other test of the run reuses it, read-only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

REPOSITORY = Path(__file__).resolve().parents[2]


def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory every worker of this run shares (the session's own without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """``run_root/name``, built by ``build(directory)`` by the first caller of the run."""
    root = run_root(tmp_path_factory)
    target, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            build(target)  # a failure leaves no .done: the next caller builds it again
            done.touch()
    return target


def compute_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[Path], Any]
) -> Any:
    """``compute(directory)``'s JSON result, computed by the first caller of the run."""

    def build(directory: Path) -> None:
        (directory / "result.json").write_text(json.dumps(compute(directory)))

    return json.loads((build_once(tmp_path_factory, name, build) / "result.json").read_text())


def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `make dist` builds (`python -m build`), from a copy of what the sdist holds
    (the checkout stays clean of build/ and *.egg-info)."""

    def build(out: Path) -> None:
        source = out / "source"
        source.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(REPOSITORY / name, source / name)
        shutil.copytree(
            REPOSITORY / "src",
            source / "src",
            ignore=shutil.ignore_patterns("__pycache__", "venv", ".emulator", "*.egg-info"),
        )
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(out / "dist"), str(source)],
            check=True,
            capture_output=True,
        )

    (wheel,) = (build_once(tmp_path_factory, "wheel", build) / "dist").glob(
        "idempotent_messaging-*.whl"
    )
    return wheel


def make_venv(root: Path, *, pip: bool = True) -> Path:
    """A new virtualenv at ``root``; with ``pip``, the pip the project's own venv runs (`make
    install` pins it: the one `python -m venv` bundles resolves PyPI's large index pages with
    about 4x the CPU), installed by that pip instead of bundling one first (ensurepip)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    if pip:
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install",
             "-qq", f"pip=={metadata.version('pip')}"],
            check=True,
            capture_output=True,
        )  # fmt: skip
    return root
