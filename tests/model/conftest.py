"""Prints what the model checker explored (bounds, states per configuration) after the run,
whether or not pytest captures output: the tests put their results in ``user_properties``,
which reach this process from xdist workers too."""

from __future__ import annotations

from typing import Any

import pytest

_LINES: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    for name, value in report.user_properties:
        if name == "model":
            _LINES.append(str(value))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _LINES:
        return
    terminalreporter.section("protocol model: states explored per configuration")
    for line in sorted(_LINES):
        terminalreporter.write_line(line)
