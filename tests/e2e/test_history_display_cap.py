"""`chat.history` and `session.message` cut texts as OpenClaw 2026.9.6's chat display does, on a
real gateway driven by the `local` model: 8,000 characters unless `chat.history` asks for
`maxChars`; a message's text gets `\\n...(truncated)...` after it, a tool's payload is cut
with nothing after it, and a cut row says so in `__openclaw` (`truncated`, `reason:
"display-cap"`); a call made through Tool Search's `tool_call` shows its result capped as a
message of its own, the mark on its tool result block.

What the peer gateway's `chat.history` answered for the same calls (a user message of 8,113
characters, then `tool_call` of `sessions_history` whose result was longer than 8,000): the
user row's content 8,000 characters and `\\n...(truncated)...`, its `__openclaw` with
`truncated: true, reason: "display-cap"` after its `seq`; the nested row's tool result block
`content[0].text` exactly 8,000 characters and `__openclaw: {truncated: true, reason:
"display-cap"}` on the block, none on the row; the `tool_call` result row's text exactly
8,000 characters, the row marked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from tests.conftest import open_client, running_gateway
from tests.e2e.test_session_tools import Watch, directive

MAIN = "agent:main:main"
CUT = "\n...(truncated)..."
MARK = {"truncated": True, "reason": "display-cap"}
LONG = "[[reply:ok]] " + "b" * 8100
PEEK = directive("sessions_history", {"sessionKey": MAIN}) + " [[reply:seen]]"


def _first_text(block: dict[str, Any]) -> str:
    return str(block["content"][0]["text"])


async def test_chat_history_cuts_texts_and_nested_results_as_openclaws_display(
    tmp_path: Path,
) -> None:
    watch = Watch()
    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw, caps=["tool-events"], on_event=watch) as client,
        ):
            await client.request("sessions.messages.subscribe", {"key": MAIN})
            for n, text in enumerate((LONG, "[[reply:ok]] " + "c" * 4100)):
                await client.request(
                    "agent", {"message": text, "idempotencyKey": f"m{n}"}, expect_final=True
                )
            await client.request(
                "agent", {"message": PEEK, "idempotencyKey": "peek"}, expect_final=True
            )
            shown = (await client.request("chat.history", {"sessionKey": MAIN}))["messages"]
            asked = await client.request("chat.history", {"sessionKey": MAIN, "maxChars": 100})
    [long, *_] = [r for r in shown if r["role"] == "user"]
    assert long["content"] == LONG[:8000] + CUT
    assert long["__openclaw"]["seq"] == 1 and long["__openclaw"] | MARK == long["__openclaw"]
    [nested] = [r for r in shown if r.get("customType") == "openclaw.nested-tool.v1"]
    _, result = nested["content"]
    assert len(_first_text(result)) == 8000 and not _first_text(result).endswith(CUT)
    assert result["__openclaw"] == MARK and "truncated" not in nested["__openclaw"]
    [envelope] = [r for r in shown if r.get("toolName") == "tool_call"]
    assert len(_first_text(envelope)) == 8000 and envelope["__openclaw"]["truncated"] is True
    short = [r for r in shown if r["role"] == "assistant" and r["content"][0].get("text") == "ok"]
    assert short and all("truncated" not in r["__openclaw"] for r in short)
    # a client's maxChars
    [long, *_] = [r for r in asked["messages"] if r["role"] == "user"]
    assert long["content"] == LONG[:100] + CUT
    [nested] = [r for r in asked["messages"] if r.get("customType")]
    assert len(_first_text(nested["content"][1])) == 100
    # session.message: the same 8,000 cut
    [told] = [
        p["message"]
        for (e, p, _s) in watch.events
        if e == "session.message" and p["message"].get("customType")
    ]
    assert len(_first_text(told["content"][1])) == 8000
    [said] = [
        p["message"]
        for (e, p, _s) in watch.events
        if e == "session.message" and p["message"].get("content") == LONG[:8000] + CUT
    ]
    assert said["__openclaw"]["truncated"] is True
