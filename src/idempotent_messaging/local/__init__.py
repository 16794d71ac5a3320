"""Embedded AWS emulator: moto on loopback, a Pulumi-mocks deployer, an SQS event-source poller.

Any project's stack runs on it (the ``local`` extra: ``pip install 'idempotent-messaging[local]'``):

    idempotent-messaging-local --project DIR --stack NAME          # deploy, run, report
    python -m idempotent_messaging.local --project DIR --stack NAME send --queue Q --body '{...}'

and from a test of your own::

    from idempotent_messaging.local import local_stack

    with local_stack("path/to/project", "dev") as s:
        s.send("payments", {"event_id": "e-1"}); s.drain(); print(s.report().text())

`make demo` runs the reference dev stack's scenario on it (docs/operations.md); docs/local.md
documents the command and the API. Development tooling only: never imported by handlers/,
components/, policy/ or ops/.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, TextIO

LOCAL_EXTRA = "pip install 'idempotent-messaging[local]'"
"""How to install what the emulator needs (moto's server, Flask; pulumi-aws and boto3)."""
REQUIRED_MODULES = ("moto", "flask", "flask_cors", "werkzeug", "boto3", "pulumi_aws", "yaml")

_LAZY = {
    "local_stack": "idempotent_messaging.local.stack",
    "start_local_stack": "idempotent_messaging.local.stack",
    "LocalStack": "idempotent_messaging.local.stack",
    "UnsupportedResources": "idempotent_messaging.local.stack",
    "StackReport": "idempotent_messaging.local.report",
    "ConsumerSummary": "idempotent_messaging.local.report",
}

__all__ = ["LOCAL_EXTRA", "missing_modules", *_LAZY]


def missing_modules() -> list[str]:
    """The modules of the ``local`` extra this interpreter cannot import."""
    missing = []
    for name in REQUIRED_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def __getattr__(name: str) -> Any:
    """The Python API, imported on first use: without the ``local`` extra the package still
    imports, and the API says which extra to install."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    missing = missing_modules()
    if missing:
        raise ImportError(
            f"idempotent_messaging.local.{name} needs the `local` extra (missing: "
            f"{', '.join(missing)}): {LOCAL_EXTRA}"
        )
    return getattr(importlib.import_module(module), name)


class Console:
    """Progress lines with the time since start, on the real terminal (the demo and the local
    command redirect fd 1 to the handlers' log while they run)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = time.monotonic()

    def line(self, text: str = "") -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def step(self, text: str) -> None:
        self.line(f"[{time.monotonic() - self.started:5.1f}s] {text}")
