"""The Lambda code archive: the ``handlers/`` package and nothing else.

Keys keep the ``handlers/`` prefix so the handler string ``handlers.orders.handler`` resolves
from the archive root. Only ``*.py`` files enter: no ``__pycache__``, no tests, no pulumi code
(the import-layer contract keeps pulumi out of ``handlers/`` itself).
"""

from __future__ import annotations

from pathlib import Path

import pulumi

PROJECT_ROOT = Path(__file__).resolve().parent.parent
HANDLERS_PACKAGE = "handlers"
_EXCLUDED_DIRS = frozenset({"__pycache__", "tests", "test"})


def handler_files(root: Path = PROJECT_ROOT, package: str = HANDLERS_PACKAGE) -> dict[str, Path]:
    """Archive key ("handlers/runtime/env.py") -> file, sorted, for every *.py of the package."""
    package_dir = root / package
    if not (package_dir / "__init__.py").is_file():
        raise ValueError(f"package={package!r}: {package_dir} is not a Python package")
    files: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(root)
        if _EXCLUDED_DIRS.intersection(relative.parts[:-1]) or relative.name.startswith("test_"):
            continue
        files[relative.as_posix()] = path
    return files


def handler_module_exists(handler: str, root: Path = PROJECT_ROOT) -> bool:
    """True when the module of a handler string ("handlers.orders.handler") is in the archive."""
    module = handler.rsplit(".", 1)[0]
    key = module.replace(".", "/")
    files = handler_files(root, module.split(".", 1)[0])
    return f"{key}.py" in files or f"{key}/__init__.py" in files


def handler_code_archive(
    root: Path = PROJECT_ROOT, package: str = HANDLERS_PACKAGE
) -> pulumi.AssetArchive:
    """A pulumi.AssetArchive of the package's Python files under their package-relative keys."""
    return pulumi.AssetArchive(
        {key: pulumi.FileAsset(str(path)) for key, path in handler_files(root, package).items()}
    )
