"""The package as users get it, shared by every example test: the wheel is built ONCE per test
run (tests/e2e/packaging.py: every xdist worker reuses it) and installed into ONE fresh
virtualenv.

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

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.e2e.packaging import REPOSITORY, build_once, built_wheel, make_venv

__all__ = ["REPOSITORY", "site_packages"]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_wheel(tmp_path_factory)


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    def build(directory: Path) -> None:
        root = make_venv(directory / "venv", pip=False)
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install",
             "-q", "--no-deps", "--no-index", str(wheel)],
            check=True,
            capture_output=True,
        )  # fmt: skip
        (site_packages(root) / "zz_dependencies.pth").write_text(
            sysconfig.get_paths()["purelib"] + "\n"
        )

    return build_once(tmp_path_factory, "examples-venv", build) / "venv"


def site_packages(venv: Path) -> Path:
    (site,) = venv.glob("lib/python3.*/site-packages")
    return site
