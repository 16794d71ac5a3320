"""Entry point: `python -m idempotent_messaging.ops ...`."""

from __future__ import annotations

from idempotent_messaging.ops.cli import main

raise SystemExit(main())
