"""Subagents as OpenClaw runs them: `sessions_spawn`, its limits, and the announce back.

`Subagents.spawn` makes a child session `agent:<agentId>:subagent:<uuid>` whose row records
its lineage (`spawnedBy` / `parentSessionKey`, `spawnDepth`, `subagentRole`; the parent's
row lists it in `childSessions`: what `sessions.list` shows and the Control UI's session
tree follows, as OpenClaw's) and runs the task there on the `subagent` global lane
(its slots: `agents.defaults.subagents.maxConcurrent`), in the child's own transcript. It
answers at once with OpenClaw's receipt (`status: accepted`, `childSessionKey`, `runId`).
The call's options are carried out as OpenClaw's (`runtime.agent._spawn_options`): `cwd`
(the child row's `spawnedCwd`, its tools' directory), `lightContext` (a lightweight-bootstrap
run), `completionTarget: "parent"` (a private run of the parent's own, never steered) and
`attachments` (staged for the child, removed once its end is told).
When the child's run ends, its result is announced to the parent as OpenClaw does (unless
the call set `expectsCompletionMessage: false`): steered into a run of the parent's going on
(the spawning one, most often), else a separate followup run on the parent's session whose
message carries the result. The children a turn's `sessions_yield` waits for are told
together instead, in one continuation run once the last of them has settled; without a
yield, once two or more children of a parent that is no subagent have been announced, they
are told again together in one settle run (`runtime.agent._yield_batch`, `Subagents` is its
`Teller`). Their prompts carry OpenClaw's input
provenance (`runtime.sessions._provenance`): an announce's is given to the model and not
kept in the parent's transcript, a continuation's is kept with `display: false`; no history
shows either.
A yield's claim is kept in the parent's transcript beside the yield (`runtime.agent.
run_notes`, `YieldClaim`), so that after a restart the children it still owes are told in
one continuation as before (`adopt`), not one by one; children told on their own whose wave
no settle run in the journal told are settled together after a restart too.
A child whose run ends with `sessions_yield` is not done: its task waits for a continuation
(its own children's announce, or with `waitFor: "message"` its parent's `sessions_send`)
and is announced once, with the result of the run that ends it.

Limits, with OpenClaw's keys under `agents.defaults.subagents` and its refusals (a
`forbidden` result the model sees): `maxSpawnDepth` (a session at that depth spawns no
more), `maxChildrenPerAgent` (active children per session), `allowAgents` (the agents a
child may run as besides the requester's own).
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import trio

from runtime.agent import (
    CHILDREN_KEPT,
    SpawnedRun,
    StagedAttachments,
    TaskBook,
    YieldClaim,
    agents_view,
    announce_key,
    announce_of,
    announce_task,
    batch_children,
    batch_run_id,
    prepare_child,
    private_replaced,
    remove_attachments,
    settle_message,
    settle_provenance,
    settled_children,
    spawn_admission,
    spawn_receipt,
    subagent_context,
    subagent_model,
    take_waves,
    tell,
    yield_claims,
    yielded,
)
from runtime.llm import InputProvenance
from runtime.loop import now_ms
from runtime.model import AgentSpec
from runtime.protocol import ClawlaneError
from runtime.sessions import SUBAGENT_ANNOUNCE, MessageEntry, SessionRow, completion_provenance
from runtime.tools import SessionsSpawnParams, ToolContext

from ._admission import Admission
from ._errors import ActorError
from ._recovery import RecoveredRun, recall_run
from ._supervisor import Supervisor
from .runs import RunRecord
from .session import RunRequest
from .store import INTERRUPTED, SpawnLink

__all__ = ["Subagents", "submit_run"]

log = logging.getLogger("clawlane.subagents")

ANNOUNCE_SUFFIX: Final = ":announce"
ANNOUNCE_RETRY_S: Final = (15.0, 300.0)
"""OpenClaw's retries of an announce the parent's session refused (its queue full, the store
unavailable): the first after 15 s, each next twice as long, at most 300 s, a fifth more at
random, until `ANNOUNCE_EXPIRY_S` has passed."""
ANNOUNCE_EXPIRY_S: Final = 1800.0
"""When OpenClaw gives a child's completion up (its hard expiry)."""
SETTLE_RETRY_S: Final = (30.0, 120.0)
"""OpenClaw's retries of a settle run (three attempts in all)."""


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
    run_id: str | None = None,
    spawn: SpawnLink | None = None,
    provenance: InputProvenance | None = None,
    mode: str = "followup",
    wanted: Callable[[], bool] | None = None,
    light_context: bool = False,
) -> RunRecord:
    """Queue a followup run on session `key` (created when new) on global lane `lane`: the
    one way these tools start a run. No idempotency key; the run is journaled as accepted
    like a client's (a restart reports it failed or runs it again), with `spawn` for a
    subagent's run; `provenance` marks its user message (a child's completion); `mode`
    `steer` steers it into a run of the session that is going on instead; `wanted`: the
    run ends unrun (`dropped`) when it says no as it reaches the lane or is left over by
    the run it was steered into (`RunRequest.wanted`); `light_context`: no workspace
    bootstrap files in its system prompt. A checkpoint. Raises `GatewayError`,
    `ActorError`."""
    if sup.session_gate is not None:
        await sup.session_gate(key)  # in a cluster: the session moves to this node
    actor = await sup.session(key, agent_id)
    assert actor.row is not None
    record = RunRecord(
        run_id=run_id or str(uuid.uuid4()),
        session_key=key,
        session_id=actor.row.sessionId,
        agent_id=agent_id,
        accepted_at=now_ms(),
        provenance=provenance,
    )
    request = RunRequest(
        record=record,
        message=message,
        lane=lane,
        origin=origin,
        timeout_s=timeout_s,
        model_ref=model_ref,
        extra_system_prompt=extra_system_prompt,
        spawn=spawn,
        wanted=wanted,
        light_context=light_context,
    )
    admission = Admission(sup, kind="agent", run_id=record.run_id, dedupe=False)
    try:
        await admission.admit(actor, request, mode, writes_row=False)
    except BaseException as exc:
        admission.refuse(exc)
        raise
    return record


