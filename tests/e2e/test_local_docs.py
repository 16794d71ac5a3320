"""docs/local.md's Python examples run as they are written (issue 34, item 6).

Each ```python block of the page that defines ``test_*`` functions is executed from the
repository root (the examples name ``examples/inventory`` by its path there), and each of its
test functions is called: an example that stops being true fails here, not in a reader's
project.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

REPOSITORY = Path(__file__).resolve().parents[2]
PAGE = REPOSITORY / "docs" / "local.md"


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """(line of the opening fence, source) of each ```python block."""
    blocks: list[tuple[int, str]] = []
    lines = page.read_text().splitlines()
    start: int | None = None
    for number, line in enumerate(lines, start=1):
        if start is None and line.strip() == "```python":
            start = number
        elif start is not None and line.strip() == "```":
            blocks.append((start, "\n".join(lines[start : number - 1])))
            start = None
    return blocks


def example_tests() -> list[tuple[str, str, int]]:
    """(test function name, its block's source, the block's line) of every example test."""
    found = []
    for line, source in python_blocks(PAGE):
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                found.append((node.name, source, line))
    return found


EXAMPLES = example_tests()


def test_the_page_has_its_api_and_fault_injection_examples() -> None:
    names = [name for name, _, _ in EXAMPLES]
    assert names == [
        "test_stock_adjustments_apply_once",
        "test_a_crash_after_the_commit_applies_the_adjustment_once_and_still_notifies",
    ]


@pytest.mark.parametrize(("name", "source", "line"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_a_python_example_of_the_page_runs_as_written(
    name: str, source: str, line: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(REPOSITORY)
    monkeypatch.setenv("EMULATOR_STATE_DIR", str(tmp_path))
    namespace: dict[str, Any] = {"__name__": f"docs_local_md_{line}"}
    exec(compile(source, f"{PAGE}:{line}", "exec"), namespace)
    namespace[name]()
