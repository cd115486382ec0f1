"""The fault suite's figures, printed at the end of the run with each scenario's outcome
(see tests/chaos/_checks.py)."""

from __future__ import annotations

import pytest

from tests.chaos._checks import REPORT

_OUTCOMES: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos: a fault scenario on a cluster of gateway processes")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and not report.passed):
        outcome: str = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        _OUTCOMES[report.nodeid] = outcome


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REPORT:
        terminalreporter.section("fault scenarios: figures")
        for found in REPORT:
            outcome = _OUTCOMES.get(found.test, "?")
            terminalreporter.write_line(f"[{outcome}] {found.line()}")
