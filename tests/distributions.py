"""What a requirements.txt installs, and a fresh interpreter that sees only that.

Directories that run in their own virtualenv (the policy pack, the component provider plugin)
list their requirements; these helpers check the list is enough without building that venv:
the child interpreter refuses every import whose distribution is outside the closure.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]


def requirement_name(requirement: str) -> str:
    return re.sub(
        r"[-_.]+", "-", re.split(r"[<>=!~\[ ;(@]", requirement.strip(), maxsplit=1)[0]
    ).lower()


def requirement_lines(path: Path) -> list[str]:
    return [
        line.strip()
        for line in path.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def requirement_extras(requirement: str) -> list[str]:
    """The extras a requirement asks for: ``name[a,b] @ url`` -> ["a", "b"]."""
    match = re.match(r"\s*[\w.-]+\s*\[([^\]]*)\]", requirement)
    return [e.strip() for e in match.group(1).split(",")] if match else []


def requirement_closure(requirements: list[str]) -> set[str]:
    """Normalised names of the distributions ``requirements`` install, transitively."""
    closure: set[str] = set()
    pending = list(requirements)
    own = requirement_name(PYPROJECT["name"])
    while pending:
        requirement = pending.pop()
        dist = requirement_name(requirement)
        if dist == own:
            # The package itself (installed from its wheel in a plugin's venv; this checkout
            # runs it from source): what it brings is what pyproject declares, with the
            # extras asked for.
            closure.add(dist)
            pending.extend(PYPROJECT["dependencies"])
            for extra in requirement_extras(requirement):
                pending.extend(PYPROJECT["optional-dependencies"][extra])
            continue
        if dist in closure:
            continue
        closure.add(dist)
        try:
            requires = importlib.metadata.requires(dist) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # a marker-only requirement this interpreter does not install
        pending.extend(r for r in requires if "extra ==" not in r)
    return closure


# Prefix of a `python -c` script: argv[1:] are the allowed distributions; every other installed
# distribution is made absent, as in a venv holding only them. `hidden_modules` (comma-separated
# in the environment variable ONLY_REQUIREMENTS_HIDE) are absent too, installed or not.
ONLY_REQUIREMENTS = """
import importlib.metadata, os, re, sys
allowed = set(sys.argv[1:])
hidden = set(filter(None, os.environ.get("ONLY_REQUIREMENTS_HIDE", "").split(",")))
owners = importlib.metadata.packages_distributions()
class Absent:
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        dists = {re.sub(r"[-_.]+", "-", d).lower() for d in owners.get(top, [])}
        if top in hidden or (
            dists and not dists & allowed and top not in sys.stdlib_module_names
        ):
            raise ModuleNotFoundError(f"No module named {top!r}", name=top)
        return None
sys.meta_path.insert(0, Absent())
"""
