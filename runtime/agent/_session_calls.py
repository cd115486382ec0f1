"""What the session tools do the same way on every host, reading the host's sessions
through its callbacks (`RowOf`: a session's row by key; `BranchOf`: a row's active branch
as plain data; the change of a row; a session found by its label): the target a call names
(`target_key`) and whether the caller may reach it (`reach_denial`, over the target's
lineage), `sessions_list`'s page (`list_result_for`), `sessions_history`'s and
`session_status`'s answers (`history_for`, `status_for` with `model_override`) and
`sessions_send`'s checks before it starts anything (`send_admission`) and its answer once
the run started (`send_waited`). What they answer is
made by `_session_views`. The hosts: the gateway's `actors._session_tools`, the embedded
runtime's `_embedded_sessions`. Each call is a checkpoint when it reads; none does I/O of
its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from ..model._generation import GenerationError, ModelRuntimeGeneration
from ..sessions._sessions import SessionKeyError, SessionRow, resolve_session_key
from ..tools import (
    SessionsHistoryParams,
    SessionsListParams,
    SessionsSendParams,
    SessionStatusParams,
    ToolContext,
    ToolError,
)
from ._run import TrackedRun
from ._session_titles import TITLED_ROWS, derived_title
from ._session_views import (
    MISSING_FOR_MODE,
    RELATIONSHIP_UNAVAILABLE,
    RESUME_WAITS,
    SEND_TIMEOUT_DEFAULT_S,
    history_result,
    list_page,
    list_result,
    list_row,
    list_wanted,
    preview,
    recent_messages,
    send_accepted,
    send_error,
    send_outcome,
    status_result,
)
from ._session_visibility import agent_of, denial

__all__ = [
    "BranchOf",
    "RowOf",
    "agent_workspace",
    "history_for",
    "key_shaped",
    "list_result_for",
    "model_override",
    "reach_denial",
    "send_admission",
    "send_waited",
    "status_for",
    "target_key",
]

RowOf = Callable[[str], Awaitable[SessionRow | None]]
"""The host's reading of a session's row by key (None: no such session). A checkpoint."""
BranchOf = Callable[[SessionRow], Awaitable[list[dict[str, Any]]]]
"""The host's reading of a session's active branch, as plain data (`branch_dicts`)."""

MALFORMED_AGENT_KEY = "Malformed agent session key; refusing default-agent resolution."
THREAD_TARGET = (
    "sessions_send cannot target a thread session for inter-agent coordination. Use the "
    "parent channel session key instead."
)
_SESSION_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_KEY_WORDS = frozenset({"main", "global", "unknown", "current"})


def key_shaped(raw: str) -> bool:
    """Whether OpenClaw reads `raw` as a session key (`looksLikeSessionKey`, and not a
    session id): `main`, `current`, ..., `agent:...`, `cron:`/`hook:`/`node:`/`acp:`
    keys and group or channel keys. Anything else it looks up as a key, then as a session
    id, and calls missing `Session not found: <raw> (use the full sessionKey ...)`."""
    text = raw.strip()
    if not text or _SESSION_ID.match(text):
        return False
    lowered = text.lower()
    return (
        text in _KEY_WORDS
        or text.startswith(("agent:", "cron:", "hook:", "node-", "node:"))
        or lowered.startswith("acp:")
        or ":group:" in text
        or ":channel:" in text
    )


def _none(_key: str) -> None:
    return None


def _not_found(raw: str) -> str:
    return f"Session not found: {raw} (use the full sessionKey from sessions_list)"


async def reach_denial(
    gen: ModelRuntimeGeneration,
    ctx: ToolContext,
    action: str,
    row: SessionRow,
    row_of: RowOf,
) -> str | None:
    """Why the caller may not reach `row`'s session for `action` (`_session_visibility`),
    or None; `row_of` finds a session's row, for the target's lineage. A checkpoint."""
    if row.key == ctx.session_key:
        return None
    parents: dict[str, str] = {}
    key = row.key
    current_row: SessionRow | None = row
    for _ in range(16):  # the target's lineage, for `tree` and the owned-child exception
        parent = current_row.spawnedBy if current_row is not None else None
        if parent is None or parent in parents:
            break
        parents[key] = parent
        key = parent
        current_row = await row_of(parent)
    tools = gen.config.tools
    return denial(tools, action, ctx.session_key, ctx.agent_id, row.key, row.agentId, parents.get)


def target_key(ctx: ToolContext, raw: str) -> str:
    """The session key `raw` names, from the calling agent (`current`: the caller's).
    Raises `ToolError` (OpenClaw's words for a malformed `agent:` key)."""
    if raw.strip() == "current":
        return ctx.session_key
    try:
        return resolve_session_key(raw, agent_id=None, default_agent=ctx.agent_id)
    except SessionKeyError as exc:
        if raw.strip().lower().startswith("agent:"):
            raise ToolError(MALFORMED_AGENT_KEY) from exc
        raise ToolError(str(exc)) from exc


async def located(
    gen: ModelRuntimeGeneration, ctx: ToolContext, action: str, raw: str, row_of: RowOf
) -> tuple[str, SessionRow] | dict[str, Any]:
    """The session `raw` names and its row, or OpenClaw's `{status, error}` when there is
    none: for a raw that is not key-shaped (`key_shaped`), `Session not found: <raw> (use
    the full sessionKey from sessions_list)`; for a key, the caller's reach refused
    (`forbidden`, as OpenClaw conceals a missing key beyond reach), an agent not
    configured, else `No session found: <raw>`. clawlane keeps no index of sessions by
    their session id, so a raw session id is looked up as a key only. Raises `ToolError`
    for a malformed `agent:` key. A checkpoint."""
    text = raw.strip()
    if not key_shaped(text):
        try:
            key = resolve_session_key(text, agent_id=None, default_agent=ctx.agent_id)
        except SessionKeyError:
            await trio.lowlevel.checkpoint()
            return {"status": "error", "error": _not_found(text)}
        row = await row_of(key)
        return (key, row) if row is not None else {"status": "error", "error": _not_found(text)}
    key = target_key(ctx, text)
    row = await row_of(key)
    if row is not None:
        return key, row
    agent = agent_of(key, ctx.agent_id)
    tools = gen.config.tools
    refused = denial(tools, action, ctx.session_key, ctx.agent_id, key, agent, _none)
    if refused is not None:
        return {"status": "forbidden", "error": refused}
    if agent not in gen.agents:
        return {"status": "error", "error": f'Unknown agent id "{agent}"'}
    return {"status": "error", "error": f"No session found: {text}"}


def agent_workspace(gen: ModelRuntimeGeneration, agent_id: str, root: Path) -> str:
    """The real path of agent `agent_id`'s workspace (its configured one, else
    `root/<id>`), where its runs work: a subagent session's `spawnedWorkspaceDir`. Reads
    no more of the disk than `os.path.realpath` does."""
    try:
        configured = gen.agent(agent_id).workspace
    except GenerationError:
        configured = None
    return os.path.realpath(Path(configured).expanduser() if configured else root / agent_id)


async def list_result_for(
    gen: ModelRuntimeGeneration,
    ctx: ToolContext,
    args: SessionsListParams,
    rows: list[SessionRow],
    active: dict[str, list[str]],
    branch: BranchOf,
    workspace_root: Path,
) -> dict[str, Any]:
    """`sessions_list`'s payload from the host's `rows` (most recently updated first,
    already within `agentId` and `activeMinutes`), its running runs by session (`active`)
    and `branch(row)`, a session's messages (the latest shown: `recent_messages`, the
    first user message for a derived title): filtered, within the caller's reach, paged,
    with the children, titles and messages asked for; `workspace_root` holds the agents'
    workspaces that are not configured (`agent_workspace`). `relationship` is refused, as
    OpenClaw refuses it without an authenticated requesting user (clawlane knows no user
    profiles). A checkpoint when transcripts are read."""
    if args.relationship is not None:
        return {"status": "error", "tool": "sessions_list", "error": RELATIONSHIP_UNAVAILABLE}
    places: dict[str, str] = {}

    def workspace(row: SessionRow) -> str | None:
        if not row.spawnedBy:
            return None
        if row.agentId not in places:
            places[row.agentId] = agent_workspace(gen, row.agentId, workspace_root)
        return getattr(row, "spawnedCwd", None) or places[row.agentId]

    agents = frozenset(gen.agents)
    rows = [
        r
        for r in rows
        if r.key not in ("global", "unknown") and list_wanted(r, args, active, workspace(r), agents)
    ]
    tools, parents = gen.config.tools, {r.key: r.spawnedBy for r in rows}
    rows = [
        r
        for r in rows
        if denial(tools, "list", ctx.session_key, ctx.agent_id, r.key, r.agentId, parents.get)
        is None
    ]
    children: dict[str, list[str]] = {}
    for row in rows:
        if row.parentSessionKey:
            children.setdefault(row.parentSessionKey, []).append(row.key)
    page, limit = list_page(rows, args)
    sessions = []
    for i, row in enumerate(page):
        agent_dir = places.get(row.agentId) if row.spawnedBy else None
        view = list_row(gen, row, children.get(row.key), active.get(row.key), agent_dir)
        if args.includeDerivedTitles and i < TITLED_ROWS:
            title = derived_title(row) or derived_title(row, await branch(row))
            if title:
                view["derivedTitle"] = title
        if args.messageLimit or args.includeLastMessage:
            messages = await branch(row)
            shown = await trio.to_thread.run_sync(recent_messages, messages, args.messageLimit or 1)
            if args.messageLimit:
                view["messages"] = shown
            if args.includeLastMessage and shown:
                view["lastMessagePreview"] = preview(shown[-1])
        sessions.append(view)
    return list_result(sessions, len(rows), args, limit)


async def history_for(
    gen: ModelRuntimeGeneration,
    ctx: ToolContext,
    args: SessionsHistoryParams,
    row_of: RowOf,
    branch: BranchOf,
) -> dict[str, Any]:
    """`sessions_history`'s payload: the named session's branch (`history_result`), or its
    error when there is no such session or it is beyond the caller's reach. `sessionId`
    needs `messageId` and must be the session's transcript: clawlane keeps no link from a
    session to the transcripts it had before a reset, so only its current one is. A
    checkpoint."""
    if args.sessionId is not None and args.messageId is None:
        return {
            "status": "error",
            "tool": "sessions_history",
            "error": "sessionId requires messageId",
        }
    found = await located(gen, ctx, "history", args.sessionKey, row_of)
    if isinstance(found, dict):
        return found
    key, row = found
    refused = await reach_denial(gen, ctx, "history", row, row_of)
    if refused is not None:
        return {"status": "forbidden", "error": refused}
    if args.sessionId is not None and args.sessionId.strip() != row.sessionId:
        error = "sessionId does not belong to sessionKey"
        return {"status": "error", "tool": "sessions_history", "error": error}
    # OpenClaw's redaction runs many patterns over every text: a long transcript takes
    # seconds, in a worker thread (the event loop goes on meanwhile)
    return await trio.to_thread.run_sync(history_result, key, await branch(row), args)


def model_override(gen: ModelRuntimeGeneration, row: SessionRow, choice: str) -> dict[str, Any]:
    """The row changes `session_status`'s `model: choice` makes: none (`default` or empty),
    else the model it resolves to for the session's agent. Raises `ToolError` (OpenClaw's
    words for a provider no model is configured for; clawlane's for an unknown model of a
    known provider, which OpenClaw may accept from its provider's catalog)."""
    if choice.strip().lower() in ("", "default"):
        return {"modelOverride": None, "providerOverride": None}
    ref = gen.aliases.get(choice.strip(), choice.strip())
    provider, sep, _model = ref.partition("/")
    if sep and provider not in {p for p, _m in gen.models}:
        raise ToolError(f'Unknown provider "{provider}". Use /models to list providers.')
    try:
        resolved = gen.resolve(choice.strip(), agent_id=row.agentId)
    except GenerationError as exc:
        raise ToolError(f"unknown model {choice!r}: {exc}") from exc
    return {"modelOverride": resolved.model_id, "providerOverride": resolved.provider_id}


async def status_for(
    gen: ModelRuntimeGeneration,
    ctx: ToolContext,
    args: SessionStatusParams,
    row_of: RowOf,
    save: Callable[..., Awaitable[SessionRow]],
) -> dict[str, Any]:
    """`session_status`'s payload for the named session (the caller's when none); `model`
    sets the session's model through `save(row, **changes)`, the host's change of a row.
    Raises `ToolError` where OpenClaw's tool throws: the caller's reach refused (checked
    first for a key), `Unknown sessionKey: <raw>` for a missing key, `Unknown sessionId:
    <raw>` for anything else missing (`key_shaped`). A checkpoint."""
    raw = (args.sessionKey or "").strip()
    if not raw:
        key = ctx.session_key
        row = await row_of(key)
    elif key_shaped(raw):
        key = target_key(ctx, raw)
        row = await row_of(key)
        if row is None:
            tools, agent = gen.config.tools, agent_of(key, ctx.agent_id)
            refused = denial(tools, "status", ctx.session_key, ctx.agent_id, key, agent, _none)
            raise ToolError(refused or f"Unknown sessionKey: {raw}")
    else:
        found = await located(gen, ctx, "status", raw, row_of)
        if isinstance(found, dict):
            raise ToolError(f"Unknown sessionId: {raw}")
        key, row = found
    if row is None:
        raise ToolError(f"Unknown sessionKey: {key}")
    refused = await reach_denial(gen, ctx, "status", row, row_of)
    if refused is not None:
        raise ToolError(refused)
    if args.model is not None:
        row = await save(row, **model_override(gen, row, args.model))
    return status_result(gen, key, row, args.model is not None)


async def send_admission(
    gen: ModelRuntimeGeneration,
    ctx: ToolContext,
    args: SessionsSendParams,
    run_id: str,
    row_of: RowOf,
    labelled: Callable[[str, str | None], Awaitable[str | None]],
) -> tuple[str, str, float] | dict[str, Any]:
    """`sessions_send`'s checks before it does anything: the target's key, its agent and
    how long the send waits (`timeoutSeconds`, default 30; 0 for `steer`), or the payload
    that refuses it, in OpenClaw's words and shape (`{runId, status, error}`, and the
    `sessionKey` as given once a key named the target: no such label, agent or session,
    the caller itself waited for, a thread session, beyond the caller's reach, a missing
    session to notify, steer or resume). A configured agent's main session may be missing: the send's run
    makes it, as OpenClaw's does. `labelled(label, agentId)` finds a session by its label.
    Raises `ToolError` where OpenClaw's tool throws (no message, a resume that would wait,
    a malformed `agent:` key). A checkpoint."""
    if not args.message.strip():
        raise ToolError("message required")
    if args.mode == "resume" and (args.watch or (args.timeoutSeconds or 0) > 0):
        raise ToolError(RESUME_WAITS)
    raw = (args.sessionKey or "").strip()
    row: SessionRow | None
    if raw:
        found = await located(gen, ctx, "send", raw, row_of)
        if isinstance(found, dict):
            if not key_shaped(raw):
                return {"runId": run_id, **found}
            if found["status"] == "forbidden" or not _main_of_agent(gen, raw):
                return {"runId": run_id, **found, "sessionKey": raw}
            key, row = target_key(ctx, raw), None
        else:
            key, row = found
    elif args.label:
        labelled_key = await labelled(args.label, args.agentId)
        row = await row_of(labelled_key) if labelled_key is not None else None
        if labelled_key is None or row is None:
            return send_error(run_id, f"No session found with label: {args.label}")
        key = raw = labelled_key
    elif args.agentId:
        try:
            key = raw = f"agent:{gen.agent(args.agentId).id}:main"
        except GenerationError:
            return send_error(
                run_id,
                f'Agent "{args.agentId}" not found. Run openclaw agents list to see '
                "configured agents.",
            )
        row = await row_of(key)
    else:
        return send_error(run_id, "Either sessionKey or label is required")
    timeout = 0 if args.mode == "steer" else args.timeoutSeconds
    timeout = SEND_TIMEOUT_DEFAULT_S if timeout is None else timeout
    if key == ctx.session_key and timeout != 0 and args.mode != "notify":
        return send_error(
            run_id,
            "sessions_send cannot target the calling session; use your own reply instead",
            raw,
        )
    if _thread_of(key):
        return send_error(run_id, THREAD_TARGET, raw)
    agent = row.agentId if row is not None else agent_of(key, ctx.agent_id)
    if row is not None:
        refused = await reach_denial(gen, ctx, "send", row, row_of)
    else:
        refused = denial(gen.config.tools, "send", ctx.session_key, ctx.agent_id, key, agent, _none)
    if refused is not None:
        return {"runId": run_id, "status": "forbidden", "error": refused, "sessionKey": raw}
    if row is None and args.mode in ("steer", "notify", "resume"):
        return send_error(run_id, MISSING_FOR_MODE, raw)
    return key, agent, timeout


def _thread_of(key: str) -> str:
    """The thread id a key ends with (`...:thread:<id>`, OpenClaw's
    parseThreadSessionSuffix), or ''."""
    marker = key.lower().rfind(":thread:")
    return key[marker + len(":thread:") :].strip() if marker >= 0 else ""


def _main_of_agent(gen: ModelRuntimeGeneration, raw: str) -> bool:
    """Whether `raw` is a configured agent's main session key (OpenClaw's send starts it
    when missing)."""
    text = raw.strip().lower()
    return text == "main" or any(text == f"agent:{a}:main" for a in gen.agents)


async def send_waited(record: TrackedRun, key: str, wait_s: float) -> dict[str, Any]:
    """`sessions_send`'s answer for the run `record` it started on session `key`: accepted
    at once when `wait_s` is 0, else its outcome (`send_outcome`: accepted again when the
    wait runs out, the run going on) after waiting for its end at most `wait_s` seconds. A
    checkpoint when it waits."""
    if wait_s == 0:
        return send_accepted(record.run_id, key)
    with trio.move_on_after(wait_s):
        await record.done.wait()
    return send_outcome(record, key)
