"""Fixtures for the consumer runtime's integration tests (helpers: test_runtime_world.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from tests.integration.test_runtime_world import Aws, create_world


@pytest.fixture
def aws(aws_env: dict[str, str]) -> Iterator[Aws]:
    with mock_aws():
        yield create_world()


@pytest.fixture
def aws_fifo_dlq(aws_env: dict[str, str]) -> Iterator[Aws]:
    with mock_aws():
        yield create_world(fifo_dlq=True)
