"""The embedded runtime's session tools (`runtime.tools.SessionsHost`) over its own sessions.

`EmbeddedSessions` answers what the gateway's `actors.GatewaySessions` answers, with the
same payloads (`_session_views`) and the same task book (`_subagent_book`), over a
`SessionsRuntime` (the `EmbeddedRuntime`):

- `sessions_list`, `sessions_history`: the sessions the runtime holds (in memory, and those
  its store lists when it can: `list_sessions`), sanitized; `session_status`: the card;
  `agents_list`: the agents a child may run as. What a session reaches follows
  `tools.sessions.visibility` and `tools.agentToAgent`, as on the gateway.
- `sessions_send`: a turn on the target session (after its running one), waited for at most
  `timeoutSeconds` (default 30; 0: not waited for); the reply comes back inline. Used as
  `async with`, the runtime runs the turn as a task of its own, which goes on after a
  timeout; without it the turn runs inside the call and a timeout stops it. `mode: "notify"`
  queues the message as a system event for the target's next turn (no turn starts).
- `sessions_spawn`: a child session `agent:<id>:subagent:<uuid>` whose row records its
  lineage, running the task as a task of the runtime (only as `async with`; otherwise a tool
  error), at most `agents.defaults.subagents.maxConcurrent` at a time, within
  `maxSpawnDepth` and `maxChildrenPerAgent`; when it ends its result is announced to the
  parent as soon as it has ended, steered into the parent's turn going on, else by a turn
  of its own, unless `expectsCompletionMessage: false`; the children a turn's
  `sessions_yield` waits for are told together in one turn once the last has settled, and
  without a yield two or more children of a parent that is no subagent are told again
  together once all have been (`_yield_batch`). `subagents` (list, wait, cancel),
  `agents_wait` and `sessions_yield` read and stop the book's tasks.

Leaving the runtime cancels the children and announcements still running; opened again on
its store, it tells what was left (`_embedded_recovery`, from what the runs kept beside their
messages: `spawn_note`, the yields' claims).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from ..llm._types import InputProvenance
from ..loop._agent import SteerInbox, now_ms
from ..model._generation import AgentSpec, ModelRuntimeGeneration
from ..sessions._provenance import SUBAGENT_ANNOUNCE, completion_provenance
from ..sessions._sessions import MessageEntry, SessionRow
from ..tools import (
    AgentsWaitParams,
    SessionsHistoryParams,
    SessionsListParams,
    SessionsSendParams,
    SessionsSpawnParams,
    SessionStatusParams,
    SessionsYieldParams,
    SubagentsParams,
    ToolContext,
    ToolError,
)
from ._announce import announce_key, announce_of
from ._run import RunState, TrackedRun
from ._run_notes import SpawnNote, YieldClaim
from ._services import TurnServices
from ._session_calls import (
    history_for,
    list_result_for,
    send_admission,
    send_waited,
    status_for,
)
from ._session_views import (
    AGENTS_WAIT_DEFAULT_S,
    CHILDREN_KEPT,
    RESUME_REFUSED,
    agents_view,
    branch_dicts,
    notify_result,
    notify_text,
    resume_prompt,
    resume_receipt,
    send_error,
    send_outcome,
    send_prompt,
    spawn_admission,
    spawn_receipt,
    subagent_context,
    subagent_model,
    subagent_role,
    subagents_call,
    yield_claim,
)
from ._spawn_options import StagedAttachments, prepare_child, remove_attachments
from ._subagent_book import SpawnedRun, TaskBook
from ._yield_batch import (
    batch_run_id,
    private_replaced,
    settle_message,
    settle_provenance,
    tell,
)

__all__ = ["ChildLink", "EmbeddedSessions", "SessionsRuntime", "TrackedRun"]

log = logging.getLogger("clawlane.embedded")


@attrs.frozen
class ChildLink:
    """A spawned run's tie to its parent (`runtime.agent.TaskLink`)."""

    parentKey: str
    parentAgent: str
    label: str | None = None
    announce: bool = True
    cleanup: str | None = None
    requesterRun: str | None = None
    completionTarget: str | None = None
    """`parent`: told in a private turn of its own, to the session it was spawned from."""
    requesterSessionId: str | None = None
    attachmentsDir: str | None = None
    """Its staged attachments, removed once its end has been told."""


