"""`tests._needs.missing`: a missing service fails the test under CI and skips it elsewhere."""

from __future__ import annotations

import pytest

from tests._needs import in_ci, missing


@pytest.mark.parametrize("value", ["true", "TRUE", "1"])
def test_under_ci_a_missing_service_fails_naming_it(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci()
    with pytest.raises(pytest.fail.Exception, match="PostgreSQL is missing: cannot be reached"):
        missing("PostgreSQL", "cannot be reached")


@pytest.mark.parametrize("value", [None, "", "false", "0"])
def test_elsewhere_a_missing_service_skips_saying_why(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert not in_ci()
    with pytest.raises(pytest.skip.Exception, match="Redis is missing: not reachable"):
        missing("Redis", "not reachable")
