"""`sanitize_history` with an `anchor` (`sessions_history`'s `messageId`): the window OpenClaw
2026.9.6's `chat.history` reads around the message, and the byte budget kept outward from
it (one older, then one newer) rather than from the newest."""

from __future__ import annotations

from typing import Any

from runtime.tools import sanitize_history


def _rows(n: int, size: int = 10) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"{i}" * size, "__openclaw": {"id": f"m{i}", "seq": i + 1}}
        for i in range(n)
    ]


def _ids(rows: list[dict[str, Any]]) -> list[str]:
    return [r["__openclaw"]["id"] for r in rows]


def test_the_window_is_the_anchor_with_fewer_older_than_newer_moved_back_at_the_end() -> None:
    rows = _rows(10)
    assert _ids(sanitize_history(rows, anchor="m4", window=1).messages) == ["m4"]
    assert _ids(sanitize_history(rows, anchor="m4", window=2).messages) == ["m4", "m5"]
    assert _ids(sanitize_history(rows, anchor="m4", window=4).messages) == ["m3", "m4", "m5", "m6"]
    assert _ids(sanitize_history(rows, anchor="m8", window=4).messages) == ["m6", "m7", "m8", "m9"]
    assert _ids(sanitize_history(rows, anchor="m0", window=3).messages) == ["m0", "m1", "m2"]
    assert len(sanitize_history(rows, anchor="m4").messages) == 10  # 200 by default
    assert sanitize_history(rows, anchor="nope").messages == []


def test_the_budget_keeps_messages_outward_from_the_anchor() -> None:
    rows = _rows(9, size=100)
    one = len(sanitize_history(rows[:1]).messages[0]["content"]) + 60  # about a row's bytes
    view = sanitize_history(rows, anchor="m4", max_bytes=2 + 3 * (one + 10))
    assert _ids(view.messages) == ["m3", "m4", "m5"]
    assert view.dropped_messages and view.truncated
    newest = sanitize_history(rows, max_bytes=2 + 3 * (one + 10))
    assert _ids(newest.messages) == ["m6", "m7", "m8"]  # unanchored: the newest
