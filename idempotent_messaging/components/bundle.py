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


# --- Bring your own code ---------------------------------------------------------------------

RUNTIME_PACKAGE = "idempotent_messaging.runtime"
"""Import name of the consumer runtime inside every function's archive."""
RUNTIME_PREFIX = RUNTIME_PACKAGE.replace(".", "/") + "/"
PACKAGE_INIT = f"{HANDLERS_PACKAGE}/__init__.py"
_SKIPPED_PARTS = frozenset({"__pycache__", ".git", ".venv", ".mypy_cache", ".pytest_cache"})


class CodeError(ValueError):
    """The user's code cannot be shipped with the runtime; ``field`` names the argument."""

    def __init__(self, field: str, value: object, rule: str) -> None:
        super().__init__(f"{field}={value!r}: {rule}")
        self.field = field
        self.value = value
        self.rule = rule


def runtime_files(root: Path = PROJECT_ROOT) -> dict[str, Path]:
    """The runtime package (and the ``handlers`` package marker) as archive key -> file."""
    return {
        key: path
        for key, path in handler_files(root, HANDLERS_PACKAGE).items()
        if key.startswith(RUNTIME_PREFIX) or key == PACKAGE_INIT
    }


def directory_files(directory: Path) -> dict[str, pulumi.Asset]:
    """Every file under ``directory`` (caches and VCS data left out) as key -> FileAsset."""
    return {
        path.relative_to(directory).as_posix(): pulumi.FileAsset(str(path))
        for path in sorted(directory.rglob("*"))
        if path.is_file()
        and not _SKIPPED_PARTS.intersection(path.relative_to(directory).parts)
        and path.suffix != ".pyc"
    }


def archive_assets(code: pulumi.Archive, field: str = "code") -> dict[str, pulumi.Asset]:
    """The files of an archive the component can merge the runtime into, file by file.

    Inspectable: an AssetArchive (its keys; nested FileArchives of directories are expanded)
    and a FileArchive of a directory. A FileArchive of a zip/tar file and a RemoteArchive are
    opaque: the component could neither add the runtime to them nor check the handler module,
    so they are refused with the fix (pass the directory).
    """
    if isinstance(code, pulumi.FileArchive):
        directory = Path(code.path)
        if not directory.is_dir():
            raise CodeError(
                field,
                code.path,
                "is a packed archive: the runtime cannot be added to it file by file; pass "
                "the directory (code_path) or a FileArchive of the directory",
            )
        return directory_files(directory)
    if isinstance(code, pulumi.AssetArchive):
        files: dict[str, pulumi.Asset] = {}
        for key, child in code.assets.items():
            if isinstance(child, pulumi.Asset):
                files[key] = child
            elif isinstance(child, pulumi.Archive):
                for sub, asset in archive_assets(child, f"{field}[{key!r}]").items():
                    files[f"{key.rstrip('/')}/{sub}"] = asset
        return files
    raise CodeError(
        field,
        type(code).__name__,
        "must be a pulumi.AssetArchive or a FileArchive of a directory: a remote archive "
        "cannot take the runtime and its handler module cannot be checked",
    )


def module_key_candidates(handler: str) -> tuple[str, str]:
    """Archive keys that hold the module of ``pkg.module.function``."""
    module = handler.rsplit(".", 1)[0].replace(".", "/")
    return f"{module}.py", f"{module}/__init__.py"


def user_code_archive(
    handler: str,
    files: dict[str, pulumi.Asset],
    field: str,
    source: object,
    root: Path = PROJECT_ROOT,
) -> pulumi.AssetArchive:
    """The user's files plus the runtime: refused when the handler module is missing or when
    their files would shadow the runtime's import name."""
    shadowing = sorted(
        key
        for key in files
        if key.startswith(RUNTIME_PREFIX) or key == RUNTIME_PREFIX.rstrip("/") + ".py"
    )
    if shadowing:
        raise CodeError(
            field,
            source,
            f"contains {shadowing[0]!r}: a top-level '{RUNTIME_PACKAGE}' of its own would "
            "shadow the runtime the component ships; rename that package",
        )
    if not any(key in files for key in module_key_candidates(handler)):
        py, pkg = module_key_candidates(handler)
        raise CodeError(
            "handler",
            handler,
            f"names a module that is not in {field} (looked for {py} and {pkg})",
        )
    merged: dict[str, pulumi.Asset | pulumi.Archive] = dict(files)
    for key, path in runtime_files(root).items():
        # The user's own handlers/__init__.py (their package of the same name) wins: ours
        # only marks the directory as a package.
        merged.setdefault(key, pulumi.FileAsset(str(path)))
    return pulumi.AssetArchive(merged)
