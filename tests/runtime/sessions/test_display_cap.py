"""OpenClaw's display cap on a history row (`runtime.sessions.cap_row`): UTF-16 code units, a
surrogate pair never split, the marker after a message's text and none after a tool's
payload, the row marked; a nested tool row's result capped and marked on its block."""

from __future__ import annotations

from runtime.sessions import cap_row

CUT = "\n...(truncated)..."


def test_texts_are_cut_in_utf16_units_with_the_marker_and_the_row_marked() -> None:
    row = cap_row({"role": "user", "content": "ab😀cd", "__openclaw": {"seq": 3}}, 3)
    assert row["content"] == "ab" + CUT  # the emoji's two units do not fit: left out whole
    assert row["__openclaw"] == {"seq": 3, "truncated": True, "reason": "display-cap"}
    row = cap_row({"role": "user", "content": "ab😀cd"}, 4)
    assert row["content"] == "ab😀" + CUT
    untouched = {"role": "user", "content": "😀😀"}
    assert cap_row(dict(untouched), 4) == untouched


def test_a_tools_payload_is_cut_without_the_marker() -> None:
    row = cap_row({"role": "toolResult", "content": [{"type": "text", "text": "x" * 9}]}, 5)
    assert row["content"] == [{"type": "text", "text": "xxxxx"}]
    assert row["__openclaw"]["truncated"] is True
    thinking = cap_row(
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "y" * 9}]}, 5
    )
    assert thinking["content"][0]["thinking"] == "yyyyy" + CUT


def test_a_nested_rows_result_is_capped_as_a_message_of_its_own() -> None:
    row = {
        "role": "custom",
        "customType": "openclaw.nested-tool.v1",
        "content": [
            {"type": "toolCall", "id": "c", "arguments": {"q": "z" * 9}},
            {
                "type": "toolResult",
                "role": "toolResult",
                "content": [{"type": "text", "text": "r" * 9}],
            },
        ],
        "__openclaw": {"seq": 1},
    }
    capped = cap_row(row, 5)
    call, result = capped["content"]
    assert call["arguments"] == {"q": "z" * 9}  # a tool's input is not cut
    assert result["content"] == [{"type": "text", "text": "rrrrr"}]
    assert result["__openclaw"] == {"truncated": True, "reason": "display-cap"}
    assert capped["__openclaw"] == {"seq": 1}
