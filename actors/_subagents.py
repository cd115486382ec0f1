"""Subagents as OpenClaw runs them: `sessions_spawn`, its limits, and the announce back.

`Subagents.spawn` makes a child session `agent:<agentId>:subagent:<uuid>` whose row records
its lineage (`spawnedBy` / `parentSessionKey`, `spawnDepth`, `subagentRole`; the parent's
row lists it in `childSessions`: what `sessions.list` shows and the Control UI's session
tree follows, as OpenClaw's) and runs the task there on the `subagent` global lane
(its slots: `agents.defaults.subagents.maxConcurrent`), in the child's own transcript. It
answers at once with OpenClaw's receipt (`status: accepted`, `childSessionKey`, `runId`).
When the child's run ends, its result is announced to the parent as OpenClaw does: a
separate followup run on the parent's session whose message carries the result (unless the
call set `expectsCompletionMessage: false`); a parent still running gets it after that run.

Limits, with OpenClaw's keys under `agents.defaults.subagents` and its refusals (a
`forbidden` result the model sees): `maxSpawnDepth` (a session at that depth spawns no
more), `maxChildrenPerAgent` (active children per session), `allowAgents` (the agents a
child may run as besides the requester's own).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Final

import trio

from runtime.loop import now_ms
from runtime.model import GenerationError
from runtime.protocol import ClawlaneError
from runtime.sessions import SessionRow
from runtime.tools import SessionsSpawnParams, ToolContext, ToolError

from ._admission import Admission
from ._errors import ActorError
from ._subagent_tasks import SpawnedRun, TaskBook, reply_text
from ._supervisor import Supervisor
from .runs import RunRecord
from .session import RunRequest

__all__ = ["Subagents", "announce_message", "submit_run"]

log = logging.getLogger("clawlane.subagents")

ANNOUNCE_HEAD: Final = (
    "[Subagent Result] A subagent you spawned has finished. Check its result against what "
    "was asked before treating the task as done; reply NO_REPLY if nothing more is owed."
)
_LEAF_NOTE: Final = "You may not spawn further subagents."
CHILDREN_KEPT: Final = 20
RECEIPT_NOTE: Final = (
    "The child's final reply comes back to this session as a completion message. Carry on "
    "with independent work and wait for every required child's completion before your final "
    "answer; do not poll. If a completion arrives after your final answer, reply only NO_REPLY."
)
QUIET_NOTE: Final = "No completion message will come back: check on the child with subagents."


def announce_message(record: RunRecord, child_key: str, title: str | None) -> str:
    """The parent's announce message for the child's ended run `record`."""
    if record.status == "ok":
        outcome = "completed successfully"
    elif record.status == "aborted":
        outcome = f"was aborted ({record.abort_reason or 'aborted'})"
    else:
        outcome = f"failed: {record.error or 'error'}"
    lines = [ANNOUNCE_HEAD, ""]
    if title:
        lines.append(f"Task: {title}")
    lines += [
        f"Child session: {child_key} (run {record.run_id})",
        f"Status: {outcome}",
        "Result:",
        reply_text(record) or "(no output)",
    ]
    return "\n".join(lines)


async def submit_run(
    sup: Supervisor,
    key: str,
    agent_id: str,
    message: str,
    *,
    lane: str,
    origin: str,
    timeout_s: float | None = None,
    model_ref: str | None = None,
    extra_system_prompt: str | None = None,
) -> RunRecord:
    """Queue a followup run on session `key` (created when new) on global lane `lane`: the
    one way these tools start a run (no idempotency key, no journal row: the caller keeps
    its own account). A checkpoint. Raises `GatewayError`, `ActorError`."""
    if sup.session_gate is not None:
        await sup.session_gate(key)  # in a cluster: the session moves to this node
    actor = await sup.session(key, agent_id)
    assert actor.row is not None
    record = RunRecord(
        run_id=str(uuid.uuid4()),
        session_key=key,
        session_id=actor.row.sessionId,
        agent_id=agent_id,
        accepted_at=now_ms(),
    )
    request = RunRequest(
        record=record,
        message=message,
        lane=lane,
        origin=origin,
        timeout_s=timeout_s,
        model_ref=model_ref,
        extra_system_prompt=extra_system_prompt,
    )
    admission = Admission(sup, kind="agent", run_id=record.run_id, dedupe=False)
    await admission.admit(actor, request, "followup", writes_row=False, journal=False)
    return record


def _agent_allowed(requester: str, target: str, allow: list[str] | None) -> bool:
    if target == requester:
        return True
    entries = [a.strip().lower() for a in allow or () if a.strip()]
    return "*" in entries or target in entries


class Subagents:
    """Spawns subagent runs and announces their results (see the module docstring)."""

    def __init__(self, sup: Supervisor, nursery: trio.Nursery) -> None:
        self.sup = sup
        self._nursery = nursery
        self.book = TaskBook()
        """The spawned runs, as the tasks of their parents' trees."""

    def _settings(self) -> Any:
        return self.sup.generation.config.agents.defaults.subagents

    def agents_view(self, requester: str) -> dict[str, Any]:
        """`agents_list`: the agents a child of `requester` may run as, requester first."""
        gen = self.sup.generation
        allow = self._settings().allowAgents
        allow_any = any(a.strip() == "*" for a in allow or ())
        names = {e.id.lower(): e.name for e in gen.config.agents.entries if e.name}
        others = sorted(a for a in gen.agents if a != requester)
        ids = [requester, *(a for a in others if _agent_allowed(requester, a, allow))]
        agents = []
        for agent_id in ids:
            spec = gen.agents.get(agent_id)
            entry: dict[str, Any] = {"id": agent_id, "configured": spec is not None}
            if agent_id in names:
                entry["name"] = names[agent_id]
            if spec is not None:
                entry["model"] = spec.primary
                entry["agentRuntime"] = {"id": "openclaw", "source": "implicit"}
            agents.append(entry)
        return {"requester": requester, "allowAny": allow_any, "agents": agents}

    def _refusal(self, ctx: ToolContext, depth: int) -> str | None:
        settings = self._settings()
        if depth >= settings.maxSpawnDepth:
            return (
                f"sessions_spawn is not allowed at this depth (current depth: {depth}, max: "
                f"{settings.maxSpawnDepth}; agents.defaults.subagents.maxSpawnDepth)."
            )
        running = self.book.pending(ctx.session_key)
        if len(running) >= settings.maxChildrenPerAgent:
            return (
                "sessions_spawn has reached max active children for this session "
                f"({len(running)}/{settings.maxChildrenPerAgent}; "
                "agents.defaults.subagents.maxChildrenPerAgent)."
            )
        return None

    async def spawn(
        self, ctx: ToolContext, args: SessionsSpawnParams, parent: SessionRow | None
    ) -> dict[str, Any]:
        """Start the child's run and answer with the receipt, or refuse. A checkpoint."""
        if not args.task.strip():
            raise ToolError("task required")
        if args.attachments:
            return {
                "status": "forbidden",
                "error": "attachments are disabled for sessions_spawn (enable "
                "tools.sessions_spawn.attachments.enabled)",
            }
        depth = (parent.spawnDepth or 0) if parent is not None else 0
        refused = self._refusal(ctx, depth)
        if refused is not None:
            return {"status": "forbidden", "error": refused}
        settings = self._settings()
        try:
            agent = self.sup.generation.agent(args.agentId or ctx.agent_id)
        except GenerationError as exc:
            return {"status": "error", "error": str(exc)}
        if not _agent_allowed(ctx.agent_id, agent.id, settings.allowAgents):
            allowed = ", ".join(settings.allowAgents or ()) or "none"
            return {
                "status": "forbidden",
                "error": f"agentId is not allowed for sessions_spawn (allowed: {allowed})",
            }
        child_key = f"agent:{agent.id}:subagent:{uuid.uuid4()}"
        child_depth = depth + 1
        lane = self.sup.lanes["subagent"]
        if lane.slots.total_tokens != settings.maxConcurrent:
            lane.slots.total_tokens = settings.maxConcurrent
        title = args.label or args.taskName
        timeout = args.runTimeoutSeconds
        timeout = settings.runTimeoutSeconds if timeout is None else timeout
        model_ref = args.model or _model(settings.model)
        role = "orchestrator" if child_depth < settings.maxSpawnDepth else "leaf"
        try:
            actor = await self.sup.session(child_key, agent.id)
            await actor.save_row(
                spawnedBy=ctx.session_key,
                parentSessionKey=ctx.session_key,
                spawnDepth=child_depth,
                subagentRole=role,
                **({"label": title} if title else {}),
            )
            await self._adopt(ctx, child_key)
            record = await submit_run(
                self.sup,
                child_key,
                agent.id,
                args.task,
                lane="subagent",
                origin="subagent",
                timeout_s=float(timeout) or None,
                model_ref=model_ref,
                extra_system_prompt=self._context(ctx, child_depth),
            )
        except (ClawlaneError, ActorError) as exc:
            return {"status": "error", "error": f"the subagent could not start: {exc}"}
        self.book.add(SpawnedRun(record, ctx.session_key, child_key, title))
        announce = args.expectsCompletionMessage is not False
        self._nursery.start_soon(
            self._follow, ctx.session_key, ctx.agent_id, child_key, record, title, announce, args
        )
        return {
            "status": "accepted",
            "childSessionKey": child_key,
            "runId": record.run_id,
            "mode": "run",
            "expectsCompletionMessage": announce,
            "context": "isolated",
            **({"taskName": args.taskName} if args.taskName else {}),
            "note": RECEIPT_NOTE if announce else QUIET_NOTE,
            **self._resolved(model_ref or agent.primary),
        }

    async def _adopt(self, ctx: ToolContext, child_key: str) -> None:
        """Record the child in its parent's row (`childSessions`, the latest 20)."""
        parent = await self.sup.session(ctx.session_key, ctx.agent_id)
        if parent.row is None:
            return
        children = (*(parent.row.childSessions or ()), child_key)[-CHILDREN_KEPT:]
        await parent.save_row(childSessions=children)

    def _resolved(self, ref: str) -> dict[str, Any]:
        ref = self.sup.generation.aliases.get(ref, ref)
        provider, _, _model_id = ref.partition("/")
        return {"resolvedModel": ref, "resolvedProvider": provider, "modelApplied": True}

    def _context(self, ctx: ToolContext, depth: int) -> str:
        limit = self._settings().maxSpawnDepth
        lines = [
            f"[Subagent Context] You are running as a subagent (depth {depth}/{limit}), "
            f"spawned by session {ctx.session_key}. Complete the task in your message; your "
            "final reply is announced back to that session."
        ]
        if depth >= limit:
            lines.append(_LEAF_NOTE)
        return "\n".join(lines)

    async def _parent_exists(self, key: str) -> bool:
        if any(actor.key == key for actor in self.sup.sessions()):
            return True
        return await self.sup.store.get_session(key) is not None

    async def _follow(
        self,
        parent_key: str,
        parent_agent: str,
        child_key: str,
        record: RunRecord,
        title: str | None,
        announce: bool,
        args: SessionsSpawnParams,
    ) -> None:
        """Wait for the child's run; announce its result to the parent. Never raises but
        `Cancelled`."""
        await record.done.wait()
        try:
            if announce and not await self._parent_exists(parent_key):
                announce = False  # deleted meanwhile: the announce must not bring it back
            if announce:
                parent_lane = "subagent" if ":subagent:" in parent_key else "main"
                await submit_run(
                    self.sup,
                    parent_key,
                    parent_agent,
                    announce_message(record, child_key, title),
                    lane=parent_lane,
                    origin="subagent-announce",
                )
            if args.cleanup == "delete":
                await self.sup.forget_session(child_key)
        except (ClawlaneError, ActorError) as exc:
            log.warning("could not announce subagent %s to %s: %s", child_key, parent_key, exc)
        except Exception:
            log.exception("could not announce subagent %s to %s", child_key, parent_key)


def _model(configured: Any) -> str | None:
    if isinstance(configured, str):
        return configured or None
    primary = getattr(configured, "primary", None)
    return primary if isinstance(primary, str) else None