def announce_run_id(child_key: str, task_id: str) -> str:
    """The run id of the announce of task `task_id` of session `child_key`: OpenClaw's
    idempotency key of it (`announce:v1:<child key>:<task id>`; one per task: a restart
    that finds it in the journal knows the announce was handed over, `announced_task`)."""
    return announce_key(child_key, task_id)


def announced_task(run_id: str) -> str | None:
    """The task whose announce run `run_id` is (`announce_run_id`, or `<task>:announce` as
    journals written before OpenClaw's key was taken name it); None for another run."""
    if run_id.endswith(ANNOUNCE_SUFFIX):
        return run_id.removesuffix(ANNOUNCE_SUFFIX) or None
    return announce_task(run_id)


class Subagents:
    """Spawns subagent runs and announces their results (see the module docstring)."""

    def __init__(self, sup: Supervisor, nursery: trio.Nursery) -> None:
        self.sup = sup
        self._nursery = nursery
        self.book = TaskBook()
        """The spawned runs, as the tasks of their parents' trees."""
        self.book.on_claim = self._claimed

    def _settings(self) -> Any:
        return self.sup.generation.config.agents.defaults.subagents

    def agents_view(self, requester: str) -> dict[str, Any]:
        """`agents_list`: the agents a child of `requester` may run as, requester first."""
        return agents_view(self.sup.generation, requester)

    async def spawn(
        self, ctx: ToolContext, args: SessionsSpawnParams, parent: SessionRow | None
    ) -> dict[str, Any]:
        """Start the child's run and answer with the receipt, or refuse. A checkpoint."""
        gen = self.sup.generation
        admitted = spawn_admission(gen, self.book, ctx, args, parent)
        if isinstance(admitted, dict):
            return admitted
        agent, depth = admitted
        options = await self._child_options(args, agent)
        if isinstance(options, dict):
            return options
        cwd, staged = options
        settings = self._settings()
        child_key = f"agent:{agent.id}:subagent:{uuid.uuid4()}"
        child_depth = depth + 1
        lane = self.sup.lanes["subagent"]
        if lane.slots.total_tokens != settings.maxConcurrent:
            lane.slots.total_tokens = settings.maxConcurrent
        title = args.label or args.taskName
        timeout = args.runTimeoutSeconds
        timeout = settings.runTimeoutSeconds if timeout is None else timeout
        model_ref = subagent_model(gen, args)
        role = "orchestrator" if child_depth < settings.maxSpawnDepth else "leaf"
        try:
            actor = await self.sup.session(child_key, agent.id)
            await actor.save_row(
                spawnedBy=ctx.session_key,
                parentSessionKey=ctx.session_key,
                spawnDepth=child_depth,
                subagentRole=role,
                **({"label": title} if title else {}),
                **({"spawnedCwd": str(cwd)} if cwd is not None else {}),
            )
            await self._adopt(ctx, child_key)
            announce = args.expectsCompletionMessage is not False
            link = SpawnLink(
                parentKey=ctx.session_key,
                parentAgent=ctx.agent_id,
                label=title,
                announce=announce,
                cleanup=args.cleanup,
                requesterRun=ctx.run_id,
                completionTarget=args.completionTarget,
                requesterSessionId=parent.sessionId if parent and args.completionTarget else None,
                attachmentsDir=str(staged.directory)
                if staged is not None and staged.removed_after(args.cleanup)
                else None,
            )
            context = subagent_context(gen, ctx.session_key, child_depth)
            record = await submit_run(
                self.sup,
                child_key,
                agent.id,
                args.task,
                lane="subagent",
                origin="subagent",
                timeout_s=float(timeout) or None,
                model_ref=model_ref,
                extra_system_prompt=f"{context}\n\n{staged.prompt}" if staged else context,
                spawn=link,
                light_context=args.lightContext is True,
            )
        except (ClawlaneError, ActorError) as exc:
            if staged is not None:
                await trio.to_thread.run_sync(remove_attachments, staged.directory)
            return {"status": "error", "error": f"the subagent could not start: {exc}"}
        requester = self.sup.registry.get(ctx.run_id)
        run = SpawnedRun(record, ctx.session_key, child_key, title, link=link, asked=args.task)
        run.requester_done = requester.done if requester is not None else None
        self.book.add(run)
        self._nursery.start_soon(self._follow, run)
        receipt = staged.receipt if staged is not None else None
        return spawn_receipt(
            gen, args, child_key, record.run_id, model_ref or agent.primary, receipt
        )

    async def _child_options(
        self, args: SessionsSpawnParams, agent: AgentSpec
    ) -> tuple[Path | None, StagedAttachments | None] | dict[str, Any]:
        """The child's working directory and staged attachments (`runtime.agent.
        prepare_child`), or the refusal. A checkpoint."""
        if not (args.cwd or "").strip() and not args.attachments:
            return None, None
        workspace = await self.sup.workspace_for(agent.id, agent.workspace)
        config = self.sup.generation.config
        return await trio.to_thread.run_sync(prepare_child, config, workspace, args)

    async def _adopt(self, ctx: ToolContext, child_key: str) -> None:
        """Record the child in its parent's row (`childSessions`, the latest 20)."""
        parent = await self.sup.session(ctx.session_key, ctx.agent_id)
        if parent.row is None:
            return
        children = (*(parent.row.childSessions or ()), child_key)[-CHILDREN_KEPT:]
        await parent.save_row(childSessions=children)

    async def _parent_exists(self, key: str) -> bool:
        if any(actor.key == key for actor in self.sup.sessions()):
            return True
        return await self.sup.store.get_session(key) is not None

    def closing(self) -> bool:
        """The gateway is stopping: a restart tells what is left (`adopt`)."""
        return self.sup.closing

    async def _follow(self, run: SpawnedRun) -> None:
        """Tell the parent how the child's task ended (`runtime.agent.tell`: its own
        announce once its run has ended for good, then its yield's batch or its wave).
        Never raises but `Cancelled`."""
        try:
            await tell(self.book, run, self)
        except (ClawlaneError, ActorError) as exc:
            log.warning(
                "could not announce subagent %s to %s: %s", run.child_key, run.parent_key, exc
            )
        except Exception:
            log.exception("could not announce subagent %s to %s", run.child_key, run.parent_key)

    async def announce(self, run: SpawnedRun) -> None:
        """Tell the parent `run`'s own end (unless nothing is to be told or the parent is
        gone): steered into a run of the parent's that is going on, else a run of its
        own."""
        link = self.journal_link(run)
        private = link.completionTarget == "parent"  # its own run, to the same parent only
        told = link.announce and not run.suppressed and (not private or await self._same(run))
        message = announce_of(run, private=private) if told else None
        if message is not None:
            await self._tell_parent(
                run,
                message,
                run_id=announce_run_id(run.child_key, run.task_id),
                provenance=completion_provenance(SUBAGENT_ANNOUNCE, run.child_key),
                mode="followup" if private else "steer",
                # a yield of the parent's claiming the child before its run took this
                # takes the telling over (OpenClaw's completion owned by the yield)
                wanted=lambda: not run.requester_yielded,
                retry_s=_announce_delays(),
            )
        run.delivered = True
        await self._retire(run)

    async def _tell_parent(
        self,
        run: SpawnedRun,
        message: str,
        *,
        run_id: str,
        provenance: InputProvenance,
        mode: str = "followup",
        wanted: Callable[[], bool] | None = None,
        retry_s: Iterable[float] = SETTLE_RETRY_S,
    ) -> None:
        """A run of `message` on `run`'s parent (`mode` steer: into its run going on; ended
        unrun when `wanted` says no, `submit_run`), unless the parent is gone (deleted
        meanwhile: the telling must not bring it back). Refused (the parent's queue full,
        the store unavailable), it is tried again after each delay of `retry_s` in turn,
        while the gateway runs and no run `run_id` was made; then the refusal is raised."""
        delays = iter(retry_s)
        while await self._parent_exists(run.parent_key):
            try:
                record = await submit_run(
                    self.sup,
                    run.parent_key,
                    run.link.parentAgent,
                    message,
                    lane="subagent" if ":subagent:" in run.parent_key else "main",
                    origin="subagent-announce",
                    run_id=run_id,
                    provenance=provenance,
                    mode=mode,
                    wanted=wanted,
                )
            except (ClawlaneError, ActorError) as exc:
                delay = next(delays, None)
                if delay is None or self.closing() or self.sup.registry.get(run_id) is not None:
                    raise
                log.info("telling %s of %s again in %.1f s: %s", run.parent_key, run_id, delay, exc)
                await trio.sleep(delay)
                continue
            self._resume_parent(run, record)
            return

    async def settle(self, run: SpawnedRun, batch: list[SpawnedRun]) -> None:
        """Tell the parent the children of `batch` together (`run`'s yield's batch, or its
        wave), unless nothing is to be told or the parent is gone, or (a batch with a
        private child) is no longer the session that child was spawned from."""
        message = settle_message(batch)
        if message is not None and private_replaced(batch, await self._session_id(run)):
            message = None  # OpenClaw's private requester session replaced: told to no one
        if message is not None:
            await self._tell_parent(
                run,
                message,
                run_id=batch_run_id(run.link.parentAgent, run.parent_key, batch),
                provenance=settle_provenance(batch),
            )
        for child in batch:
            child.delivered = True
            await self._retire(child)

    async def _retire(self, run: SpawnedRun) -> None:
        """After `run`'s end was told: its staged attachments go, its session too with
        `cleanup` delete."""
        link = self.journal_link(run)
        if link.attachmentsDir:
            await trio.to_thread.run_sync(remove_attachments, Path(link.attachmentsDir))
        if link.cleanup == "delete":
            await self.sup.forget_session(run.child_key)

    async def _same(self, run: SpawnedRun) -> bool:
        """`run`'s parent is still the session that spawned it (OpenClaw's private
        completion goes to that requester session only, not to one reset meanwhile)."""
        found = await self._session_id(run)
        return found is not None and found == self.journal_link(run).requesterSessionId

    async def _session_id(self, run: SpawnedRun) -> str | None:
        """The id of `run`'s parent session now (None: gone)."""
        actor = self.sup.peek_session(run.parent_key)
        row = actor.row if actor is not None else await self.sup.store.get_session(run.parent_key)
        return row.sessionId if row is not None else None

    def _resume_parent(self, run: SpawnedRun, record: RunRecord) -> None:
        """A parent that is a subagent paused by its yield for its children goes on with
        `record` (not when `record` was steered into a run of it)."""
        steered = record.status == "running" and record.started_at is None
        waiting = self.book.paused(run.parent_key)
        if waiting is not None and not steered and not record.ended:  # (ended: not wanted)
            self.resume(waiting, record)

    # --- sessions_yield waitFor message, and its continuation -----------------------------

    def pause(self, child_key: str, run_id: str) -> bool:
        """Subagent `child_key`'s run `run_id` yields for a continuation: its task waits
        (no announce) until `resume` (a `sessions_send` continuation; for a subagent that
        yielded for its own children, their announce). False when that run is no task of
        this gateway's."""
        return self.book.pause(child_key, run_id)

    def paused_task(self, child_key: str) -> SpawnedRun | None:
        """The task of subagent session `child_key` paused for a continuation, if any."""
        return self.book.paused(child_key)

    @staticmethod
    def journal_link(run: SpawnedRun) -> SpawnLink:
        """The task's journaled link (every task of this gateway's book carries one)."""
        assert isinstance(run.link, SpawnLink)
        return run.link

    def resume(self, run: SpawnedRun, record: RunRecord) -> None:
        """Run `record` (a continuation sent to the paused child) carries `run`'s task on:
        the task's result, and its announce, are that run's (unless it yields again)."""
        self.book.resume(run, record)

    # --- stopping a tree, and a restart ---------------------------------------------------

    def stop(self, session_key: str, run_id: str | None = None) -> list[str]:
        """Abort the running subagents of `session_key`'s tree (only those run `run_id`
        spawned, and theirs, when given), as OpenClaw's cascade stop: they end aborted and
        announce nothing. Returns their task ids. Not a checkpoint."""
        stopped = []
        for run in self.book.tree(session_key, run_id):
            run.suppressed = True
            if run.record.ended and not run.paused:
                continue
            actor = self.sup.peek_session(run.child_key)
            aborted = actor.abort(run.task_id, "stop") if actor is not None else []
            if aborted or run.record.abort("stop") or run.paused:
                stopped.append(run.task_id)
            if run.paused:
                run.paused = False
                run.resumed.set()
        return stopped

    def _claimed(self, caller: str, run_id: str, generation: int, runs: list[SpawnedRun]) -> None:
        """Run `run_id`'s yield claimed `runs`: its transcript keeps them beside the yield
        (`runtime.agent.run_notes`), for a restart to tell them together still."""
        record = self.sup.registry.get(run_id)
        if record is not None and record.session_key == caller:
            record.yield_claim = YieldClaim(generation, tuple(r.task_id for r in runs))

    def adopt(self, recovered: Sequence[RecoveredRun]) -> int:
        """After a restart: the subagent runs the journal knew join the book, and those
        whose end the parent never heard of (interrupted: reported failed or running again;
        stopped by the shutdown; ended before their announce was handed over) are followed
        and announced as usual, those a yield claimed together (`_restore_claims`). Those
        told on their own whose wave no settle run told yet wait for it again, and their
        waves are settled (`_resettle`): a settle run the journal has (started, or
        interrupted) counts its children told, so none is settled twice. Returns how many
        are followed."""
        made = [r for r in recovered if r.interrupted or r.record.started_at is not None]
        handed = {  # the tasks whose announces ran, or will (one refused at the shutdown,
            task  # or dropped as a yield took its telling over, did not)
            for r in made
            if (task := announced_task(r.record.run_id)) is not None
            and r.record.abort_reason != "dropped"
        }
        # and the children a yield's continuation told; with a wave's, told together
        handed |= {child for r in made for child in batch_children(r.record.run_id)}
        together = {child for r in made for child in settled_children(r.record.run_id)}
        owed: list[SpawnedRun] = []
        told: list[SpawnedRun] = []
        for item in recovered:
            link, rec = item.spawn, item.record
            if link is None:
                continue
            run = SpawnedRun(rec, link.parentKey, rec.session_key, link.label, link=link)
            run.created_at = rec.accepted_at  # its place in its parent's waves
            due = _owed(item) or yielded(rec)  # a yielded one waits for its continuation
            run.delivered = run.settled = not due or rec.run_id in handed
            run.waved = rec.run_id in together
            run.suppressed = rec.status == "aborted" and rec.abort_reason == "stop"
            self.book.add(run)
            if not run.delivered:
                owed.append(run)
            elif not run.waved:
                told.append(run)
        if owed or told:
            self._nursery.start_soon(self._restore_claims, owed, told)
        return len(owed)

    async def _restore_claims(self, owed: list[SpawnedRun], told: list[SpawnedRun]) -> None:
        """Before following the restored runs `owed`: those a yield claimed before the
        restart (its parent's transcript keeps the claim, `runtime.agent.yield_claims`)
        are its batch again, a continuation already in that transcript counts them told,
        and members the book lost are recalled from the journal. Then the runs `told` on
        their own that no yield claimed wait for their waves, which are settled. Never
        raises but `Cancelled`."""
        for parent in dict.fromkeys(r.parent_key for r in [*owed, *told]):
            try:
                await self._restore_parent(parent)
            except (ClawlaneError, ActorError) as exc:
                log.warning("could not read the yields of %s after a restart: %s", parent, exc)
        for run in told:
            run.ready = not run.requester_yielded and not run.paused
        for run in owed:
            if not run.delivered:
                self._nursery.start_soon(self._follow, run)
        self._resettle(dict.fromkeys(r.parent_key for r in told))

    def _resettle(self, parents: Iterable[str]) -> None:
        """Settle the waves of `parents` and their ancestors that are due now (as
        `runtime.agent.tell` does after a child's telling), each in a task of its own."""
        seen: set[str] = set()
        for parent in parents:
            key: str | None = parent
            while key is not None and key not in seen:
                seen.add(key)
                for wave in take_waves(self.book, key):
                    self._nursery.start_soon(self._settle_again, wave)
                key = self.book.parent_of(key)

    async def _settle_again(self, wave: list[SpawnedRun]) -> None:
        """`settle` for a wave a restart rebuilt, unless the journal has a run of its id
        (made meanwhile: in a cluster, another node's, not yet ended when this node read
        the journal). Never raises but `Cancelled`."""
        run = wave[0]
        try:
            made = await self.sup.store.load_run(
                batch_run_id(run.link.parentAgent, run.parent_key, wave)
            )
            if made is not None:
                for child in wave:
                    child.delivered = True
                return
            await self.settle(run, wave)
        except (ClawlaneError, ActorError) as exc:
            log.warning("could not settle the subagents of %s: %s", run.parent_key, exc)
        except Exception:
            log.exception("could not settle the subagents of %s", run.parent_key)

    async def _restore_parent(self, parent: str) -> None:
        row = await self.sup.store.get_session(parent)
        if row is None:
            return
        entries = await self.sup.store.load_entries(row.sessionId)
        claims = yield_claims(entries)
        keys = (e.idempotencyKey for e in entries if isinstance(e, MessageEntry))
        told = {  # the children of the continuations it ran (their prompts are kept)
            child for key in keys if key for child in batch_children(key.removesuffix(":user"))
        }
        for child_id, (requester, claim) in claims.items():
            run = self.book.get(child_id) or await self._recall(child_id)
            if run is None or run.requester_run != requester:
                continue
            self.book.restore_claim(run, claim.generation)
            if child_id in told:
                run.settled = run.batched = run.delivered = True

    async def _recall(self, run_id: str) -> SpawnedRun | None:
        """A claimed child the restart did not restore (ended long before it): back in the
        book, ended, from the journal (None when the journal no longer has it)."""
        found = await recall_run(self.sup, run_id, restore=False)
        if not isinstance(found, RecoveredRun) or found.spawn is None:
            return None
        link, rec = found.spawn, found.record
        run = SpawnedRun(rec, link.parentKey, rec.session_key, link.label, link=link)
        run.settled = True
        self.book.add(run)
        return run


def _announce_delays() -> Iterator[float]:
    """The delays of an announce's retries (`ANNOUNCE_RETRY_S`, `ANNOUNCE_EXPIRY_S`)."""
    delay, most = ANNOUNCE_RETRY_S
    spent = 0.0
    while spent + delay <= ANNOUNCE_EXPIRY_S:
        yield delay * (1 + random.random() * 0.2)
        spent += delay
        delay = min(delay * 2, most)


def _owed(item: RecoveredRun) -> bool:
    """Whether a restored subagent run's end is still to be announced, had the journal no
    announce of it: interrupted, stopped by the shutdown, or ended by itself (an abort
    `stop` was a parent's or the `subagents` tool's, which announce or not themselves; a
    run paused by `sessions_yield` waits for its continuation)."""
    rec = item.record
    if item.interrupted or rec.error == INTERRUPTED:
        return True
    if rec.status == "aborted":
        return rec.abort_reason == "shutdown"
    return not yielded(rec)
