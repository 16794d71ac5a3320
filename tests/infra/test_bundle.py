"""The Lambda code archive holds the handlers/ package's Python files and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import pulumi
import pytest

from idempotent_messaging.components import bundle

from .conftest import ConsumerRunner

pytestmark = pytest.mark.infra


def make_tree(root: Path) -> None:
    files = [
        "handlers/__init__.py",
        "handlers/orders.py",
        "handlers/runtime/__init__.py",
        "handlers/runtime/env.py",
        "handlers/__pycache__/orders.cpython-312.pyc",
        "handlers/runtime/__pycache__/env.cpython-312.pyc",
        "handlers/tests/test_orders.py",
        "handlers/test_local.py",
        "handlers/README.md",
        "components/consumer.py",
        "tests/test_x.py",
        "__main__.py",
    ]
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# x\n")


def test_archive_keys_are_package_relative_python_files_only(tmp_path: Path) -> None:
    make_tree(tmp_path)
    archive = bundle.handler_code_archive(tmp_path)
    assert isinstance(archive, pulumi.AssetArchive)
    assert sorted(archive.assets) == [
        "handlers/__init__.py",
        "handlers/orders.py",
        "handlers/runtime/__init__.py",
        "handlers/runtime/env.py",
    ]
    for key, asset in archive.assets.items():
        assert isinstance(asset, pulumi.FileAsset)
        assert Path(asset.path) == tmp_path / key


def test_handler_module_lookup(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert bundle.handler_module_exists("handlers.orders.handler", tmp_path)
    assert bundle.handler_module_exists("idempotent_messaging.runtime.handler", tmp_path)  # a package
    assert not bundle.handler_module_exists("handlers.billing.handler", tmp_path)


def test_a_directory_without_the_package_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a Python package"):
        bundle.handler_code_archive(tmp_path)


def test_real_bundle_has_no_pulumi_components_policy_or_tests() -> None:
    keys = list(bundle.handler_files())
    assert "handlers/__init__.py" in keys
    assert "handlers/runtime/env.py" in keys
    assert all(k.startswith("handlers/") and k.endswith(".py") for k in keys)
    assert not [k for k in keys if "__pycache__" in k or "/tests/" in k]
    forbidden = re.compile(r"^\s*(import|from)\s+(pulumi|components|policy)\b", re.MULTILINE)
    for key, path in bundle.handler_files().items():
        assert not forbidden.search(path.read_text()), key


def test_function_ships_the_handlers_archive(run_consumer: ConsumerRunner) -> None:
    fn = run_consumer().one("aws:lambda/function:Function")
    code = fn.inputs["code"]
    assert isinstance(code, pulumi.AssetArchive)
    assert sorted(code.assets) == sorted(bundle.handler_files())
