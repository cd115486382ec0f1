"""A session's branches over a real socket, as OpenClaw's Control UI uses them: rewind to
before a user message (the editor gets its text, the rest stays on a side branch), send on
from there, list and switch branches, fork a new session at a message. The model's context
follows the active branch; every answer validates against OpenClaw 2026.9.6's definitions."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime.sessions import build_context, message_text
from tests.conftest import frame_checker
from transports import GatewayClient, GatewayRequestError

KEY = "agent:main:main"


async def call(c: GatewayClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await c.request(method, params)
    definition = frame_checker().result_definition(method)
    assert definition is not None, method
    frame_checker().validate(definition, result)
    return result


async def refused(
    c: GatewayClient, method: str, params: dict[str, Any], code: str = "INVALID_REQUEST"
) -> str:
    with pytest.raises(GatewayRequestError) as info:
        await c.request(method, params)
    assert info.value.code == code, info.value
    return info.value.message


async def say(c: GatewayClient, text: str, key: str = KEY) -> None:
    final = await c.request(
        "agent",
        {"message": text, "sessionKey": key, "idempotencyKey": f"{key}:{text}"[:200]},
        expect_final=True,
    )
    assert final["status"] == "ok"


async def history(c: GatewayClient, key: str = KEY) -> list[tuple[str, str, str]]:
    """(role, text, entry id) of each message the session shows."""
    rows = (await c.request("chat.history", {"sessionKey": key}))["messages"]
    return [(r["role"], _text(r["content"]), r["__openclaw"]["id"]) for r in rows]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content)


async def context_of(gateway: Any, key: str) -> list[str]:
    """What the model gets on the session's next run."""
    row = await gateway.supervisor.store.get_session(key)
    entries = await gateway.supervisor.store.load_entries(row.sessionId)
    return [message_text(m) for m in build_context(entries)]


async def test_rewind_send_switch_and_fork(connect, gateway) -> None:
    with trio.fail_after(30):
        async with connect() as c:
            await say(c, "one")
            await say(c, "two")
            shown = await history(c)
            assert [t for _, t, _ in shown] == ["one", "You said: one", "two", "You said: two"]
            two_id, reply_id = shown[2][2], shown[3][2]

            rewound = await call(c, "sessions.rewind", {"sessionKey": KEY, "entryId": two_id})
            assert rewound == {"editorText": "two"}
            assert [t for _, t, _ in await history(c)] == ["one", "You said: one"]
            assert await context_of(gateway, KEY) == ["one", "You said: one"]

            await say(c, "three")
            assert await context_of(gateway, KEY) == [
                "one",
                "You said: one",
                "three",
                "You said: three",
            ]
            branches = (await call(c, "sessions.branches.list", {"sessionKey": KEY}))["branches"]
            assert [(b["headline"], b["active"], b["messageCount"]) for b in branches] == [
                ("two", False, 4),
                ("three", True, 4),
            ]
            old_tip = branches[0]["leafEntryId"]
            assert old_tip == reply_id

            assert "not a user message" in await refused(
                c, "sessions.rewind", {"sessionKey": KEY, "entryId": reply_id}
            )
            assert "not on the active path" in await refused(
                c, "sessions.rewind", {"sessionKey": KEY, "entryId": two_id}
            )
            assert "not found" in await refused(
                c, "sessions.rewind", {"sessionKey": KEY, "entryId": "nope"}
            )
            assert "already active" in await refused(
                c,
                "sessions.branches.switch",
                {"sessionKey": KEY, "leafEntryId": branches[1]["leafEntryId"]},
            )
            assert "not a branch tip" in await refused(
                c, "sessions.branches.switch", {"sessionKey": KEY, "leafEntryId": shown[0][2]}
            )

            assert (
                await call(
                    c, "sessions.branches.switch", {"sessionKey": KEY, "leafEntryId": old_tip}
                )
                == {}
            )
            assert [t for _, t, _ in await history(c)] == [
                "one",
                "You said: one",
                "two",
                "You said: two",
            ]
            assert await context_of(gateway, KEY) == [
                "one",
                "You said: one",
                "two",
                "You said: two",
            ]

            forked = await call(c, "sessions.fork", {"sessionKey": KEY, "entryId": two_id})
            assert forked["editorText"] == "two"
            new_key = forked["sessionKey"]
            assert new_key.startswith("agent:main:dashboard:")
            assert [t for _, t, _ in await history(c, new_key)] == ["one", "You said: one"]
            await say(c, "four", new_key)
            assert await context_of(gateway, new_key) == [
                "one",
                "You said: one",
                "four",
                "You said: four",
            ]
            # the source is as it was
            assert [t for _, t, _ in await history(c)] == [
                "one",
                "You said: one",
                "two",
                "You said: two",
            ]

            assert "session not found" in await refused(
                c, "sessions.rewind", {"sessionKey": "agent:main:ghost", "entryId": two_id}
            )


async def test_rewind_to_the_first_message_and_while_working(connect, gateway) -> None:
    with trio.fail_after(30):
        async with connect() as c:
            await say(c, "first")
            first_id = (await history(c))[0][2]
            assert (await call(c, "sessions.rewind", {"sessionKey": KEY, "entryId": first_id}))[
                "editorText"
            ] == "first"
            assert await history(c) == [] and await context_of(gateway, KEY) == []
            await say(c, "again")
            assert await context_of(gateway, KEY) == ["again", "You said: again"]
            again_id = (await history(c))[0][2]

            ack = await c.request(
                "agent",
                {
                    "message": "slow [[deltas:5]] [[delay:200]]",
                    "sessionKey": KEY,
                    "idempotencyKey": "slow",
                },
            )
            assert ack["status"] == "accepted"
            message = await refused(
                c, "sessions.rewind", {"sessionKey": KEY, "entryId": again_id}, code="UNAVAILABLE"
            )
            assert "while the agent is working" in message
            await c.request("agent.wait", {"runId": "slow", "timeoutMs": 20_000})


async def test_previews_show_the_last_messages_of_each_session(connect) -> None:
    with trio.fail_after(30):
        async with connect() as c:
            await say(c, "alpha " + "x" * 300)
            await say(c, "beta [[reply:NO_REPLY]]")
            await say(c, "gamma", "agent:main:other")
            answer = await c.request(
                "sessions.preview",
                {
                    "keys": [KEY, "agent:main:other", "agent:main:nobody"],
                    "limit": 3,
                    "maxChars": 50,
                },
            )
            assert answer["ts"] > 0
            first, other, nobody = answer["previews"]
            assert first["key"] == KEY and first["status"] == "ok"
            # the silent reply is left out; the long ones are cut to 50 characters
            assert [i["role"] for i in first["items"]] == ["user", "assistant", "user"]
            assert (
                first["items"][0]["text"].endswith("...") and len(first["items"][0]["text"]) == 50
            )
            assert first["items"][2]["text"] == "beta [[reply:NO_REPLY]]"
            assert other["items"] == [
                {"role": "user", "text": "gamma"},
                {"role": "assistant", "text": "You said: gamma"},
            ]
            assert nobody == {"key": "agent:main:nobody", "status": "missing", "items": []}
            await refused(c, "sessions.preview", {"keys": []})
            await refused(c, "sessions.preview", {"keys": ["x"], "maxChars": 5})
