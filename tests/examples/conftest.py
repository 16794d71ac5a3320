"""The package as users get it, shared by every example test: the wheel is built ONCE per test
session (per xdist worker) and installed into ONE fresh virtualenv.

The wheel is `make dist`'s, built from a copy of what the sdist holds (the checkout stays clean
of build/ and *.egg-info). The virtualenv holds it installed with --no-deps, console scripts
included; the dependencies (pulumi, pulumi-aws, boto3, Powertools, and moto for the emulator)
come from this test's own virtualenv through a ``.pth`` line, appended after the fresh
site-packages so they can never shadow the package. A full dependency install (pip resolving
the wheel's dependencies from the registry) measured 81 s here with a cold cache, 148 MB, and
would still lack moto for the emulator; so the wheel's dependency metadata is checked against
pyproject instead (test_inventory_example.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPOSITORY / name, source / name)
    shutil.copytree(
        REPOSITORY / "src",
        source / "src",
        ignore=shutil.ignore_patterns("__pycache__", "venv", ".emulator", "*.egg-info"),
    )
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("idempotent_messaging-*.whl")
    return built


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (site_packages(root) / "zz_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )
    yield root


def site_packages(venv: Path) -> Path:
    (site,) = venv.glob("lib/python3.*/site-packages")
    return site
