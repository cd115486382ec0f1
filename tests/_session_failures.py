"""The session tools' failures as OpenClaw 2026.9.6 answers them (seen on its peer gateway for
the same calls, or read in its dist where the peer cannot show them), checked the same way on
a gateway and on the embedded runtime.

Each case is a call made from `agent:main:main`, with `agent:main:other` and the thread
session `agent:main:room:thread:7` existing, and what
the model must read: a payload (`{status, error, ...}` as two-space JSON text and as
details; a `runId` is any uuid), or the error a throwing tool gives (`tests/_thrown.py`).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Final

from tests._thrown import thrown

NOT_FOUND: Final = "Session not found: {} (use the full sessionKey from sessions_list)"
MALFORMED: Final = "Malformed agent session key; refusing default-agent resolution."
RUN_ID: Final = "<uuid>"


class Thrown:
    """The tool throws `message` (OpenClaw's thrown-tool envelope)."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __repr__(self) -> str:
        return f"Thrown({self.message!r})"


Case = tuple[str, dict[str, Any], dict[str, Any] | Thrown]


def _send(error: str, key: str | None = None) -> dict[str, Any]:
    payload = {"runId": RUN_ID, "status": "error", "error": error}
    return payload | ({"sessionKey": key} if key is not None else {})


DEFAULT_CASES: Final[list[Case]] = [
    # sessions_history: a name that is no key, a missing key, a key of no agent, a malformed key
    (
        "sessions_history",
        {"sessionKey": "nosuch"},
        {"status": "error", "error": NOT_FOUND.format("nosuch")},
    ),
    (
        "sessions_history",
        {"sessionKey": "héllo✓"},
        {"status": "error", "error": NOT_FOUND.format("héllo✓")},
    ),
    (
        "sessions_history",
        {"sessionKey": " a::b "},
        {"status": "error", "error": NOT_FOUND.format("a::b")},
    ),
    (
        "sessions_history",
        {"sessionKey": "11111111-2222-3333-4444-555555555555"},
        {"status": "error", "error": NOT_FOUND.format("11111111-2222-3333-4444-555555555555")},
    ),
    (
        "sessions_history",
        {"sessionKey": "agent:Main:NoSuch"},
        {"status": "error", "error": "No session found: agent:Main:NoSuch"},
    ),
    (
        "sessions_history",
        {"sessionKey": "cron:nosuch"},
        {"status": "error", "error": "No session found: cron:nosuch"},
    ),
    (
        "sessions_history",
        {"sessionKey": "agent:other:nosuch"},
        {"status": "error", "error": 'Unknown agent id "other"'},
    ),
    ("sessions_history", {"sessionKey": "agent:x"}, Thrown(MALFORMED)),
    # sessions_send
    ("sessions_send", {"sessionKey": "nosuch", "message": "hi"}, _send(NOT_FOUND.format("nosuch"))),
    (
        "sessions_send",
        {"sessionKey": "agent:main:nosuch", "message": "hi"},
        _send("No session found: agent:main:nosuch", "agent:main:nosuch"),
    ),
    (
        "sessions_send",
        {"sessionKey": "agent:main:nosuch", "message": "hi", "mode": "steer"},
        _send("No session found: agent:main:nosuch", "agent:main:nosuch"),
    ),
    (
        "sessions_send",
        {"sessionKey": "agent:other:nosuch", "message": "hi"},
        _send('Unknown agent id "other"', "agent:other:nosuch"),
    ),
    ("sessions_send", {"sessionKey": "agent:x", "message": "hi"}, Thrown(MALFORMED)),
    ("sessions_send", {"message": "hi"}, _send("Either sessionKey or label is required")),
    (
        "sessions_send",
        {"label": "nolabel", "message": "hi"},
        _send("No session found with label: nolabel"),
    ),
    (
        "sessions_send",
        {"sessionKey": "agent:main:other", "message": " "},
        Thrown("message required"),
    ),
    (
        "sessions_send",
        {"sessionKey": "agent:main:other", "message": "hi", "mode": "resume", "timeoutSeconds": 5},
        Thrown(
            "mode=resume returns admission only; omit watch and timeoutSeconds or set "
            "timeoutSeconds=0. The task owner delivers completion."
        ),
    ),
    (
        "sessions_send",
        {"sessionKey": "agent:main:other", "message": "hi", "mode": "resume"},
        {
            "status": "error",
            "runId": RUN_ID,
            "sessionKey": "agent:main:other",
            "error": "Task resume requires a currently paused native child; inspect subagents first.",
        },
    ),
    (
        "sessions_send",
        {"sessionKey": "agent:main:room:thread:7", "message": "hi"},
        _send(
            "sessions_send cannot target a thread session for inter-agent coordination. Use "
            "the parent channel session key instead.",
            "agent:main:room:thread:7",
        ),
    ),
    (
        "sessions_send",
        {"sessionKey": "agent:main:main", "message": "hi"},
        _send(
            "sessions_send cannot target the calling session; use your own reply instead",
            "agent:main:main",
        ),
    ),
    # session_status throws
    ("session_status", {"sessionKey": "nope:nope"}, Thrown("Unknown sessionId: nope:nope")),
    ("session_status", {"sessionKey": "nosuch"}, Thrown("Unknown sessionId: nosuch")),
    (
        "session_status",
        {"sessionKey": "agent:main:nosuch"},
        Thrown("Unknown sessionKey: agent:main:nosuch"),
    ),
    (
        "session_status",
        {"sessionKey": "agent:other:main"},
        Thrown("Unknown sessionKey: agent:other:main"),
    ),
    ("session_status", {"sessionKey": "agent:x"}, Thrown(MALFORMED)),
    (
        "session_status",
        {"model": "nosuch/model"},
        Thrown('Unknown provider "nosuch". Use /models to list providers.'),
    ),
    # sessions_spawn: its refusals name the agent asked for as `role`
    (
        "sessions_spawn",
        {"task": "x", "agentId": "nosuch"},
        {
            "status": "forbidden",
            "error": "agentId is not allowed for sessions_spawn (allowed: main)",
            "role": "nosuch",
        },
    ),
    (
        "sessions_spawn",
        {"task": "x", "agentId": "Bad Id"},
        {
            "status": "error",
            "error": 'Invalid agentId "Bad Id". Agent IDs must match [a-z0-9][a-z0-9_-]{0,63}.',
            "role": "Bad Id",
        },
    ),
    (  # OpenClaw's order: the agent before the options, the attachments last
        "sessions_spawn",
        {
            "task": "x",
            "agentId": "Bad Id",
            "completionTarget": "parent",
            "expectsCompletionMessage": False,
        },
        {
            "status": "error",
            "error": 'Invalid agentId "Bad Id". Agent IDs must match [a-z0-9][a-z0-9_-]{0,63}.',
            "role": "Bad Id",
        },
    ),
    (
        "sessions_spawn",
        {"task": "x", "agentId": "nosuch", "attachments": [{"name": "a.txt", "content": "a"}]},
        {
            "status": "forbidden",
            "error": "agentId is not allowed for sessions_spawn (allowed: main)",
            "role": "nosuch",
        },
    ),
    ("sessions_spawn", {"task": "   "}, Thrown("task required")),
    (
        "sessions_spawn",
        {"task": "x", "taskName": "Bad"},
        {
            "status": "error",
            "error": 'Invalid taskName "Bad". Use 1-64 chars matching [a-z][a-z0-9_-]*.',
        },
    ),
    (
        "sessions_spawn",
        {"task": "x", "taskName": "all", "agentId": "nosuch"},
        {
            "status": "error",
            "error": 'Invalid taskName "all". Reserved subagent targets cannot be used as taskName values.',
        },
    ),
    # subagents, agents_wait
    ("subagents", {"action": "cancel"}, Thrown("taskId required")),
    ("subagents", {"action": "cancel", "taskId": "  "}, Thrown("taskId required")),
    ("subagents", {"action": "wait"}, Thrown("taskIds required")),
    ("subagents", {"action": "wait", "taskIds": [" "]}, Thrown("taskIds required")),
    (
        "subagents",
        {"action": "wait", "taskIds": [" nosuch"], "timeoutSeconds": 1},
        {
            "status": "ok",
            "action": "wait",
            "reason": "unavailable",
            "tasks": [],
            "completed": [],
            "attention": [],
            "unavailable": ["nosuch"],
        },
    ),
    (
        "subagents",
        {"action": "cancel", "taskId": "nosuch"},
        {"status": "forbidden", "error": "Task outside session tree."},
    ),
    (
        "agents_wait",
        {"ids": [" ", "  "]},
        Thrown("agents_wait requires at least one non-empty run id."),
    ),
    (
        "agents_wait",
        {"ids": [" nosuch ", "nosuch"], "timeoutSeconds": 1},
        {
            "completed": [],
            "pending": [],
            "errors": [{"runId": "nosuch", "error": "not_found"}],
            "success": False,
        },
    ),
]
"""Under the default config."""

SELF_DENIED: Final = (
    "Session {} visibility is restricted to the current session (tools.sessions.visibility=self)."
)

SELF_CASES: Final[list[Case]] = [
    (
        "sessions_history",
        {"sessionKey": "agent:main:other"},
        {"status": "forbidden", "error": SELF_DENIED.format("history")},
    ),
    # a missing key beyond reach is refused as beyond reach
    (
        "sessions_history",
        {"sessionKey": "agent:main:nosuch"},
        {"status": "forbidden", "error": SELF_DENIED.format("history")},
    ),
    (
        "sessions_send",
        {"sessionKey": "other", "message": "hi"},
        {
            "runId": RUN_ID,
            "status": "forbidden",
            "error": SELF_DENIED.format("send"),
            "sessionKey": "other",
        },
    ),
    ("session_status", {"sessionKey": "agent:main:other"}, Thrown(SELF_DENIED.format("status"))),
    ("session_status", {"sessionKey": "agent:main:nosuch"}, Thrown(SELF_DENIED.format("status"))),
    ("session_status", {"sessionKey": "nosuch"}, Thrown("Unknown sessionId: nosuch")),
]
"""Under `tools.sessions.visibility: self`."""

ANY_AGENT_CASES: Final[list[Case]] = [
    (
        "sessions_spawn",
        {"task": "x", "agentId": "nosuch"},
        {
            "status": "forbidden",
            "error": 'agentId "nosuch" is not in the configured agent registry (allowed: main)',
            "role": "nosuch",
        },
    ),
]
"""Under `agents.defaults.subagents.allowAgents: ["*"]`."""


def chunks(cases: list[Case], size: int = 10) -> list[list[Case]]:
    """`cases` in turns of at most `size` calls (a run makes at most 16 model calls)."""
    return [cases[i : i + size] for i in range(0, len(cases), size)]


def directives(cases: list[Case]) -> str:
    """One message with each case's call as a `local` model directive."""
    return " ".join(f"[[tool:{tool} {json.dumps(args)}]]" for tool, args, _ in cases)


def check(cases: list[Case], results: list[tuple[str, dict[str, Any]]]) -> None:
    """Each case's result (`(tool name, {content, details, isError})`, in call order) is
    what OpenClaw answers."""
    assert [name for name, _ in results] == [tool for tool, _, _ in cases]
    for (tool, args, expected), (_, result) in zip(cases, results, strict=True):
        if isinstance(expected, Thrown):
            assert thrown(result, tool) == expected.message, (tool, args)
            continue
        details = result["details"]
        if expected.get("runId") == RUN_ID:
            uuid.UUID(details["runId"])
            expected = expected | {"runId": details["runId"]}
        assert list(details.items()) == list(expected.items()), (tool, args, details)
        text = json.dumps(expected, indent=2, ensure_ascii=False)  # as JSON.stringify
        assert result["content"][0]["text"] == text, (tool, args)
        # OpenClaw's isToolResultError: an error, success false, or an error status
        failed = bool(expected.get("error")) or expected.get("success") is False
        failed = failed or expected.get("status") in ("error", "forbidden", "timeout")
        assert result["isError"] is failed, (tool, args)
