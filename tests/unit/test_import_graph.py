"""No import cycle in the product code, lazy and TYPE_CHECKING imports included.

tools.import_cycles builds grimp's graph of the root packages that pyproject gives
import-linter and reports module cycles and cycles between sibling packages. The synthetic
packages below prove that the check sees what it claims to see.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tools.import_cycles import build_graph, find_cycles, main, root_packages

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def product_cycles() -> dict[frozenset[str], str]:
    return {c.members: c.describe() for c in find_cycles(build_graph(root_packages()))}


def test_the_product_code_has_no_import_cycle(product_cycles: dict[frozenset[str], str]) -> None:
    assert not product_cycles, "import cycles in the product code:\n" + "\n".join(
        product_cycles.values()
    )


def test_the_check_covers_every_root_package_import_linter_checks() -> None:
    roots = root_packages()
    assert {"idempotent_messaging", "handlers", "tools", "bench"} <= set(roots)
    graph = build_graph(roots)
    # The graph must hold lazy imports inside functions, e.g. bench.model's import of the
    # consumer's args, and imports made only for the type checker: the entry point names the
    # Consumer type under TYPE_CHECKING (the consumer module does not import it back).
    assert "idempotent_messaging.components.consumer_args" in (
        graph.find_modules_directly_imported_by("bench.model")
    )
    assert "idempotent_messaging.runtime.consumer" in graph.find_modules_directly_imported_by(
        "idempotent_messaging.runtime.entry"
    )


def _write_packages(root: Path, files: dict[str, str]) -> None:
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


@pytest.fixture
def synthetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_function_level_import_closes_a_module_cycle(synthetic: Path) -> None:
    _write_packages(
        synthetic,
        {
            "cyc_lazy/__init__.py": "",
            "cyc_lazy/first.py": "from cyc_lazy import second\n\nLIMIT = 10\n",
            "cyc_lazy/second.py": """
                def later():
                    from cyc_lazy.first import LIMIT
            """,
        },
    )
    (cycle,) = find_cycles(build_graph(["cyc_lazy"]))
    assert cycle.members == {"cyc_lazy.first", "cyc_lazy.second"}
    text = cycle.describe()
    assert "cyc_lazy.second:3 `from cyc_lazy.first import LIMIT`" in text
    assert "cyc_lazy.first:1 `from cyc_lazy import second`" in text


def test_a_type_checking_import_closes_a_module_cycle(synthetic: Path) -> None:
    _write_packages(
        synthetic,
        {
            "cyc_types/__init__.py": "",
            "cyc_types/contract.py": "import cyc_types.strategy\n",
            "cyc_types/strategy.py": """
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    import cyc_types.contract
            """,
        },
    )
    assert [c.members for c in find_cycles(build_graph(["cyc_types"]))] == [
        {"cyc_types.contract", "cyc_types.strategy"}
    ]


def test_packages_that_need_each_other_are_a_cycle_without_any_module_cycle(
    synthetic: Path,
) -> None:
    """The shape ops <-> emulator had: each side imports a different module of the other."""
    _write_packages(
        synthetic,
        {
            "cyc_cli/__init__.py": "",
            "cyc_cli/outputs.py": "",
            "cyc_cli/month.py": """
                def run_in_emulator():
                    from cyc_emu.session import attach
            """,
            "cyc_emu/__init__.py": "",
            "cyc_emu/session.py": "from cyc_cli.outputs import *\n\ndef attach(): ...\n",
        },
    )
    (cycle,) = find_cycles(build_graph(["cyc_cli", "cyc_emu"]))
    assert cycle.members == {"cyc_cli", "cyc_emu"}
    assert cycle.level == "the root packages"
    text = cycle.describe()
    assert "cyc_cli -> cyc_emu: cyc_cli.month:3 `from cyc_emu.session import attach`" in text
    assert "cyc_emu -> cyc_cli: cyc_emu.session:1 `from cyc_cli.outputs import *`" in text


def test_subpackages_of_one_package_that_need_each_other_are_a_cycle(synthetic: Path) -> None:
    _write_packages(
        synthetic,
        {
            "cyc_nest/__init__.py": "",
            "cyc_nest/left/__init__.py": "",
            "cyc_nest/left/a.py": "import cyc_nest.right.b\n",
            "cyc_nest/right/__init__.py": "",
            "cyc_nest/right/b.py": "",
            "cyc_nest/right/c.py": "import cyc_nest.left\n",
        },
    )
    (cycle,) = find_cycles(build_graph(["cyc_nest"]))
    assert (cycle.level, cycle.members) == ("cyc_nest", {"cyc_nest.left", "cyc_nest.right"})


def test_one_direction_only_is_no_cycle(synthetic: Path) -> None:
    _write_packages(
        synthetic,
        {
            "cyc_none_cli/__init__.py": "",
            "cyc_none_cli/outputs.py": "",
            "cyc_none_emu/__init__.py": "",
            "cyc_none_emu/session.py": """
                import cyc_none_cli.outputs

                def later():
                    from cyc_none_cli import outputs
            """,
        },
    )
    assert find_cycles(build_graph(["cyc_none_cli", "cyc_none_emu"])) == []


def test_the_command_exits_1_and_names_the_cycle(
    synthetic: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_packages(
        synthetic,
        {
            "cyc_cmd/__init__.py": "",
            "cyc_cmd/a.py": "import cyc_cmd.b\n",
            "cyc_cmd/b.py": "def f():\n    import cyc_cmd.a\n",
        },
    )
    assert main(["cyc_cmd"]) == 1
    out = capsys.readouterr().out
    assert "import cycle among modules: cyc_cmd.a <-> cyc_cmd.b" in out
    assert "1 import cycle(s) in cyc_cmd" in out
