"""Suite-wide safety (fake AWS credentials and a region, so no test can reach real AWS) and the
layer markers, applied by directory."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from idempotent_messaging import ast_guard
from idempotent_messaging.local import moto_patches

# CPython 3.11.7 (this machine kind's python3) fails a parse that races another thread's
# (python/cpython#106905): the suite runs emulator threads beside tests that parse source.
ast_guard.install()
# moto lacks what the runtime's PartiQL status write needs (local/moto_patches.py; its
# gaps are documented by tests/integration/test_runtime_moto_gaps.py).
moto_patches.install()

_FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "ap-northeast-1",
    "AWS_REGION": "ap-northeast-1",
    "POWERTOOLS_METRICS_NAMESPACE": "IdempotentMessagingTests",
    "POWERTOOLS_SERVICE_NAME": "tests",
}

for _key, _value in _FAKE_AWS_ENV.items():
    os.environ[_key] = _value
# Never pick up a developer's real profile or endpoint.
os.environ.pop("AWS_PROFILE", None)
os.environ.pop("AWS_ENDPOINT_URL", None)


@pytest.fixture(autouse=True)
def _no_metrics_left_over() -> Iterator[None]:
    """Powertools keeps ONE metric set per process: a test that drives the runtime without its
    handler's end-of-invocation flush leaves values (and the service dimension of an early
    print) for whatever test of this worker flushes next. Each test starts from an empty set."""
    yield
    observability = sys.modules.get("idempotent_messaging.runtime.observability")
    if observability is not None:
        observability.metrics.clear_metrics()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The fake AWS environment, re-applied per test (tests may monkeypatch on top)."""
    for key, value in _FAKE_AWS_ENV.items():
        monkeypatch.setenv(key, value)
    return dict(_FAKE_AWS_ENV)


TESTS_DIR = Path(__file__).resolve().parent
LAYER_OF_DIRECTORY = {
    "unit": "unit",  # pure logic, no network, no Pulumi engine
    "fuzz": "unit",  # bounded fuzzing of the runtime's pure input handling
    "model": "unit",  # the redelivery protocol, model-checked (docs/model.md)
    "infra": "infra",  # Pulumi programs under mocks
    "integration": "integration",  # handlers against moto
    "policy": "policy",  # the pack's rules and the offline engine
    "e2e": "e2e",  # the whole stack on the embedded emulator
    "examples": "e2e",  # example projects built from the wheel and run on the emulator
}
"""tests/<directory>/ -> its layer marker, so `pytest -m <layer>` selects every file under it."""


def layer_of(path: Path) -> str:
    """The layer marker of a test file, from the directory directly under tests/."""
    directory = path.resolve().relative_to(TESTS_DIR).parts[0]
    try:
        return LAYER_OF_DIRECTORY[directory]
    except KeyError:
        raise pytest.UsageError(
            f"{path}: tests/{directory}/ has no layer; add it to LAYER_OF_DIRECTORY in "
            f"{Path(__file__).name}"
        ) from None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(layer_of(item.path))