def spawn_note(run: SpawnedRun) -> SpawnNote:
    """What the spawning run's transcript keeps of spawned run `run` (`_run_notes`)."""
    link = run.link
    assert isinstance(link, ChildLink)
    return SpawnNote(
        run_id=run.task_id,
        child_key=run.child_key,
        parent_agent=link.parentAgent,
        label=run.label,
        task=run.asked,
        announce=link.announce,
        cleanup=link.cleanup,
        completion_target=link.completionTarget,
        requester_session=link.requesterSessionId,
        attachments_dir=link.attachmentsDir,
        created_at=run.created_at,
    )


class SessionsRuntime(Protocol):
    """What the session tools need of the embedded runtime. The async methods are
    checkpoints; `start_run` and `start_soon` start tasks in the runtime's nursery."""

    @property
    def generation(self) -> ModelRuntimeGeneration: ...

    services: TurnServices
    """The runtime's services (the agents' `workspace_root`)."""

    def queue_system_event(self, session_key: str, text: str) -> None:
        """Queue `text` for the session's next turn."""
        ...

    async def session_row(self, key: str) -> SessionRow | None:
        """The session's row, or None for a session never used (nor stored)."""
        ...

    async def session_rows(self) -> list[SessionRow]:
        """Every session's row, most recently updated first."""
        ...

    async def session_branch(self, key: str) -> list[MessageEntry]:
        """The session's active branch."""
        ...

    async def update_row(self, key: str, agent_id: str, **changes: Any) -> SessionRow:
        """Change the session's row (made when new) and keep it."""
        ...

    def peek_row(self, key: str) -> SessionRow | None:
        """The row of a session in memory, or None. Not a checkpoint."""
        ...

    def jobs_await_collection(self, key: str) -> bool:
        """Whether a background job of session `key` runs, or ended and no poll returned
        its end (`runtime.tools.ProcessRegistry.awaits_collection`). Not a checkpoint."""
        ...

    def running(self) -> list[RunState]:
        """The runs going on now."""
        ...

    def steering(self, key: str) -> tuple[TrackedRun, SteerInbox] | None:
        """Session `key`'s turn going on and the inbox that steers messages into it (it
        takes no more once the turn has ended), or None."""
        ...

    async def new_run(self, key: str, agent_id: str, run_id: str | None = None) -> TrackedRun:
        """A run of session `key`, not started."""
        ...

    async def run(
        self,
        record: TrackedRun,
        message: str,
        *,
        model: str | None = None,
        timeout_s: float | None = None,
        extra_system_prompt: str | None = None,
        light_context: bool = False,
    ) -> Any:
        """Run `record` with `message` to its end (as `run_turn` does; `light_context`: no
        workspace bootstrap files in its system prompt)."""
        ...

    @property
    def has_tasks(self) -> bool:
        """Whether the runtime runs tasks of its own (it is used as `async with`)."""
        ...

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> bool:
        """Start `fn(*args)` in the runtime's nursery; False when it has none."""
        ...

    async def forget_session(self, key: str) -> None:
        """Drop the session (a child spawned with `cleanup: "delete"`)."""
        ...


