"""The gateway's side of OpenClaw's session tools (`runtime.tools.SessionsHost`).

`GatewaySessions` answers `sessions_list`, `sessions_history`, `sessions_send`,
`session_status` and `agents_list` from the supervisor's sessions, and hands
`sessions_spawn` to its `Subagents` (`actors._subagents`). `open_session_tools(sup)` makes
one, gives it to the supervisor's turns (`TurnServices.sessions`) and owns the tasks that
announce a subagent's result, cancelled when it exits.

What a session may reach follows `tools.sessions.visibility` and `tools.agentToAgent`
(`actors._session_visibility`; by default every session, across agents too). A run
`sessions_send` starts goes on the target's lane as a followup run on the `nested` global
lane, so a sender holding a `main` slot never waits for its own slot; the sender waits for
it at most `timeoutSeconds`, and the run goes on when the wait ends. `mode: "notify"` starts
no run: the message waits as a system event for the target's next turn; a send to a child
of the caller paused by `sessions_yield` (no mode, or `resume`) continues its task.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from runtime.agent import (
    AGENTS_WAIT_DEFAULT_S,
    RESUME_REFUSED,
    branch_dicts,
    history_for,
    list_result_for,
    notify_result,
    notify_text,
    resume_prompt,
    resume_receipt,
    send_admission,
    send_error,
    send_prompt,
    send_waited,
    status_for,
    subagent_role,
    subagents_call,
    yield_claim,
)
from runtime.loop import now_ms
from runtime.sessions import (
    SessionRow,
    branch_messages,
)
from runtime.tools import (
    AgentsWaitParams,
    SessionsHistoryParams,
    SessionsListParams,
    SessionsSendParams,
    SessionsSpawnParams,
    SessionStatusParams,
    SessionsYieldParams,
    SubagentsParams,
    ToolContext,
)

from ._recovery import RecoveredRun
from ._subagents import Subagents, submit_run
from ._supervisor import Supervisor, open_supervisor
from .heartbeat import open_heartbeats

__all__ = [
    "GatewaySessions",
    "adopt_subagents",
    "open_gateway_supervisor",
    "open_session_tools",
    "stop_subagents",
]

log = logging.getLogger("clawlane.session_tools")


class GatewaySessions:
    """The session tools' host on a gateway (see the module docstring)."""

    def __init__(self, sup: Supervisor, nursery: trio.Nursery) -> None:
        self.sup = sup
        self.spawner = Subagents(sup, nursery)

    # --- reading the supervisor's sessions ------------------------------------------------

    async def _row(self, key: str) -> SessionRow | None:
        actor = next((a for a in self.sup.sessions() if a.key == key), None)
        if actor is not None and actor.row is not None:
            return actor.row
        return await self.sup.store.get_session(key)

    async def _branch(self, row: SessionRow) -> list[dict[str, Any]]:
        entries = await self.sup.store.load_entries(row.sessionId)
        return branch_dicts(branch_messages(entries))

    async def _save(self, row: SessionRow, **changes: Any) -> SessionRow:
        actor = await self.sup.session(row.key, row.agentId)
        return await actor.save_row(**changes)

    async def _labelled(self, label: str, agent_id: str | None) -> str | None:
        rows = await self.sup.store.list_sessions(agent_id=agent_id)
        return next((r.key for r in rows if r.label == label), None)

    # --- sessions_list, sessions_history, session_status ------------------------------------

    async def list_sessions(self, ctx: ToolContext, args: SessionsListParams) -> dict[str, Any]:
        """Rows most recently updated first, filtered and paged as OpenClaw's. A checkpoint."""
        after = now_ms() - args.activeMinutes * 60_000 if args.activeMinutes else None
        rows = await self.sup.store.list_sessions(
            limit=None, agent_id=args.agentId, updated_after_ms=after
        )
        active: dict[str, list[str]] = {}
        for rec in self.sup.registry.active():
            active.setdefault(rec.session_key, []).append(rec.run_id)
        root = self.sup.services.workspace_root
        gen = self.sup.generation
        return await list_result_for(gen, ctx, args, rows, active, self._branch, root)

    async def history(self, ctx: ToolContext, args: SessionsHistoryParams) -> dict[str, Any]:
        """The session's active branch, newest `limit` (after skipping `offset` from the
        end), sanitized (`runtime.tools.sanitize_history`). A checkpoint."""
        return await history_for(self.sup.generation, ctx, args, self._row, self._branch)

    async def status(self, ctx: ToolContext, args: SessionStatusParams) -> dict[str, Any]:
        """A `/status`-style card: model, tokens, context use, estimated cost. A checkpoint."""
        return await status_for(self.sup.generation, ctx, args, self._row, self._save)

    # --- sessions_send ----------------------------------------------------------------------

    async def send(self, ctx: ToolContext, args: SessionsSendParams) -> dict[str, Any]:
        """Run the target session with the message and wait for its reply (a configured
        agent's missing main session is made by its run). A checkpoint."""
        run_id = str(uuid.uuid4())
        gen = self.sup.generation
        admitted = await send_admission(gen, ctx, args, run_id, self._row, self._labelled)
        if isinstance(admitted, dict):
            return admitted
        key, agent_id, timeout = admitted
        if args.mode == "notify":
            return self._notify(ctx, args, key, run_id)
        if args.mode in ("resume", None):
            resumed = await self._resume(ctx, args, key, agent_id)
            if resumed is not None:
                return resumed
        record = await submit_run(
            self.sup,
            key,
            agent_id,
            args.message,
            lane="nested",
            origin="sessions_send",
            extra_system_prompt=send_prompt(ctx.session_key),
        )
        return await send_waited(record, key, timeout)

    def _notify(
        self, ctx: ToolContext, args: SessionsSendParams, key: str, run_id: str
    ) -> dict[str, Any]:
        """OpenClaw's `notify`: the message is queued as a system event for the target's
        next turn (no turn starts; kept in this process only), through the turns' system
        event queue (`services.system_events`: `enqueue(key, text)`); refused without one."""
        queue = getattr(self.sup.services, "system_events", None)
        if queue is None:
            return send_error(run_id, "mode=notify needs the gateway's system events", key)
        queue.enqueue(key, notify_text(ctx.session_key, args.message))
        return notify_result(key)

    async def _resume(
        self, ctx: ToolContext, args: SessionsSendParams, key: str, agent_id: str
    ) -> dict[str, Any] | None:
        """OpenClaw's task resume: a child of this session paused by `sessions_yield`
        `waitFor: "message"` runs `args.message` as its task's continuation (the task keeps
        its id, and announces its result once, to its parent); the send does not wait.
        None for an ordinary send (no such task, and `mode` not `resume`)."""
        task = self.spawner.paused_task(key)
        if task is None or task.parent_key != ctx.session_key:
            if args.mode != "resume":
                return None
            run_id = str(uuid.uuid4())  # OpenClaw's refused resume, in its key order
            return {"status": "error", "runId": run_id, "sessionKey": key, "error": RESUME_REFUSED}
        record = await submit_run(
            self.sup,
            key,
            agent_id,
            args.message,
            lane="subagent",
            origin="sessions_send",
            extra_system_prompt=resume_prompt(ctx.session_key),
            spawn=self.spawner.journal_link(task),
        )
        self.spawner.resume(task, record)
        return resume_receipt(record.run_id, task.task_id, key)

    # --- agents_list, sessions_spawn --------------------------------------------------------

    def agents(self, ctx: ToolContext) -> dict[str, Any]:
        """The agents `sessions_spawn` may run as from this session (the requester's first)."""
        return self.spawner.agents_view(ctx.agent_id)

    async def spawn(self, ctx: ToolContext, args: SessionsSpawnParams) -> dict[str, Any]:
        return await self.spawner.spawn(ctx, args, await self._row(ctx.session_key))

    def subagent_role(self, session_key: str) -> str | None:
        """A subagent session's role now: `leaf` at `maxSpawnDepth`, else `orchestrator`."""
        if ":subagent:" not in session_key:
            return None
        actor = self.sup.peek_session(session_key)
        row = actor.row if actor is not None else None
        return subagent_role(self.sup.generation, session_key, row.spawnDepth if row else None)

    # --- subagents, agents_wait, sessions_yield (`actors._subagent_tasks`) -----------------

    async def subagents(self, ctx: ToolContext, args: SubagentsParams) -> dict[str, Any]:
        """`list` (the default), `wait` or `cancel` this session tree's subagent runs."""
        return await subagents_call(self.spawner.book, ctx, args)

    async def agents_wait(self, ctx: ToolContext, args: AgentsWaitParams) -> dict[str, Any]:
        """The listed spawned runs' results, waiting up to `timeoutSeconds` (default 30)."""
        timeout = AGENTS_WAIT_DEFAULT_S if args.timeoutSeconds is None else args.timeoutSeconds
        return await self.spawner.book.agents_wait(ctx.session_key, args.ids, timeout)

    def yield_turn(self, ctx: ToolContext, args: SessionsYieldParams) -> dict[str, Any]:
        """OpenClaw's claim: `yielded` when this run spawned children that announce back,
        or a subagent waits for a continuation (`waitFor: "message"`: its run pauses, its
        parent hears of it after the continuation); `already_pending` when only earlier
        turns' children are pending; else its error (a subagent's background job running or
        not collected refuses it). The tool then ends the turn."""
        processes = self.sup.processes
        return yield_claim(
            self.spawner.book,
            ctx,
            args,
            self.spawner.pause,
            lambda key: processes is not None and processes.awaits_collection(key),
        )


