"""Lambda archives: the library adds its Lambda-side packages (runtime, dispatch) and nothing
else of itself; the consumer's own code is always the user's."""

from __future__ import annotations

import re
from pathlib import Path

import pulumi
import pytest

from idempotent_messaging.components import bundle

from .conftest import HANDLERS_DIR, ConsumerRunner

pytestmark = pytest.mark.infra


def make_tree(root: Path) -> None:
    files = [
        "pkg/__init__.py",
        "pkg/orders.py",
        "pkg/runtime/__init__.py",
        "pkg/runtime/env.py",
        "pkg/__pycache__/orders.cpython-312.pyc",
        "pkg/runtime/__pycache__/env.cpython-312.pyc",
        "pkg/tests/test_orders.py",
        "pkg/test_local.py",
        "pkg/README.md",
        "components/consumer.py",
        "tests/test_x.py",
        "__main__.py",
    ]
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# x\n")


def test_package_files_are_root_relative_python_files_only(tmp_path: Path) -> None:
    make_tree(tmp_path)
    files = bundle.handler_files(tmp_path, "pkg")
    assert list(files) == [
        "pkg/__init__.py",
        "pkg/orders.py",
        "pkg/runtime/__init__.py",
        "pkg/runtime/env.py",
    ]
    assert list(bundle.handler_files(tmp_path, "pkg.runtime")) == [
        "pkg/runtime/__init__.py",
        "pkg/runtime/env.py",
    ]
    for key, path in files.items():
        assert path == tmp_path / key


def test_a_directory_without_the_package_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a Python package"):
        bundle.handler_files(tmp_path, "pkg")


def test_the_library_ships_its_lambda_packages_and_nothing_deploy_time() -> None:
    keys = list(bundle.runtime_files())
    assert "idempotent_messaging/__init__.py" in keys
    assert "idempotent_messaging/runtime/consumer.py" in keys
    assert "idempotent_messaging/dispatch/app.py" in keys
    lambda_prefixes = ("idempotent_messaging/runtime/", "idempotent_messaging/dispatch/")
    assert all(
        k == "idempotent_messaging/__init__.py" or k.startswith(lambda_prefixes) for k in keys
    )
    assert all(k.endswith(".py") and "__pycache__" not in k for k in keys)
    forbidden = re.compile(
        r"^\s*(import|from)\s+(pulumi|idempotent_messaging\.(components|policy|ops))\b",
        re.MULTILINE,
    )
    for key, path in bundle.runtime_files().items():
        assert not forbidden.search(path.read_text()), key


def test_the_package_init_imports_nothing() -> None:
    """It lands in every Lambda archive: no pulumi, boto3 or anything else at import."""
    init = dict(bundle.runtime_files())["idempotent_messaging/__init__.py"].read_text()
    assert not re.search(r"^\s*(import|from)\s", init, re.MULTILINE)
    assert re.search(r'^__version__ = "\d+\.\d+\.\d+', init, re.MULTILINE)


def test_the_reference_consumer_ships_its_handlers_with_the_library(
    run_consumer: ConsumerRunner,
) -> None:
    fn = run_consumer().one("aws:lambda/function:Function")
    code = fn.inputs["code"]
    assert isinstance(code, pulumi.AssetArchive)
    own = {f"handlers/{p.relative_to(HANDLERS_DIR).as_posix()}" for p in HANDLERS_DIR.glob("*.py")}
    assert set(code.assets) == own | set(bundle.runtime_files())
