"""`sessions_history`'s sanitizing equals OpenClaw 2026.9.6's, message for message
(runtime.tools._sessions_history, its redaction runtime.tools._redact): a recorded table of
OpenClaw's own answers (tests/data/openclaw-sessions-history-2026.9.6.json: 1,500 texts
through `redactToolPayloadText`, 120 transcripts through `sessions_history`'s sanitizing
and byte budget; see tests/runtime/tools/_history_cases.py), the named claims below, and
fresh random cases under Node 24 when it is installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime.tools._redact import redact_tool_payload_text
from runtime.tools._sessions_history import (
    TOO_LARGE,
    TRUNCATED_MARKER,
    history_view,
    json_utf8_bytes,
    sanitize_history,
)
from tests.runtime.tools._history_cases import (
    RECORD,
    openclaw_answers,
    random_histories,
    random_texts,
)
from tests.runtime.tools._openclaw_node import require_node


def _view(case: dict[str, Any]) -> dict[str, Any]:
    view = history_view(
        case["messages"],
        include_tools=case["includeTools"],
        max_bytes=case["maxBytes"],
        anchor=case["messageId"],
    )
    # through JSON, as the tool's result goes out (and the recorded answer came in)
    shown: dict[str, Any] = json.loads(json.dumps({"messages": view.messages, **view.flags()}))
    return shown


def test_the_recorded_redactions_are_matched() -> None:
    texts = json.loads(RECORD.read_text())["texts"]
    assert len(texts) == 1500
    wrong = [t for t in texts if redact_tool_payload_text(t["text"]) != t["redacted"]]
    assert wrong == []
    assert sum(t["text"] != t["redacted"] for t in texts) > 700  # most hold a credential


def test_the_recorded_histories_are_matched() -> None:
    cases = json.loads(RECORD.read_text())["histories"]
    assert len(cases) == 120
    for case in cases:
        assert _view(case) == case["view"]
    views = [case["view"] for case in cases]
    assert sum(v["droppedMessages"] for v in views) > 20
    assert sum(v["contentTruncated"] for v in views) > 60
    shown = [m for v in views for m in v["messages"] if isinstance(m, dict)]
    assert any(m.get("content") == TOO_LARGE for m in shown)


@pytest.mark.parametrize("seed", [11, 12])
async def test_more_random_cases_match_openclaw_under_node(tmp_path: Path, seed: int) -> None:
    require_node()
    texts, histories = random_texts(seed, 400), random_histories(seed, 40)
    answers = await openclaw_answers(tmp_path, texts, histories)
    assert [redact_tool_payload_text(t) for t in texts] == answers["texts"]
    assert [_view(case) for case in histories] == answers["histories"]


def test_long_text_is_cut_at_4000_utf16_units_never_inside_a_pair() -> None:
    text = "a" + "🎉" * 2100  # the 4,000th unit is the first half of a pair
    view = sanitize_history([{"role": "user", "content": text}])
    [message] = view.messages
    assert message["content"] == "a" + "🎉" * 1999 + TRUNCATED_MARKER
    assert view.content_truncated and view.truncated and not view.dropped_messages


def test_credentials_are_masked_as_openclaw_masks_them() -> None:
    key = "sk-" + "a1" * 20
    out = redact_tool_payload_text(f"my key is {key}, password=hunter22 and token: 'abc'")
    assert out == "my key is sk-a1a…a1a1, password=*** and token: '***'"
    assert redact_tool_payload_text("nothing secret here") == "nothing secret here"


def test_tool_call_arguments_are_left_as_they_are() -> None:
    arguments = {"command": "export OPENAI_API_KEY=sk-" + "z" * 30, "big": "x" * 9000}
    call = {"type": "toolCall", "id": "c1", "name": "exec", "arguments": arguments}
    [message] = sanitize_history([{"role": "assistant", "content": [call]}]).messages
    assert message["content"] == [call]


def test_private_block_data_is_left_out_as_chat_history_leaves_it_out() -> None:
    blocks = [
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig", "redacted": False},
        {"type": "image", "data": "AAAAAA==", "mimeType": "image/png"},
        {"type": "toolCall", "name": "sessions_yield", "arguments": {"message": "private"}},
    ]
    [message] = sanitize_history([{"role": "assistant", "content": blocks}]).messages
    assert message["content"] == [
        {"type": "thinking", "thinking": "hmm", "redacted": False},
        {"type": "image", "mimeType": "image/png", "omitted": True, "bytes": 4},
        {"type": "toolCall", "name": "sessions_yield", "arguments": {}},
    ]


def test_usage_cost_and_details_are_left_out_and_count_as_truncated() -> None:
    message = {"role": "assistant", "content": [], "usage": {"input": 1}, "cost": 0.1}
    view = sanitize_history([message, {"role": "user", "content": "hi", "details": {}}])
    assert view.messages == [
        {"role": "assistant", "content": []},
        {"role": "user", "content": "hi"},
    ]
    assert view.content_truncated and view.truncated and not view.content_redacted


def test_a_newest_message_too_large_for_the_budget_is_a_placeholder() -> None:
    rows = [
        {"role": "user", "content": "x" * 300, "__openclaw": {"id": f"m{i}", "seq": i}}
        for i in (1, 2)
    ]
    view = sanitize_history(rows, max_bytes=200)
    placeholder = {"role": "assistant", "content": TOO_LARGE, "__openclaw": {"seq": 2, "id": "m2"}}
    assert view.messages == [placeholder]
    assert view.dropped_messages and view.truncated and not view.content_truncated
    assert view.bytes == json_utf8_bytes([placeholder])


def test_json_sizes_are_javascripts() -> None:
    assert json_utf8_bytes({"a": 1.0, "b": 1e21, "c": 1.5e-7, "d": "é🎉"}) == len(
        '{"a":1,"b":1e+21,"c":1.5e-7,"d":"é🎉"}'.encode()
    )
    assert json_utf8_bytes(["\ud800"]) == len('["\\ud800"]')
