"""The browser-origin decision (one function for WebSocket upgrades and HTTP requests)."""

from __future__ import annotations

import pytest

from transports.access._origins import check_origin


@pytest.mark.parametrize(
    ("origin", "host", "local", "allowed", "ok", "why"),
    [
        ("http://127.0.0.1:18789", "127.0.0.1:18789", True, [], True, "same-origin"),
        ("http://localhost:18789", "localhost:18789", True, [], True, "same-origin"),
        ("http://[::1]:18789", "[::1]:18789", True, [], True, "same-origin"),
        ("http://localhost:18789", "localhost:18789", False, [], False, "origin not allowed"),
        ("http://192.168.1.5:18789", "192.168.1.5:18789", False, [], True, "same-origin"),
        ("http://box.local:18789", "box.local:18789", False, [], True, "same-origin"),
        ("http://evil.example:18789", "evil.example:18789", True, [], False, "origin not allowed"),
        ("http://localhost:5173", "127.0.0.1:18789", True, [], False, "origin not allowed"),
        ("https://evil.example", "127.0.0.1:18789", True, [], False, "origin not allowed"),
        ("https://ui.example", "127.0.0.1:18789", True, ["https://UI.example/"], True, "allowlist"),
        ("https://ui.example:443", "x", True, ["https://ui.example"], True, "allowlist"),
        ("https://any.example", "x", False, ["*"], True, "allowlist"),
        ("null", "127.0.0.1:18789", True, ["*"], False, "origin missing or invalid"),
        ("", "127.0.0.1:18789", True, [], False, "origin missing or invalid"),
        (None, "127.0.0.1:18789", True, [], False, "origin missing or invalid"),
        (
            "http://127.0.0.1:18789/x",
            "127.0.0.1:18789",
            True,
            [],
            False,
            "origin missing or invalid",
        ),
        (
            "http://u:p@127.0.0.1:18789",
            "127.0.0.1:18789",
            True,
            [],
            False,
            "origin missing or invalid",
        ),
        ("http://127.0.0.1:99999", "127.0.0.1:99999", True, [], False, "origin missing or invalid"),
    ],
)
def test_origins(origin, host, local, allowed, ok, why) -> None:
    decision = check_origin(origin, host=host, local_client=local, allowed_origins=allowed)
    assert decision.ok is ok
    assert (decision.matched_by if ok else decision.reason) == why


def test_the_host_header_fallback_is_opt_in() -> None:
    origin, host = "http://evil.example:18789", "evil.example:18789"
    assert not check_origin(origin, host=host, local_client=True).ok
    fallback = check_origin(origin, host=host, local_client=True, allow_host_header_fallback=True)
    assert fallback.ok and fallback.matched_by == "host-header-fallback"
