"""Harness of the e2e layer: a fresh embedded emulator with a stack deployed into it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from idempotent_messaging.local.session import StackSession, start_session

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"


@pytest.fixture
def mini() -> Iterator[StackSession]:
    """The self-contained raw pulumi_aws pipeline (tests/e2e/fixtures/mini), deployed."""
    session = start_session("e2e", MINI)
    try:
        yield session
    finally:
        session.close()
