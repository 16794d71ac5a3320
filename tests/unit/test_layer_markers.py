"""Every test carries its directory's layer marker, so `pytest -m <layer>` selects whole layers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LAYER_OF_DIRECTORY, TESTS_DIR, layer_of


def test_every_test_directory_has_a_layer() -> None:
    directories = {p.name for p in TESTS_DIR.iterdir() if p.is_dir() and any(p.rglob("test_*.py"))}
    assert directories <= set(LAYER_OF_DIRECTORY), directories - set(LAYER_OF_DIRECTORY)


def test_markers_follow_the_directory() -> None:
    assert layer_of(TESTS_DIR / "integration" / "test_x.py") == "integration"
    assert layer_of(TESTS_DIR / "examples" / "test_x.py") == "e2e"


def test_a_directory_without_a_layer_is_refused() -> None:
    with pytest.raises(pytest.UsageError, match="no layer"):
        layer_of(TESTS_DIR / "nowhere" / "test_x.py")


def test_this_file_is_selected_as_unit(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("unit") is not None
    assert Path(request.node.path).parent.name == "unit"
