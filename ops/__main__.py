"""Entry point: `python -m ops ...`."""

from __future__ import annotations

from ops.cli import main

raise SystemExit(main())
