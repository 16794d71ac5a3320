"""Lambda code archives: the user's code plus the library's Lambda-side packages.

Every function ships ``idempotent_messaging/__init__.py`` (the version only, no imports) and
the library's Lambda packages (``LAMBDA_PACKAGES``) under their import names, so
``import idempotent_messaging.runtime`` resolves from the archive root exactly as from
site-packages. Only ``*.py`` files of those packages enter: no ``__pycache__``, no tests, no
pulumi code (the import-layer contracts keep pulumi out of them). The library ships no handler
code of a consumer: that is always the user's (``code_path`` / ``code``).
"""

from __future__ import annotations

from pathlib import Path

import pulumi

import idempotent_messaging

from .errors import ArgumentError
from .handler_binding import check_handler_binding

LIBRARY_PACKAGE = idempotent_messaging.__name__
LIBRARY_ROOT = Path(idempotent_messaging.__file__).resolve().parent.parent
"""The directory holding ``idempotent_messaging/``: site-packages, or a checkout's root."""
RUNTIME_PACKAGE = f"{LIBRARY_PACKAGE}.runtime"
"""Import name of the consumer runtime inside every function's archive."""
DISPATCH_PACKAGE = f"{LIBRARY_PACKAGE}.dispatch"
"""The monthly dispatcher, and the work-message contract (keys, env) its charge consumers read."""
LAMBDA_PACKAGES = (RUNTIME_PACKAGE, DISPATCH_PACKAGE)
"""The library's Lambda-side code (standard library, boto3 and Powertools only). Both ship in
every archive: the dispatch package is small, and one archive layout keeps every function's
imports the same."""
_EXCLUDED_DIRS = frozenset({"__pycache__", "tests", "test"})


def handler_files(root: Path, package: str) -> dict[str, Path]:
    """Archive key ("pkg/sub/mod.py") -> file, sorted, for every *.py of ``root/package``."""
    package_dir = root / package.replace(".", "/")
    if not (package_dir / "__init__.py").is_file():
        raise ValueError(f"package={package!r}: {package_dir} is not a Python package")
    files: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(root)
        if _EXCLUDED_DIRS.intersection(relative.parts[:-1]) or relative.name.startswith("test_"):
            continue
        files[relative.as_posix()] = path
    return files


def runtime_files(root: Path = LIBRARY_ROOT) -> dict[str, Path]:
    """What the library adds to every archive, as archive key -> file."""
    files = {f"{LIBRARY_PACKAGE}/__init__.py": root / LIBRARY_PACKAGE / "__init__.py"}
    for package in LAMBDA_PACKAGES:
        files.update(handler_files(root, package))
    return dict(sorted(files.items()))


def library_code_archive(root: Path = LIBRARY_ROOT) -> pulumi.AssetArchive:
    """The library's Lambda code alone: the archive of a function whose handler is ours (the
    monthly dispatcher, ``idempotent_messaging.dispatch.app.handler``)."""
    return pulumi.AssetArchive(
        {key: pulumi.FileAsset(str(path)) for key, path in runtime_files(root).items()}
    )


# --- Bring your own code ---------------------------------------------------------------------

RUNTIME_PREFIX = f"{LIBRARY_PACKAGE}/"
# Caches, VCS data and virtualenvs (`venv/` is where Pulumi's Python projects keep theirs).
_SKIPPED_PARTS = frozenset({"__pycache__", ".git", ".venv", "venv", ".mypy_cache", ".pytest_cache"})


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
    """The files of an archive the component can merge the runtime into, file by file (an
    ArgumentError under ``field`` for an archive it cannot open).

    Inspectable: an AssetArchive (its keys; nested FileArchives of directories are expanded)
    and a FileArchive of a directory. A FileArchive of a zip/tar file and a RemoteArchive are
    opaque: the component could neither add the runtime to them nor check the handler module,
    so they are refused with the fix (pass the directory).
    """
    if isinstance(code, pulumi.FileArchive):
        directory = Path(code.path)
        if not directory.is_dir():
            raise ArgumentError(
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
    raise ArgumentError(
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
    root: Path = LIBRARY_ROOT,
) -> pulumi.AssetArchive:
    """The user's files plus the runtime: refused when the handler module is missing or when
    their files would shadow the runtime's import name."""
    shadowing = sorted(
        key
        for key in files
        if key.startswith(RUNTIME_PREFIX) or key == RUNTIME_PREFIX.rstrip("/") + ".py"
    )
    if shadowing:
        raise ArgumentError(
            field,
            source,
            f"contains {shadowing[0]!r}: a top-level '{LIBRARY_PACKAGE}' of its own would "
            "shadow the runtime the component ships; leave the library out of your code (the "
            "component adds it)",
        )
    if not any(key in files for key in module_key_candidates(handler)):
        py, pkg = module_key_candidates(handler)
        raise ArgumentError(
            "handler",
            handler,
            f"names a module that is not in {field} (looked for {py} and {pkg})",
        )
    check_handler_binding(handler, files)  # its function name too, read without importing
    merged: dict[str, pulumi.Asset | pulumi.Archive] = dict(files)
    for key, path in runtime_files(root).items():
        merged[key] = pulumi.FileAsset(str(path))
    return pulumi.AssetArchive(merged)