class EmbeddedSessions:
    """The session tools' host of an embedded runtime (see the module docstring)."""

    def __init__(self, rt: SessionsRuntime) -> None:
        self.rt = rt
        self.book = TaskBook()
        """The spawned runs, as the tasks of their parents' trees."""
        self.book.on_claim = self._claimed
        self._slots = trio.CapacityLimiter(1)

    # --- reading the runtime's sessions ---------------------------------------------------

    def _active(self) -> dict[str, list[str]]:
        active: dict[str, list[str]] = {}
        for run in self.rt.running():
            active.setdefault(run.session_key, []).append(run.run_id)
        return active

    async def _branch(self, row: SessionRow) -> list[dict[str, Any]]:
        return branch_dicts(await self.rt.session_branch(row.key))

    async def _save(self, row: SessionRow, **changes: Any) -> SessionRow:
        return await self.rt.update_row(row.key, row.agentId, **changes)

    async def _labelled(self, label: str, agent_id: str | None) -> str | None:
        rows = await self.rt.session_rows()
        return next(
            (r.key for r in rows if r.label == label and (not agent_id or r.agentId == agent_id)),
            None,
        )

    # --- sessions_list, sessions_history, session_status, agents_list ---------------------

    async def list_sessions(self, ctx: ToolContext, args: SessionsListParams) -> dict[str, Any]:
        """The runtime's sessions, filtered and paged as the gateway's. A checkpoint."""
        rows = await self.rt.session_rows()
        if args.agentId:
            rows = [r for r in rows if r.agentId == args.agentId.lower()]
        if args.activeMinutes:
            after = now_ms() - args.activeMinutes * 60_000
            rows = [r for r in rows if r.updatedAt >= after]
        gen, root = self.rt.generation, self.rt.services.workspace_root
        return await list_result_for(gen, ctx, args, rows, self._active(), self._branch, root)

    async def history(self, ctx: ToolContext, args: SessionsHistoryParams) -> dict[str, Any]:
        """The session's active branch, bounded and sanitized. A checkpoint."""
        gen = self.rt.generation
        return await history_for(gen, ctx, args, self.rt.session_row, self._branch)

    async def status(self, ctx: ToolContext, args: SessionStatusParams) -> dict[str, Any]:
        """The `/status`-style card; `model` sets the session's model. A checkpoint."""
        return await status_for(self.rt.generation, ctx, args, self.rt.session_row, self._save)

    def agents(self, ctx: ToolContext) -> dict[str, Any]:
        return agents_view(self.rt.generation, ctx.agent_id)

    def subagent_role(self, session_key: str) -> str | None:
        row = self.rt.peek_row(session_key)
        depth = row.spawnDepth if row is not None else None
        return subagent_role(self.rt.generation, session_key, depth)

    # --- sessions_send --------------------------------------------------------------------

    async def send(self, ctx: ToolContext, args: SessionsSendParams) -> dict[str, Any]:
        """Run the target session with the message and wait for its reply. A checkpoint."""
        run_id = str(uuid.uuid4())
        gen = self.rt.generation
        admitted = await send_admission(gen, ctx, args, run_id, self.rt.session_row, self._labelled)
        if isinstance(admitted, dict):
            return admitted
        key, agent_id, timeout = admitted
        if args.mode == "notify":
            self.rt.queue_system_event(key, notify_text(ctx.session_key, args.message))
            return notify_result(key)
        if args.mode in ("resume", None):
            resumed = await self._resume(ctx, args, key, agent_id)
            if resumed is not None:
                return resumed
        return await self._send_run(ctx, args.message, key, agent_id, float(timeout))

    async def _send_run(
        self, ctx: ToolContext, message: str, key: str, agent_id: str, wait_s: float
    ) -> dict[str, Any]:
        record = await self.rt.new_run(key, agent_id)
        prompt = send_prompt(ctx.session_key)
        if not self.rt.has_tasks:  # the turn runs inside this call; the wait stops it
            if wait_s == 0:
                return send_error(
                    record.run_id, "timeoutSeconds 0 needs the runtime opened with async with", key
                )
            await self.rt.run(record, message, extra_system_prompt=prompt, timeout_s=wait_s)
            if record.status == "aborted" and record.abort_reason == "timeout":
                return {
                    "runId": record.run_id,
                    "status": "timeout",
                    "error": f"no reply within {wait_s:g}s; the turn was stopped",
                    "sessionKey": key,
                }
            return send_outcome(record, key)
        self.rt.start_soon(
            functools.partial(self.rt.run, extra_system_prompt=prompt), record, message
        )
        return await send_waited(record, key, wait_s)

    async def _resume(
        self, ctx: ToolContext, args: SessionsSendParams, key: str, agent_id: str
    ) -> dict[str, Any] | None:
        """A child of this session paused by `sessions_yield` `waitFor: "message"` runs the
        message as its task's continuation (not waited for); None for an ordinary send."""
        task = self.book.paused(key)
        if task is None or task.parent_key != ctx.session_key:
            if args.mode != "resume":
                return None
            run_id = str(uuid.uuid4())  # OpenClaw's refused resume, in its key order
            return {"status": "error", "runId": run_id, "sessionKey": key, "error": RESUME_REFUSED}
        record = await self.rt.new_run(key, agent_id)
        prompt = resume_prompt(ctx.session_key)
        if not self.rt.start_soon(self._child_run, record, args.message, prompt, None, None):
            raise ToolError("a task resumes only in a runtime opened with async with")
        self.book.resume(task, record)
        return resume_receipt(record.run_id, task.task_id, key)

    # --- sessions_spawn -------------------------------------------------------------------

    async def spawn(self, ctx: ToolContext, args: SessionsSpawnParams) -> dict[str, Any]:
        """Start the child's run and answer with the receipt, or refuse. A checkpoint."""
        gen = self.rt.generation
        parent = await self.rt.session_row(ctx.session_key)
        admitted = spawn_admission(gen, self.book, ctx, args, parent)
        if isinstance(admitted, dict):
            return admitted
        if not self.rt.has_tasks:
            raise ToolError(
                "sessions_spawn needs the embedded runtime opened with `async with` (its "
                "children run as its tasks)"
            )
        agent, depth = admitted
        options = await self._child_options(args, agent)
        if isinstance(options, dict):
            return options
        cwd, staged = options
        settings = gen.config.agents.defaults.subagents
        self._slots.total_tokens = max(1, settings.maxConcurrent)
        child_key, child_depth = f"agent:{agent.id}:subagent:{uuid.uuid4()}", depth + 1
        title = args.label or args.taskName
        timeout = args.runTimeoutSeconds
        timeout = settings.runTimeoutSeconds if timeout is None else timeout
        model = subagent_model(gen, args)
        await self.rt.update_row(
            child_key,
            agent.id,
            spawnedBy=ctx.session_key,
            parentSessionKey=ctx.session_key,
            spawnDepth=child_depth,
            subagentRole=subagent_role(gen, child_key, child_depth),
            **({"label": title} if title else {}),
            **({"spawnedCwd": str(cwd)} if cwd is not None else {}),
        )
        children = (*((parent.childSessions if parent else None) or ()), child_key)
        await self.rt.update_row(
            ctx.session_key, ctx.agent_id, childSessions=children[-CHILDREN_KEPT:]
        )
        link = ChildLink(
            parentKey=ctx.session_key,
            parentAgent=ctx.agent_id,
            label=title,
            announce=args.expectsCompletionMessage is not False,
            cleanup=args.cleanup,
            requesterRun=ctx.run_id,
            completionTarget=args.completionTarget,
            requesterSessionId=parent.sessionId if parent and args.completionTarget else None,
            attachmentsDir=str(staged.directory)
            if staged is not None and staged.removed_after(args.cleanup)
            else None,
        )
        record = await self.rt.new_run(child_key, agent.id)
        run = SpawnedRun(record, ctx.session_key, child_key, title, link=link, asked=args.task)
        requester = next((r for r in self.rt.running() if r.run_id == ctx.run_id), None)
        if isinstance(requester, TrackedRun):
            run.requester_done = requester.done
            requester.spawns.append(spawn_note(run))  # kept beside its messages
        self.book.add(run)
        context = subagent_context(gen, ctx.session_key, child_depth)
        if staged is not None:
            context = f"{context}\n\n{staged.prompt}"
        light = args.lightContext is True
        self.rt.start_soon(self._child_run, record, args.task, context, model, timeout, light)
        self.rt.start_soon(self._follow, run)
        receipt = staged.receipt if staged is not None else None
        return spawn_receipt(gen, args, child_key, record.run_id, model or agent.primary, receipt)

    async def _child_options(
        self, args: SessionsSpawnParams, agent: AgentSpec
    ) -> tuple[Path | None, StagedAttachments | None] | dict[str, Any]:
        """The child's working directory and staged attachments (`_spawn_options.
        prepare_child`, in its agent's workspace), or the refusal. A checkpoint."""
        if not (args.cwd or "").strip() and not args.attachments:
            return None, None
        workspace = await self.rt.services.workspace_for(agent.id, agent.workspace)
        config = self.rt.generation.config
        return await trio.to_thread.run_sync(prepare_child, config, workspace, args)

    async def _child_run(
        self,
        record: TrackedRun,
        message: str,
        context: str,
        model: str | None,
        limit_s: float | None,
        light: bool = False,
    ) -> None:
        """A subagent's run, in one of the `maxConcurrent` slots (`limit_s`: its timeout;
        `light`: its `lightContext`)."""
        async with self._slots:
            await self.rt.run(
                record,
                message,
                extra_system_prompt=context,
                model=model,
                timeout_s=float(limit_s) if limit_s else None,
                light_context=light,
            )

    @staticmethod
    def closing() -> bool:
        """Never (`_yield_batch.Teller`): leaving the runtime cancels the followers."""
        return False

    async def _follow(self, run: SpawnedRun) -> None:
        """Tell the parent how the child's task ended (`_yield_batch.tell`: its own announce
        once its run has ended for good, then its yield's batch or its wave)."""
        try:
            await tell(self.book, run, self)
        except Exception:
            log.exception("could not announce subagent %s to %s", run.child_key, run.parent_key)

    async def announce(self, run: SpawnedRun) -> None:
        """Tell the parent `run`'s own end (unless nothing is to be told or the parent is
        gone): steered into its turn going on, else a turn of its own."""
        link = run.link
        assert isinstance(link, ChildLink)
        private = link.completionTarget == "parent"  # a turn of its own, to the same parent
        told = link.announce and not run.suppressed
        message = announce_of(run, private=private) if told else None
        parent = await self.rt.session_row(run.parent_key) if message is not None else None
        if private and parent is not None and parent.sessionId != link.requesterSessionId:
            parent = None
        if message is not None and parent is not None:
            run_id = announce_key(run.child_key, run.task_id)
            provenance = completion_provenance(SUBAGENT_ANNOUNCE, run.child_key)
            # a yield of the parent's claiming the child before its turn took this takes
            # the telling over (OpenClaw's completion owned by the yield: its batch tells it)
            if not run.requester_yielded and (
                private  # never steered: a turn of its own
                or not (
                    await self._steer(run.parent_key, message, run_id, provenance)
                    or run.requester_yielded
                )
            ):
                await self._turn(run, run_id, message, provenance)
        run.delivered = True
        await self._retire(run)

    async def settle(self, run: SpawnedRun, batch: list[SpawnedRun]) -> None:
        """Tell the parent the children of `batch` together in a turn of its own (`run`'s
        yield's batch, or its wave), unless nothing is to be told or the parent is gone, or
        (a batch with a private child) is no longer the session that child was spawned
        from."""
        message = settle_message(batch)
        parent = await self.rt.session_row(run.parent_key) if message is not None else None
        if message and parent is not None and not private_replaced(batch, parent.sessionId):
            run_id = batch_run_id(run.link.parentAgent, run.parent_key, batch)
            await self._turn(run, run_id, message, settle_provenance(batch))
        for child in batch:
            child.delivered = True
            await self._retire(child)

    async def _retire(self, run: SpawnedRun) -> None:
        """After `run`'s end was told: its staged attachments go, its session too with
        `cleanup` delete."""
        link = run.link
        directory = link.attachmentsDir if isinstance(link, ChildLink) else None
        if directory:
            await trio.to_thread.run_sync(remove_attachments, Path(directory))
        if link.cleanup == "delete":
            await self.rt.forget_session(run.child_key)

    async def _steer(
        self, key: str, message: str, run_id: str, provenance: InputProvenance
    ) -> bool:
        """Steer `message` into session `key`'s turn going on; True once that turn took it
        (it ended without: False)."""
        going = self.rt.steering(key)
        if going is None or not going[1].offer(message, run_id, provenance):
            return False
        host, inbox = going
        await host.done.wait()
        return run_id in inbox.taken_keys

    async def _turn(
        self, run: SpawnedRun, run_id: str, message: str, provenance: InputProvenance
    ) -> None:
        """A turn of the parent's telling it `message` (a parent that is a subagent paused
        by its yield for its children goes on with it)."""
        record = await self.rt.new_run(run.parent_key, run.link.parentAgent, run_id)
        record.provenance = provenance  # its prompt: not kept, or kept hidden
        waiting = self.book.paused(run.parent_key)
        if waiting is not None:
            self.book.resume(waiting, record)
        self.rt.start_soon(self.rt.run, record, message)

    # --- subagents, agents_wait, sessions_yield -------------------------------------------

    async def subagents(self, ctx: ToolContext, args: SubagentsParams) -> dict[str, Any]:
        return await subagents_call(self.book, ctx, args)

    async def agents_wait(self, ctx: ToolContext, args: AgentsWaitParams) -> dict[str, Any]:
        timeout = AGENTS_WAIT_DEFAULT_S if args.timeoutSeconds is None else args.timeoutSeconds
        return await self.book.agents_wait(ctx.session_key, args.ids, timeout)

    def _claimed(self, caller: str, run_id: str, generation: int, runs: list[SpawnedRun]) -> None:
        """Run `run_id`'s yield claimed `runs`: kept beside its yield (`run_notes`), so the
        runtime opened again on its store still tells them together."""
        record = next((r for r in self.rt.running() if r.run_id == run_id), None)
        if isinstance(record, TrackedRun) and record.session_key == caller:
            record.yield_claim = YieldClaim(generation, tuple(r.task_id for r in runs))

    def yield_turn(self, ctx: ToolContext, args: SessionsYieldParams) -> dict[str, Any]:
        return yield_claim(self.book, ctx, args, self.book.pause, self.rt.jobs_await_collection)

    def stop(self, session_key: str, run_id: str | None = None) -> list[str]:
        """Abort the running subagents of `session_key`'s tree (only those run `run_id`
        spawned, and theirs, when given): they end aborted and announce nothing."""
        stopped = []
        for run in self.book.tree(session_key, run_id):
            run.suppressed = True
            if run.record.abort("stop") or run.paused:
                stopped.append(run.task_id)
            if run.paused:
                run.paused = False
                run.resumed.set()
        return stopped
