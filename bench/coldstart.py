"""Benchmark 4: cold start (import time of the handler modules) and the Lambda bundle size.

Import time is measured as a Lambda cold start pays it: a fresh interpreter per sample, timing
only the import statement (``time.perf_counter`` around it), with the same interpreter flags
for the handler and for a bare ``import boto3``. The ratio says how much the handler adds on top
of the SDK every Python Lambda loads anyway. ``-X importtime`` of one handler import gives the
heaviest modules, so a regression can be traced.

The bundle is the archive the reference ``orders`` consumer ships: this repository's
``handlers/`` package plus the library's Lambda code the component adds
(``idempotent_messaging.components.bundle.runtime_files``), ``.py`` files only, zipped with
deflate as Lambda receives it.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from statistics import median
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
HANDLER_MODULES = ("handlers.orders", "handlers.charges", "idempotent_messaging.dispatch.app")
BUNDLE_TARGET_BYTES = 200 * 1024

_TIMER = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # Lambda runs from compiled bytecode when present
    return env


def import_seconds(module: str) -> float:
    """Seconds to import `module` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _TIMER.format(module=module)],
        cwd=PROJECT_ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"import {module} failed: {done.stderr[-1500:]}")
    return float(done.stdout.strip().splitlines()[-1])


def heaviest_imports(module: str, top: int = 8) -> list[dict[str, Any]]:
    """The top cumulative entries of ``python -X importtime -c 'import module'``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        cwd=PROJECT_ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    rows = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if match:
            depth = len(match.group(3)) // 2
            rows.append((int(match.group(2)), depth, match.group(4)))
    # Top-level-ish packages only (depth <= 1), by cumulative microseconds.
    rows = sorted((r for r in rows if r[1] <= 1), reverse=True)[:top]
    return [{"module": name, "cumulative_ms": round(us / 1000, 1)} for us, _, name in rows]


def measure_imports(repetitions: int) -> dict[str, Any]:
    # Warm the bytecode cache once so every sample compares compiled imports.
    for module in ("boto3", *HANDLER_MODULES):
        import_seconds(module)
    modules = ("boto3", *HANDLER_MODULES)
    samples: dict[str, list[float]] = {module: [] for module in modules}
    for _ in range(repetitions):
        # Interleaved, so a busy moment of the machine hits every module alike.
        for module in modules:
            samples[module].append(import_seconds(module))
    result: dict[str, Any] = {"repetitions": repetitions, "modules": {}}
    for module in modules:
        result["modules"][module] = {
            "samples_s": [round(s, 4) for s in samples[module]],
            "median_s": round(median(samples[module]), 4),
        }
    boto3_s = result["modules"]["boto3"]["median_s"]
    for module in HANDLER_MODULES:
        entry = result["modules"][module]
        entry["ratio_to_boto3"] = round(entry["median_s"] / boto3_s, 2)
    result["heaviest_in_handlers.orders"] = heaviest_imports("handlers.orders")
    return result


def bundle_size() -> dict[str, Any]:
    """Zipped and raw size of the handler archive the component ships."""
    from idempotent_messaging.components.bundle import handler_files, runtime_files

    files = {**handler_files(PROJECT_ROOT, "handlers"), **runtime_files()}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key, path in files.items():
            archive.write(path, key)
    zipped = len(buffer.getvalue())
    return {
        "files": len(files),
        "raw_bytes": sum(p.stat().st_size for p in files.values()),
        "zipped_bytes": zipped,
        "target_bytes": BUNDLE_TARGET_BYTES,
    }
