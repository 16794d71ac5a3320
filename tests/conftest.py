"""Suite-wide safety: fake AWS credentials and a region, so no test can reach real AWS."""

from __future__ import annotations

import os

import pytest

from idempotent_messaging.local import moto_patches

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


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The fake AWS environment, re-applied per test (tests may monkeypatch on top)."""
    for key, value in _FAKE_AWS_ENV.items():
        monkeypatch.setenv(key, value)
    return dict(_FAKE_AWS_ENV)
