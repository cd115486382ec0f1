"""The fault suite's figures, printed at the end of the run (see tests/chaos/_checks.py)."""

from __future__ import annotations

import pytest

from tests.chaos._checks import REPORT


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos: a fault scenario on a cluster of gateway processes")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REPORT:
        terminalreporter.section("fault scenarios: figures")
        for found in REPORT:
            terminalreporter.write_line(found.line())
