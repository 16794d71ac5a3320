"""Import cycles in the product code, function-level and TYPE_CHECKING imports included.

    .venv/bin/python -m tools.import_cycles [PACKAGE ...]

Prints every cycle and exits 1 when there is one; without arguments it checks the root
packages of `[tool.importlinter]` in pyproject.toml. The import-linter contracts check the
directions we chose; this finds any cycle, also between packages nobody wrote a contract for.

The graph is grimp's (import-linter's own): it records every import statement of a module,
including those inside functions and under `if TYPE_CHECKING:`. A lazy import still makes the
importer depend on the imported module at run time, and a type-only one still makes the reader
and the type checker follow it, so both count.

Two views, because a package cycle need not be a module cycle:
- modules: a set of modules that import each other, directly or through others;
- packages: the children of one package (or the root packages) whose modules import each
  other. `ops.month -> local.invoke` plus `local.session -> ops.outputs` is no module
  cycle, yet ops and emulator each need the other.
"""

from __future__ import annotations

import sys
import tomllib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import grimp

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
ROOT_LEVEL = "the root packages"


@dataclass(frozen=True)
class Edge:
    """One step of a cycle, with a concrete import statement that makes it."""

    source: str
    target: str
    importer: str
    imported: str
    line_number: int
    line_contents: str

    def describe(self) -> str:
        return (
            f"{self.source} -> {self.target}: "
            f"{self.importer}:{self.line_number} `{self.line_contents}`"
        )


@dataclass(frozen=True)
class Cycle:
    """Modules or sibling packages that depend on each other."""

    level: str  # "modules", or the package whose children form the cycle
    members: frozenset[str]  # every name in the strongly connected set
    route: tuple[Edge, ...]  # one closed path through it: the first edge starts where the last ends

    def describe(self) -> str:
        names = " <-> ".join(sorted(self.members))
        where = "modules" if self.level == "modules" else f"children of {self.level}"
        steps = "\n".join(f"    {edge.describe()}" for edge in self.route)
        return f"import cycle among {where}: {names}\n{steps}"


def root_packages(pyproject: Path = PYPROJECT) -> list[str]:
    """The product's root packages, as import-linter is configured with them."""
    config = tomllib.loads(pyproject.read_text())
    roots = config.get("tool", {}).get("importlinter", {}).get("root_packages")
    if not roots:
        raise ValueError(f"{pyproject}: [tool.importlinter] root_packages is missing or empty")
    return list(roots)


def build_graph(packages: Iterable[str]) -> grimp.ImportGraph:
    """The internal import graph of `packages` (they must be importable from sys.path)."""
    # No cache: a stale cache could hide a cycle just introduced.
    return grimp.build_graph(*packages, cache_dir=None, exclude_type_checking_imports=False)


def find_cycles(graph: grimp.ImportGraph) -> list[Cycle]:
    """Every module cycle and every sibling-package cycle, one entry per set of members."""
    found: dict[frozenset[str], Cycle] = {}
    modules = sorted(graph.modules)
    imports = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    for cycle in _cycles_at("modules", modules, imports, lambda m: m, graph):
        found.setdefault(cycle.members, cycle)
    roots = sorted({m.split(".")[0] for m in modules})
    parents = [(ROOT_LEVEL, roots)]
    parents += [(m, sorted(graph.find_children(m))) for m in modules if graph.find_children(m)]
    for level, children in parents:
        owner = _owner_within(level, set(children))
        for cycle in _cycles_at(level, children, imports, owner, graph):
            found.setdefault(cycle.members, cycle)
    return sorted(found.values(), key=lambda c: sorted(c.members))


def _owner_within(level: str, children: set[str]) -> Callable[[str], str | None]:
    """Maps a module to the child of `level` that holds it (None outside `level`)."""
    prefix = "" if level == ROOT_LEVEL else level + "."

    def owner(module: str) -> str | None:
        if not module.startswith(prefix):
            return None
        child = prefix + module[len(prefix) :].split(".")[0]
        return child if child in children else None

    return owner


def _cycles_at(
    level: str,
    nodes: list[str],
    imports: dict[str, list[str]],
    owner: Callable[[str], str | None],
    graph: grimp.ImportGraph,
) -> list[Cycle]:
    # node -> node -> the first (importer, imported) module pair that makes the dependency
    witness: dict[str, dict[str, tuple[str, str]]] = {n: {} for n in nodes}
    for importer, imported_modules in imports.items():
        source = owner(importer)
        if source is None:
            continue
        for imported in imported_modules:
            target = owner(imported)
            if target is not None and target != source:
                witness[source].setdefault(target, (importer, imported))
    cycles = []
    for component in _strongly_connected(nodes, lambda n: sorted(witness[n])):
        if len(component) < 2:
            continue
        route = _closed_route(min(component), component, witness)
        edges = []
        for source, target in route:
            importer, imported = witness[source][target]
            detail = graph.get_import_details(importer=importer, imported=imported)[0]
            edges.append(
                Edge(
                    source,
                    target,
                    importer,
                    imported,
                    detail["line_number"],
                    detail["line_contents"],
                )
            )
        cycles.append(Cycle(level, frozenset(component), tuple(edges)))
    return cycles


def _strongly_connected(nodes: list[str], successors: Callable[[str], list[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (a deep import chain must not hit the recursion limit)."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(successors(start)))]
        index[start] = lowlink[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            step = next(pending, None)
            if step is not None:
                if step not in index:
                    index[step] = lowlink[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(successors(step))))
                elif step in on_stack:
                    lowlink[node] = min(lowlink[node], index[step])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
            if lowlink[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _closed_route(
    start: str, component: set[str], witness: dict[str, dict[str, tuple[str, str]]]
) -> list[tuple[str, str]]:
    """A shortest path from `start` back to itself inside the component."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(witness[node]):
            if target not in component:
                continue
            if target == start:
                path = [(node, start)]
                while node != start:
                    path.append((previous[node], node))
                    node = previous[node]
                return path[::-1]
            if target not in previous:
                previous[target] = node
                queue.append(target)
    raise AssertionError(f"{start} is in a strongly connected set but no path returns to it")


def main(argv: list[str] | None = None) -> int:
    packages = list(argv if argv is not None else sys.argv[1:]) or root_packages()
    cycles = find_cycles(build_graph(packages))
    for cycle in cycles:
        print(cycle.describe())
    print(f"{len(cycles)} import cycle(s) in {', '.join(packages)}")
    return 1 if cycles else 0


if __name__ == "__main__":
    raise SystemExit(main())
