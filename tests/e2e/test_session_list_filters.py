"""`sessions_list`'s and `sessions_history`'s OpenClaw 2026.9.6 parameters over a real gateway,
driven by the `local` model's `[[tool:...]]` directives, answering as the peer gateway
answered the same calls (OpenClaw's own, run with its mock model):

- a subagent session was made and is owned by the agent that spawned it (`createdActor`,
  `owner`: `creatorId` and `ownerId` pick it) and works in its agent's workspace
  (`spawnedWorkspaceDir`, `workspaceDir`: `workspaceDir` picks it); a session an operator
  made has neither;
- nothing is archived, pinned or filed under a project (`archived: true`, `pinned: true`,
  a `projectId` list nothing; `archived: "all"`, `false` and `pinned: false` all); `group` is
  the session group a session is filed under (`""`: the ungrouped);
- `relationship` is a tool error without an authenticated requesting user;
- `includeDerivedTitles` titles a row with its label, else with its first user message;
- `sessions_history`'s `messageId` (an `__openclaw.id` of its rows) gives the window around
  that message (`limit` of them, `limit - limit // 2 - 1` older; tool results left out
  afterwards unless `includeTools`), `offset` ignored, no paging; an unknown id nothing;
  `sessionId` needs `messageId` and must be the session's transcript.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_session_tools import Watch, details, directive, tool_results

NOT_ITS = "00000000-0000-4000-8000-000000000000"


def _calls(name: str, calls: list[dict[str, Any]]) -> str:
    return " ".join(directive(name, c) for c in calls)


def _keys(result: dict[str, Any]) -> list[str]:
    return sorted(row["key"] for row in details(result)["sessions"])


async def test_sessions_list_filters_by_creator_owner_workspace_group_archive_and_pins(
    tmp_path: Path,
) -> None:
    watch = Watch()
    workspace = str(await trio.Path(tmp_path, "state", "workspaces", "main").resolve())
    calls: list[dict[str, Any]] = [
        {},
        {"creatorId": "main"},
        {"ownerId": "main"},
        {"creatorId": "other"},
        {"ownerId": "nobody"},
        {"workspaceDir": workspace},
        {"workspaceDir": "/elsewhere"},
        {"archived": True},
        {"archived": "all"},
        {"archived": False},
        {"pinned": True},
        {"pinned": False},
        {"group": ""},
        {"group": "Reviews"},
        {"projectId": "p1"},
        {"relationship": "owned"},
        {"includeDerivedTitles": True},
    ]
    async with running_gateway(tmp_path, local_config(tools__toolSearch=False)) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                spawn = directive("sessions_spawn", {"task": "[[reply:done]]", "label": "kid"})
                await client.request(
                    "agent",
                    {"message": f"Fix the login bug. {spawn}", "idempotencyKey": "spawn-1"},
                    expect_final=True,
                )
                child = details(tool_results(watch.events, "spawn-1")[0])["childSessionKey"]
                await watch.ended("agent:main:main", 2)  # the spawning run, the announce
                await client.request(
                    "agent",
                    {
                        "message": "[[reply:filed]]",
                        "sessionKey": "agent:main:filed",
                        "idempotencyKey": "filed-1",
                    },
                    expect_final=True,
                )
                await client.request(
                    "sessions.patch", {"key": "agent:main:filed", "category": "Reviews"}
                )
                for run, part in (("list-1", calls[:9]), ("list-2", calls[9:])):
                    await client.request(
                        "agent",
                        {
                            "message": "write the release notes. " + _calls("sessions_list", part),
                            "sessionKey": "agent:main:lister",
                            "idempotencyKey": run,
                        },
                        expect_final=True,
                    )
    results = tool_results(watch.events, "list-1") + tool_results(watch.events, "list-2")
    assert [r["name"] for r in results] == ["sessions_list"] * len(calls)
    listed = dict(zip([json.dumps(c) for c in calls], results, strict=True))
    every = sorted([child, "agent:main:filed", "agent:main:lister", "agent:main:main"])
    assert _keys(listed["{}"]) == every
    rows = {row["key"]: row for row in details(listed["{}"])["sessions"]}
    actor = {"type": "agent", "id": "main", "identity": {"type": "agent", "id": "main"}}
    assert rows[child]["createdActor"] == actor and rows[child]["owner"] == {"actor": actor}
    assert rows[child]["spawnedWorkspaceDir"] == rows[child]["workspaceDir"] == workspace
    for key in ("agent:main:main", "agent:main:lister"):
        assert not {"createdActor", "owner", "workspaceDir", "group"} & set(rows[key])
    assert rows["agent:main:filed"]["group"] == "Reviews"
    assert all(r["archived"] is False and r["pinned"] is False for r in rows.values())
    for call in ('{"creatorId": "main"}', '{"ownerId": "main"}'):
        assert _keys(listed[call]) == [child]
    assert _keys(listed[json.dumps({"workspaceDir": workspace})]) == [child]
    for call in ('{"archived": "all"}', '{"archived": false}', '{"pinned": false}'):
        assert _keys(listed[call]) == every
    assert _keys(listed['{"group": ""}']) == sorted(set(every) - {"agent:main:filed"})
    assert _keys(listed['{"group": "Reviews"}']) == ["agent:main:filed"]
    for call in (
        '{"creatorId": "other"}',
        '{"ownerId": "nobody"}',
        '{"workspaceDir": "/elsewhere"}',
        '{"archived": true}',
        '{"pinned": true}',
        '{"projectId": "p1"}',
    ):
        assert details(listed[call]) == {
            "count": 0,
            "sessions": [],
            "hasMore": False,
            "limitApplied": 100,
        }, call
    refused = listed['{"relationship": "owned"}']
    assert refused["isError"] and details(refused) == {
        "status": "error",
        "tool": "sessions_list",
        "error": "relationship requires an authenticated requesting user; use an explicit "
        "ownerId or creatorId instead",
    }
    titled = {r["key"]: r for r in details(listed['{"includeDerivedTitles": true}'])["sessions"]}
    assert titled[child]["derivedTitle"] == "kid"  # its label
    assert titled["agent:main:main"]["derivedTitle"] == "Fix the login bug."
    assert titled["agent:main:lister"]["derivedTitle"] == "Write the release notes."
    assert "derivedTitle" not in rows["agent:main:main"]


async def test_sessions_history_reads_the_window_around_a_message_id(tmp_path: Path) -> None:
    watch = Watch()
    async with running_gateway(tmp_path, local_config(tools__toolSearch=False)) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent",
                    {
                        "message": "one " + directive("agents_list", {}),
                        "sessionKey": "agent:main:src",
                        "idempotencyKey": "src-1",
                    },
                    expect_final=True,
                )
                await client.request(
                    "agent",
                    {
                        "message": "[[reply:two]]",
                        "sessionKey": "agent:main:src",
                        "idempotencyKey": "src-2",
                    },
                    expect_final=True,
                )
                shown = await client.request("chat.history", {"sessionKey": "agent:main:src"})
                rows = shown["messages"]
                ids = [r["__openclaw"]["id"] for r in rows]
                # user, assistant (the call), toolResult, assistant, user, assistant
                assert [r["role"] for r in rows] == [
                    "user",
                    "assistant",
                    "toolResult",
                    "assistant",
                    "user",
                    "assistant",
                ]
                src, result_id = "agent:main:src", ids[2]
                calls: list[dict[str, Any]] = [
                    {"sessionKey": src, "messageId": result_id, "limit": 1},
                    {"sessionKey": src, "messageId": result_id, "limit": 2},
                    {"sessionKey": src, "messageId": result_id, "limit": 3, "includeTools": True},
                    {"sessionKey": src, "messageId": ids[4], "limit": 3},
                    {"sessionKey": src, "messageId": ids[0], "offset": 4, "limit": 2},
                    {"sessionKey": src, "messageId": "nope"},
                    {"sessionKey": src, "sessionId": shown["sessionId"]},
                    {"sessionKey": src, "messageId": ids[3], "sessionId": shown["sessionId"]},
                    {"sessionKey": src, "messageId": ids[3], "sessionId": NOT_ITS},
                    {"sessionKey": src},
                ]
                await client.request(
                    "agent",
                    {"message": _calls("sessions_history", calls), "idempotencyKey": "hist-1"},
                    expect_final=True,
                )
    results = tool_results(watch.events, "hist-1")
    assert [r["name"] for r in results] == ["sessions_history"] * len(calls)
    seen = [details(r) for r in results]

    def window(payload: dict[str, Any]) -> list[str]:
        return [m["__openclaw"]["id"] for m in payload["messages"]]

    assert window(seen[0]) == []  # the tool result alone, left out without includeTools
    assert window(seen[1]) == [ids[3]]  # the result and the next one; the result left out
    assert window(seen[2]) == ids[1:4]
    assert window(seen[3]) == ids[3:6]  # one older, the anchor, one newer
    assert window(seen[4]) == ids[0:2]  # offset ignored
    for anchored in seen[:6]:
        assert not {"offset", "nextOffset", "hasMore", "totalMessages"} & set(anchored)
    assert seen[5]["messages"] == [] and seen[5]["droppedMessages"] is False
    assert results[6]["isError"] and seen[6] == {
        "status": "error",
        "tool": "sessions_history",
        "error": "sessionId requires messageId",
    }
    assert window(seen[7]) == [ids[0], ids[1], ids[3], ids[4], ids[5]]
    assert results[8]["isError"] and seen[8] == {
        "status": "error",
        "tool": "sessions_history",
        "error": "sessionId does not belong to sessionKey",
    }
    assert window(seen[9]) == [ids[0], ids[1], ids[3], ids[4], ids[5]]  # the rows' own ids
    assert [m["__openclaw"]["seq"] for m in seen[9]["messages"]] == [1, 2, 4, 5, 6]
