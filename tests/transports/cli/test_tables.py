"""The CLI's tables render what is there: clawlane's current answers, OpenClaw's shapes with
clawlane's own block under `status["clawlane"]`, and shapes nobody planned for."""

from __future__ import annotations

from typing import Any

import pytest

from transports.cli._tables import format_table, humanize, render_result

NOW = 1_796_000_000_000.0


def test_sessions_list_is_a_table_of_the_columns_present() -> None:
    result = {
        "count": 2,
        "path": "/state/clawlane.sqlite",
        "sessions": [
            {"key": "agent:main:main", "kind": "direct", "agentId": "main", "status": "done",
             "totalTokens": 714, "updatedAt": NOW - 90_000, "hasActiveRun": False},
            {"key": "agent:main:demo", "kind": "direct", "agentId": "main", "status": "running",
             "totalTokens": 123_456, "updatedAt": NOW - 5_000, "hasActiveRun": True,
             "model": "local/echo"},
        ],
    }  # fmt: skip
    lines = render_result("sessions.list", result, now_ms=NOW).splitlines()
    assert lines[0] == "2 sessions (store /state/clawlane.sqlite)"
    assert lines[2].split() == [
        "KEY",
        "KIND",
        "AGENT",
        "MODEL",
        "STATUS",
        "ACTIVE",
        "TOKENS",
        "UPDATED",
    ]
    first, second = lines[3].split(), lines[4].split()
    assert first[:6] == ["agent:main:main", "direct", "main", "-", "done", "no"]
    assert first[6] == "714" and "(1m 30s ago)" in lines[3]
    assert second[3:7] == ["local/echo", "running", "yes", "123,456"]
    assert lines[3].index("714") + 3 == lines[4].index("123,456") + 7  # numbers right-aligned


def test_models_list_and_an_empty_catalog() -> None:
    result = {"models": [{"id": "echo", "provider": "local", "contextWindow": 128000}]}
    lines = render_result("models.list", result, now_ms=NOW).splitlines()
    assert lines[0].split() == ["PROVIDER", "MODEL", "CONTEXT"]
    assert lines[1].split() == ["local", "echo", "128,000"]
    assert render_result("models.list", {"models": []}) == "no models"


def test_an_openclaw_shaped_status_with_a_clawlane_block_renders_in_sections() -> None:
    status = {
        "heartbeat": {"defaultAgentId": "main", "agents": [{"agentId": "main", "enabled": False}]},
        "sessions": {
            "count": 1,
            "recent": [{"key": "agent:main:main", "updatedAt": NOW - 1000, "age": 1000}],
        },
        "queuedSystemEvents": [],
        "clawlane": {
            "uptimeMs": 3_723_000,
            "process": {"pid": 4242, "rssBytes": 50 * 1048576},
            "lanes": {
                "main": {"capacity": 8, "inUse": 1},
                "cron": {"capacity": 1, "inUse": 0},
            },
        },
    }
    text = render_result("status", status, now_ms=NOW)
    lines = text.splitlines()
    assert lines[0].split() == ["queuedSystemEvents", "(none)"]
    assert "heartbeat" in lines and "clawlane" in lines
    assert any(line.split() == ["uptimeMs", "1h", "02m"] for line in lines)
    assert any(line.split() == ["pid", "4242"] for line in lines)
    assert any(line.split() == ["rssBytes", "50.0", "MiB"] for line in lines)
    lanes = lines.index("  lanes")
    assert lines[lanes + 1].split() == ["NAME", "CAPACITY", "INUSE"]
    assert lines[lanes + 2].split() == ["main", "8", "1"]
    recent = lines.index("  recent")
    assert lines[recent + 1].split() == ["KEY", "UPDATEDAT", "AGE"]


@pytest.mark.parametrize(
    "odd",
    [None, 3, "text", [], [1, 2], {"sessions": "not a list"}, {"a": {"b": {"c": {"d": {"e": 1}}}}}],
)
def test_unexpected_shapes_never_fail(odd: Any) -> None:
    for method in ("status", "health", "sessions.list", "models.list"):
        assert isinstance(render_result(method, odd, now_ms=NOW), str)


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("durationMs", 12, "12 ms"),
        ("uptimeMs", 65_000, "1m 05s"),
        ("waitMaxMs", 0.25, "0.2 ms"),
        ("rssBytes", 2048, "2.0 KiB"),
        ("ok", True, "yes"),
        ("missing", None, "-"),
        ("count", 1_234_567, "1,234,567"),
        ("pid", 123_456, "123456"),
        ("names", ["a", "b"], "a, b"),
        ("empty", "", '""'),
    ],
)
def test_values_are_humanized_by_their_key(key: str, value: Any, shown: str) -> None:
    assert humanize(key, value, now_ms=NOW) == shown


def test_format_table_pads_columns() -> None:
    assert (
        format_table(["A", "N"], [["x", "1"], ["long", "100"]]) == "A       N\nx       1\nlong  100"
    )
