"""The tool schemas clawlane offers a model, against the ones OpenClaw 2026.9.6 offers.

What a provider receives from a real gateway on loopback (an OpenAI-style provider records the
request: every tool with `tools.toolSearch: false`, the Tool Search controls with it unset) is
compared with OpenClaw's own, recorded in tests/data/openclaw-tool-schemas-2026.9.6.json (how:
its `source`). Every difference is named in `KNOWN` with the reason it stays; a difference not
named there fails, and so does a named one that went away (take it out of `KNOWN`), so the
schemas cannot drift from OpenClaw's unnoticed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from runtime.heartbeat import HeartbeatRespondTool, HeartbeatResponses
from runtime.tools import tool_spec
from tests.conftest import open_client, running_gateway
from tests.e2e.test_tool_search import provider_config
from tests.runtime.llm._sse_server import Script, open_sse_server
from tests.runtime.llm._streams import chat_text

RECORD = Path(__file__).parents[1] / "data" / "openclaw-tool-schemas-2026.9.6.json"

KNOWN: dict[str, tuple[str, tuple[str, ...]]] = {
    "agents_wait": (
        "the description is clawlane's: it has no collector spawns (collect=true) to name",
        ("description",),
    ),
    "ask_user": (
        "OpenClaw's offered schema leaks TypeBox's internal `~optional` marker; the description is reworded",
        (
            ".parameters.properties.questions.items.properties.multiSelect.~optional: only theirs",
            "description",
        ),
    ),
    "automations": (
        "gatewayUrl/gatewayToken (which gateway OpenClaw's tool calls, with which token) are not taken: the tool runs inside the gateway it acts on, so they could only name another gateway it cannot reach (an argument naming one is ignored, as any other argument the schema does not name); the description is OpenClaw's less what clawlane's scheduler refuses or has not (condition triggers, script payloads, stream schedules, paced loops, failure alerts, channels, owner-wide management, detached current runs)",
        (
            ".parameters.properties.gatewayToken: only theirs",
            ".parameters.properties.gatewayUrl: only theirs",
            "description",
        ),
    ),
    "exec": (
        "clawlane's extensions (an argv list for command, `timeout` as the older name of timeoutSeconds, env names checked, bounds on yieldMs and timeoutSeconds) and its own descriptions; unknown fields refused; no 120-character cap on title",
        (
            ".parameters.additionalProperties: only ours",
            '.parameters.properties.ask.description: "off|on-miss|always: can only ask more." != "Requests stricter approvals under tools.exec.mode and host policy; channel-orig',
            ".parameters.properties.command.anyOf: only ours",
            '.parameters.properties.command.description: "Shell command (run with /bin/sh -c), or an argv list." != "Shell command."',
            ".parameters.properties.command.type: only theirs",
            ".parameters.properties.env.additionalProperties: only ours",
            ".parameters.properties.env.patternProperties: only theirs",
            ".parameters.properties.env.propertyNames: only ours",
            '.parameters.properties.host.description: "Omit/auto: the gateway host." != "Omit/auto: inherit configured host."',
            ".parameters.properties.timeout: only ours",
            ".parameters.properties.timeoutSeconds.minimum: only ours",
            '.parameters.properties.title.description: "A short title for the command." != "Every call: short purpose; never claim success. No secrets."',
            ".parameters.properties.title.maxLength: only theirs",
            '.parameters.properties.workdir.description: "Omit/empty string: the workspace." != "Omit/empty string: default; whitespace-only invalid."',
            ".parameters.properties.yieldMs.minimum: only ours",
            ".parameters.properties: order",
            "description",
        ),
    ),
    "gateway": (
        "update.run does not exist here, and the description says so",
        ("description",),
    ),
    "heartbeat_respond": (
        "in runtime/heartbeat, changed by others as this was written: scratch has no description",
        (".parameters.properties.scratch.description: only theirs",),
    ),
    "memory_get": (
        "the description names only what clawlane's memory has (no wiki corpus, no session transcripts)",
        ("description",),
    ),
    "memory_search": (
        "the description names only what clawlane's memory has (no semantic, wiki or session search)",
        ("description",),
    ),
    "message": (
        "clawlane's message replies in the conversation ({text}); OpenClaw's is its channel send tool (action, message, target, media, ...), and clawlane has no channels",
        (
            ".parameters.additionalProperties: only ours",
            ".parameters.properties.accountId: only theirs",
            ".parameters.properties.action: only theirs",
            ".parameters.properties.asDocument: only theirs",
            ".parameters.properties.asVoice: only theirs",
            ".parameters.properties.attachments: only theirs",
            ".parameters.properties.buffer: only theirs",
            ".parameters.properties.caption: only theirs",
            ".parameters.properties.channel: only theirs",
            ".parameters.properties.contentType: only theirs",
            ".parameters.properties.dryRun: only theirs",
            ".parameters.properties.effect: only theirs",
            ".parameters.properties.effectId: only theirs",
            ".parameters.properties.filename: only theirs",
            ".parameters.properties.final: only theirs",
            ".parameters.properties.forceDocument: only theirs",
            ".parameters.properties.gatewayToken: only theirs",
            ".parameters.properties.gatewayUrl: only theirs",
            ".parameters.properties.gifPlayback: only theirs",
            ".parameters.properties.media: only theirs",
            ".parameters.properties.message: only theirs",
            ".parameters.properties.mimeType: only theirs",
            ".parameters.properties.quoteText: only theirs",
            ".parameters.properties.replyTo: only theirs",
            ".parameters.properties.silent: only theirs",
            ".parameters.properties.target: only theirs",
            ".parameters.properties.targets: only theirs",
            ".parameters.properties.text: only ours",
            ".parameters.properties.threadId: only theirs",
            ".parameters.properties.timeoutMs: only theirs",
            ".parameters.properties.voiceId: only theirs",
            ".parameters.properties.voiceProvider: only theirs",
            ".parameters.properties.voiceText: only theirs",
            ".parameters.required: ['text'] != ['action']",
            "description",
        ),
    ),
    "progress_card": (
        "the description is reworded",
        ("description",),
    ),
    "sessions_history": (
        "no pendingBefore: OpenClaw pages with it the pendingInputs of a session (the inputs agent and sessions_send admitted durably, each with an id, a state queued/cancelled/interrupted and a before cursor, kept apart from the transcript); clawlane keeps no such record (a busy session's queued inputs live in its lane's memory), so sessions_history has no pendingInputs page for it to take; the description is clawlane's",
        (
            ".parameters.properties.pendingBefore: only theirs",
            "description",
        ),
    ),
    "sessions_list": (
        "clawlane's spawnedBy filter is kept (OpenClaw's tool sets spawnedBy itself only for a spawn-restricted caller); the description is clawlane's",
        (
            ".parameters.properties.spawnedBy: only ours",
            "description",
        ),
    ),
    "sessions_send": (
        "clawlane's own description: OpenClaw's promises behaviour not checked against clawlane's (an omitted mode continuing a paused native child task, thread chats, watch notices)",
        ("description",),
    ),
    "sessions_spawn": (
        "no visible sessions (visible, group, projectId, projectGitUrl, worktree*: clawlane has no sidebar sessions, project registry or managed clones/worktrees), no placement (no cloud profiles), no sandbox (clawlane runs no sandboxes, so inherit/require would promise what it cannot check), no swarm collectors (collect, outputSchema, fastMode, groupId: OpenClaw offers them only with tools.swarm.enabled, and clawlane has no collector scheduling, structured_output tool or fast mode); descriptions of runtime, mode, cleanup and thinking name visible sessions clawlane does not offer; the description is clawlane's",
        (
            ".parameters.properties.cleanup.description: only theirs",
            ".parameters.properties.collect: only theirs",
            ".parameters.properties.fastMode: only theirs",
            ".parameters.properties.group: only theirs",
            ".parameters.properties.groupId: only theirs",
            ".parameters.properties.mode.description: only theirs",
            ".parameters.properties.outputSchema: only theirs",
            ".parameters.properties.placement: only theirs",
            ".parameters.properties.projectGitUrl: only theirs",
            ".parameters.properties.projectId: only theirs",
            ".parameters.properties.runtime.description: only theirs",
            ".parameters.properties.sandbox: only theirs",
            ".parameters.properties.thinking.description: only theirs",
            ".parameters.properties.visible: only theirs",
            ".parameters.properties.worktree: only theirs",
            ".parameters.properties.worktreeBaseRef: only theirs",
            ".parameters.properties.worktreeName: only theirs",
            "description",
        ),
    ),
    "tool_search": (
        "query, limit and queries accept null but are shown without their null branch (as every optional field is); the description adds the default limit",
        (
            ".parameters.properties.limit.anyOf: only theirs",
            ".parameters.properties.limit.minimum: only ours",
            ".parameters.properties.limit.type: only ours",
            ".parameters.properties.queries.anyOf: only theirs",
            ".parameters.properties.queries.items: only ours",
            ".parameters.properties.queries.maxItems: only ours",
            ".parameters.properties.queries.type: only ours",
            ".parameters.properties.query.anyOf: only theirs",
            ".parameters.properties.query.type: only ours",
            "description",
        ),
    ),
}
"""tool -> (why its differences stay, the differences as `differences` words them)."""


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Where two schemas differ: a key one has and the other not, a value, the order of a
    list or of an object's properties (`required` is a set)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for key in sorted(set(ours) | set(theirs)):
            where = f"{path}.{key}"
            if key not in theirs:
                out.append(f"{where}: only ours")
            elif key not in ours:
                out.append(f"{where}: only theirs")
            elif key == "required" and isinstance(ours[key], list):
                if sorted(ours[key]) != sorted(theirs[key]):
                    out.append(f"{where}: {sorted(ours[key])} != {sorted(theirs[key])}")
            else:
                out += differences(ours[key], theirs[key], where)
        if path.endswith(".properties") or path == ".parameters.properties":
            shared = [k for k in ours if k in theirs]
            if shared != [k for k in theirs if k in ours]:
                out.append(f"{path}: order")
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        if all(not isinstance(v, dict | list) for v in ours + theirs):
            return [] if ours == theirs else [f"{path}: {ours} != {theirs}"]
        return [
            d
            for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
            for d in differences(a, b, f"{path}[{i}]")
        ]
    return (
        [] if ours == theirs else [f"{path}: {json.dumps(ours)[:80]} != {json.dumps(theirs)[:80]}"]
    )


async def _offered(tmp_path: Path, **tools: Any) -> dict[str, dict[str, Any]]:
    async with open_sse_server() as server:
        server.push(Script(chunks=chat_text(["ok"])))
        async with running_gateway(tmp_path, provider_config(server, **tools)) as gw:
            with trio.fail_after(20):
                async with open_client(gw) as client:
                    await client.request(
                        "agent", {"message": "hi", "idempotencyKey": "schemas"}, expect_final=True
                    )
    (body,) = (r.json() for r in server.requests)
    return {t["function"]["name"]: t["function"] for t in body["tools"]}


async def test_the_offered_tool_schemas_are_openclaws_but_for_the_known_differences(
    tmp_path: Path,
) -> None:
    theirs = json.loads(RECORD.read_text())["tools"]
    ours = await _offered(tmp_path / "all", toolSearch=False)
    controls = await _offered(tmp_path / "search")
    for name in ("tool_search", "tool_describe", "tool_call"):
        ours[name] = controls[name]
    # Offered to a heartbeat run only.
    respond = tool_spec(HeartbeatRespondTool(HeartbeatResponses()))
    ours[respond.name] = {"description": respond.description, "parameters": respond.parameters}
    found: dict[str, list[str]] = {}
    for name, tool in sorted(ours.items()):
        assert name in theirs, f"{name}: OpenClaw has no such tool (or it is not recorded)"
        found[name] = [
            *differences(tool["parameters"], theirs[name]["parameters"], ".parameters"),
            *(["description"] if tool["description"] != theirs[name]["description"] else []),
        ]
    known = {name: set(diffs) for name, (_why, diffs) in KNOWN.items()}
    unexplained = {n: sorted(set(ds) - known.get(n, set())) for n, ds in found.items()}
    gone = {n: sorted(ds - set(found.get(n, ()))) for n, ds in known.items()}
    assert {n: ds for n, ds in unexplained.items() if ds} == {}, "new differences"
    assert {n: ds for n, ds in gone.items() if ds} == {}, "fixed: take them out of KNOWN"