def stop_subagents(sup: Supervisor, key: str, run_id: str | None = None) -> list[str]:
    """OpenClaw's cascade stop: abort the running subagents session `key` spawned (only
    those its run `run_id` spawned, when given) and their descendants; they announce
    nothing. Their task ids (none without the session tools). Not a checkpoint."""
    host = sup.services.sessions
    return host.spawner.stop(key, run_id) if isinstance(host, GatewaySessions) else []


def adopt_subagents(sup: Supervisor, recovered: Sequence[RecoveredRun]) -> int:
    """After `recover_runs`: the subagent runs the journal knew join the session tools'
    book, and those whose parent was never told how they ended are announced (see
    `Subagents.adopt`). Returns how many. Not a checkpoint."""
    host = sup.services.sessions
    return host.spawner.adopt(recovered) if isinstance(host, GatewaySessions) else 0


@asynccontextmanager
async def open_session_tools(sup: Supervisor) -> AsyncIterator[GatewaySessions]:
    """Offer the session tools to `sup`'s runs until exit; pending announcements are
    cancelled then (the gateway is stopping)."""
    async with trio.open_nursery() as nursery:
        host = GatewaySessions(sup, nursery)
        sup.services.sessions = host
        try:
            yield host
        finally:
            sup.services.sessions = None
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_gateway_supervisor(**kwargs: Any) -> AsyncIterator[Supervisor]:
    """`open_supervisor(**kwargs)` with the session tools offered to its runs from the
    start (`open_session_tools`) and its agents' heartbeats (`open_heartbeats`), as the
    gateway runs it. The arguments are let go once the supervisor holds them: a startup
    generation kept here would never retire."""
    async with open_supervisor(**kwargs) as sup, open_session_tools(sup), open_heartbeats(sup):
        kwargs.clear()
        yield sup
