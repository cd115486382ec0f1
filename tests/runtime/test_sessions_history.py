"""`sessions_history`'s view of a transcript: tool results only when asked, credentials
redacted, long text cut, thinking signatures and image data left out, bytes bounded (each
as OpenClaw 2026.9.6: tests/runtime/tools/test_sessions_history_openclaw.py checks the
whole against OpenClaw's own code)."""

from __future__ import annotations

from typing import Any

from runtime.tools import sanitize_history
from runtime.tools._redact import redact_tool_payload_text
from runtime.tools._sessions_history import TEXT_MAX, TOO_LARGE, TRUNCATED_MARKER


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "timestamp": 2}


def test_tool_results_are_shown_only_when_asked() -> None:
    result = {"role": "toolResult", "toolName": "read", "content": [], "timestamp": 3}
    messages = [user("hi"), result, assistant({"type": "text", "text": "ok"})]
    assert [m["role"] for m in sanitize_history(messages).messages] == ["user", "assistant"]
    shown = sanitize_history(messages, include_tools=True).messages
    assert [m["role"] for m in shown] == ["user", "toolResult", "assistant"]


def test_credentials_are_redacted_and_long_text_cut() -> None:
    key = "sk-" + "a1" * 20
    view = sanitize_history(
        [user(f"my key is {key} and password=hunter22"), user("x" * (TEXT_MAX + 10))]
    )
    first, second = view.messages
    assert first["content"] == "my key is sk-a1a…a1a1 and password=***"
    assert second["content"] == "x" * TEXT_MAX + TRUNCATED_MARKER
    assert view.content_redacted and view.content_truncated and not view.dropped_messages
    assert redact_tool_payload_text("nothing secret here") == "nothing secret here"


def test_signatures_and_image_data_are_left_out() -> None:
    view = sanitize_history(
        [
            assistant(
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            )
        ]
    )
    thinking, image = view.messages[0]["content"]
    assert thinking == {"type": "thinking", "thinking": "hmm"}
    assert image == {"type": "image", "mimeType": "image/png", "omitted": True, "bytes": 3}


def test_the_oldest_messages_go_when_the_bytes_run_out() -> None:
    messages = [user(f"message {i} " + "y" * 900) for i in range(10)]
    view = sanitize_history(messages, max_bytes=3000)
    assert [m["content"][:9] for m in view.messages] == ["message 7", "message 8", "message 9"]
    assert view.dropped_messages and view.truncated and view.bytes <= 3000
    [huge] = sanitize_history([user("z" * 3000)], max_bytes=1000).messages
    assert huge == {"role": "assistant", "content": TOO_LARGE}
