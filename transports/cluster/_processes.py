"""Background jobs across a cluster's nodes: a job runs on the node whose run started it
(its session's owner then) and stays there, in that node's `runtime.tools.ProcessRegistry`
(the one home of its jobs); `ClusterProcesses`, the registry's `ProcessPeers`, lets `process`
reach it from whichever node serves the session now.

- **Known on every node.** Each node tells the others which jobs it lists (a `{"proc":
  "listed"}` notice with the job's `list` entry when it goes to the background and when it
  ends, `"unlisted"` when it is forgotten) and greets a node it has not seen with all of
  them; every node keeps the others' (`MAX_KNOWN` at most, ended ones until their keep time
  is over): where each job runs, and what it was when its node went. Each node also keeps
  them in the cluster's job records (`_job_records`: a document in its PostgreSQL), so that
  a node joining after another went learns that node's jobs there and lists them lost.
- **Asked where they run.** `process list` asks every other live node that can answer for
  the session's jobs (an `"ask"` and its `"answer"`, `LIST_WAIT_S` at most; a node that does
  not answer in time is shown as last told). A node can answer once it told this node of
  jobs (any job notice: every node greets the nodes it finds, with its jobs or none), until
  it lets an ask go unanswered (then it is not asked for `SILENT_S`, or before its next
  notice): so a node of an earlier version, which knows nothing of jobs, never holds a call
  up, and one that stopped answering at most one wait in `SILENT_S`. The other actions on
  a job not here go to the node it is known on (else to every live node that can answer:
  the one that has it answers) and run there as they would there (`runtime.tools.act_here`),
  a poll's wait included (`ACT_WAIT_S` more at most); a cancelled call is cancelled there
  too. The list lines of a job elsewhere say where (`[on <node>]`); the entries keep
  OpenClaw's shape.
- **Lost with their node.** A job of a node that is gone (its record expired: closed,
  crashed, cut off) or that started again since (a restart kills its jobs) is listed as ended
  `failed` with `exitReason` `node-lost` (`[node <id> lost]` on its line; one that had ended
  keeps its end); `poll` and `log` say the node is gone, with no output; `kill` and the input
  actions find nothing running; `clear` and `remove` forget it on every node. A call waiting
  on a node that goes is answered so at once, never hangs. A node that comes back under the
  same process (its record had expired while it was cut off) has its jobs again. A lost job
  that was to tell its end is told to its session once, by the first live node (by id), when
  its node stayed gone two lease TTLs (as the reaper judges a node): `Exec finished
  (node=<id> id=<job>, node lost)`, the shape of OpenClaw's completion of a command run on
  another node, which its heartbeat reads as a completion.
- **Ends told to the session's owner.** A background job's end (`Supervisor.exec_ended`: its
  system event and the `exec-event` wake) is queued on the node owning its session, found as
  `wake` and `system-event` find it (`SessionLeases.owner`, taking the lease here when nobody
  holds it), so the owner's heartbeat reads it there and the session does not move for it.
- **Collected where it is queued.** A poll through another node that returns a job's end
  says so in its answer (`ended`); once the asker's result is kept (`ToolContext.on_kept`:
  never when its run is aborted before) the asker takes the job's queued completion back
  and tells the job's node (`"collect"`), which collects it (`ProcessRegistry.collect`) and
  says so in the job's next `listed` notice (`collected`); a node hearing it takes the
  completion back too, and a node that had not yet told the owner of the end no longer does
  (OpenClaw's poll removes the completion, or keeps it from being queued). A poll's output
  is marked read the same way: the answer says up to where it read (`read`, an offset in
  the job's output) and the asker sends that back once its result is kept (`upto`, in a
  `"read"` notice or the `"collect"` one), so an aborted run's next poll shows the same
  output again. An ask without `defer` (a node of an earlier version) is collected and its
  output marked read at once, as before. A lost job's `Exec finished` is not a completion a
  poll collects (as a node's in OpenClaw). A job elsewhere that runs, or ended and is not
  collected, holds a subagent's `sessions_yield` as one here does (`awaits_collection`, as
  last told); a lost one does not.
- **Abort, delete, reset** reach every node (`kill_run`, `kill_session`, `clear_finished`
  notices): each kills or forgets the jobs it runs of that run or session.

Notices are as reliable as the router's (Redis streams, bounded): a lost `listed` leaves a
job out of other nodes' knowledge until its next one (a live node is asked anyway); a lost
answer makes the call fail after its bound, naming the node, rather than hang.
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
import time
from collections.abc import Callable
from typing import Any, Final, Literal, Protocol

import attrs
import msgspec
import trio

from actors import Cluster, ClusterError, StoreError, Supervisor
from runtime.tools import (
    Job,
    ProcessParams,
    ProcessRegistry,
    ToolResult,
    act_here,
    job_entry,
    lost_entry,
    lost_result,
    text_result,
)

from ._job_records import JobDocument, JobPart, part_key
from ._leases import SessionLeases

__all__ = ["ClusterProcesses"]

log = logging.getLogger("clawlane.cluster")

MAX_KNOWN: Final = 4096
"""The other nodes' jobs a node keeps, all told (the oldest told forgotten first)."""
LIST_WAIT_S: Final = 2.0
SILENT_S: Final = 30.0
"""How long a node that let an ask go unanswered is not asked (but for its next notice)."""
ACT_WAIT_S: Final = 15.0
"""How long an action waits for its node beyond what it waits there (a poll's `timeout`)."""
CHECK_S: Final = 0.2
EXPIRE_S: Final = 5.0
GREETING_JOBS: Final = 64
"""Jobs per greeting notice."""

Ask = Literal["answered", "gone", "late"]
_Notes = list[dict[str, Any]]
_Parts = list[JobPart]
_Nodes = list[str]


class _Router(Protocol):
    node_id: str
    ttl_s: float
    started_ms: int
    cluster: Cluster
    leases: SessionLeases

    @property
    def alive(self) -> set[str]: ...

    def tell_all(self, note: dict[str, Any]) -> None: ...

    def tell(self, node: str, note: dict[str, Any]) -> None: ...


@attrs.define(eq=False)
class _Known:
    """A job another node lists (as it last told), and when this node found it lost."""

    node: str
    inc: int | None
    session_key: str
    agent_id: str
    notify: bool
    keep_s: float
    entry: dict[str, Any]
    lost_at: int | None = None
    """When this node found its node gone or restarted (ms); None while it is not."""
    lost_since: float = 0.0
    """The same on trio's clock."""
    told_lost: bool = False
    collected: bool = False
    """A poll returned its end (on its node)."""


@attrs.define(eq=False)
class _Pending:
    """An ask this node sent, until its answer."""

    node: str
    done: trio.Event = attrs.field(factory=trio.Event)
    answer: dict[str, Any] | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _fail(text: str) -> ToolResult:
    return text_result(text, is_error=True, details={"status": "failed", "error": text})


def _listed_note(job: Job) -> dict[str, Any]:
    entry = {**job_entry(job), "tail": ""}  # its output stays on its node
    return {
        "proc": "listed",
        "sessionKey": job.session_key,
        "agentId": job.agent_id,
        "notify": job.notify_on_exit,
        "keepS": job.keep_s,
        "collected": job.collected,
        "entry": entry,
    }


class ClusterProcesses:
    """This node's background jobs joined to the cluster (see the module docstring)."""

    def __init__(
        self,
        registry: ProcessRegistry,
        supervisor: Supervisor,
        router: _Router,
        *,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self.registry = registry
        self.supervisor = supervisor
        self.router = router
        self._clock = clock
        self._known: collections.OrderedDict[tuple[str, str], _Known] = collections.OrderedDict()
        """The other nodes' jobs: (session key, job id) -> what was told."""
        self._inc: dict[str, int] = {router.node_id: router.started_ms}
        """Each node's process (when it started): this one's, the others' as their last
        notice said."""
        self._greeted: set[str] = set()
        self._answering: dict[str, float] = {}
        """The nodes that can answer an ask: they told this node of jobs (when one last let
        an ask go unanswered, else 0: see the module docstring)."""
        self._pending: dict[str, _Pending] = {}
        self._serving: dict[tuple[str, str], trio.CancelScope] = {}
        self._qids = itertools.count(1)
        self._nursery: trio.Nursery | None = None
        self._expired_at = 0.0
        self.records = JobDocument(None, router.node_id, router.started_ms)
        """Every node's jobs where every node reads them (the cluster's PostgreSQL)."""
        self.asked = 0
        self.served = 0

    @classmethod
    def attach(cls, gateway: Any, router: _Router) -> ClusterProcesses | None:
        """Join the node's job registry (if it has one) to the cluster through `router`:
        its `peers`, and its jobs' ends told to their sessions' owners. Not a checkpoint."""
        supervisor = gateway.actors.supervisor
        registry = supervisor.processes
        if not isinstance(registry, ProcessRegistry):
            return None
        joined = cls(registry, supervisor, router)
        config = supervisor.generation.config
        joined.records = JobDocument.for_config(config, router.node_id, router.started_ms)
        registry.peers = joined
        registry.on_exit = joined.on_exit
        return joined

    # --- what the registry tells (runtime.tools.ProcessPeers) ------------------------------

    def listed(self, job: Job) -> None:
        self.router.tell_all(_listed_note(job))
        self.records.mark()

    def unlisted(self, job: Job) -> None:
        self.router.tell_all({"proc": "unlisted", "sessionKey": job.session_key, "id": job.id})
        self.records.mark()

    def kill_run(self, run_id: str) -> None:
        self.router.tell_all({"proc": "kill-run", "runId": run_id})

    def kill_session(self, session_key: str) -> None:
        self._drop(session_key, ended_only=False)
        self.router.tell_all({"proc": "kill-session", "sessionKey": session_key})

    def clear_finished(self, session_key: str) -> None:
        self._drop(session_key, ended_only=True)
        self.router.tell_all({"proc": "clear", "sessionKey": session_key})

    def awaits_collection(self, session_key: str) -> bool:
        """Whether a job of `session_key` another node told of runs, or ended and is not
        collected (a lost one does not: its node is gone, nothing can collect it)."""
        return any(
            k.session_key == session_key and not k.collected and not self._lost(k)
            for k in self._known.values()
        )

    def taken(self, job_id: str) -> bool:
        """Whether a job another node told of (or of a process gone) has id `job_id`."""
        return any(known_id == job_id for _key, known_id in self._known)

    async def reserve(self, job_id: str) -> bool:
        """Claim `job_id` for a job of this node's process (`exec-job:<id>` among the
        cluster's claims, `actors.Claims`, for their time: no other node's new job takes it
        meanwhile; after, one still listed is known to every node, `taken`): False when
        another process claimed it. True when Redis cannot be asked (logged): the id is
        then as unique as what this node knows. A checkpoint."""
        mine = f"{self.router.node_id}@{self.router.started_ms}".encode()
        try:
            claim = await self.router.cluster.claims.claim(f"exec-job:{job_id}", mine)
        except ClusterError as exc:
            log.warning("job id %s not claimed in the cluster: %s", job_id, exc)
            return True
        return claim.first or claim.ack == mine

    def _drop(self, session_key: str, *, ended_only: bool) -> None:
        """Forget the known jobs of `session_key` (`ended_only`: those ended or lost), in the
        job records too (the lost ones: those of processes gone)."""
        self.records.drop(session_key)
        for key, known in list(self._known.items()):
            if known.session_key != session_key:
                continue
            if not ended_only or self._lost(known) or known.entry.get("status") != "running":
                del self._known[key]

    # --- what `process` asks of the other nodes ----------------------------------------------

    async def list(self, session_key: str) -> list[tuple[dict[str, Any], str]]:
        """The session's jobs on the other nodes (see `ProcessPeers.list`). A checkpoint,
        `LIST_WAIT_S` at most."""
        found: list[tuple[dict[str, Any], str]] = []
        answered: set[str] = set()

        async def ask(node: str) -> None:
            how, answer = await self._ask(node, {"sessionKey": session_key}, LIST_WAIT_S)
            if how == "answered" and answer is not None:
                answered.add(node)
                found.extend((dict(entry), f"on {node}") for entry in answer.get("entries", ()))

        async with trio.open_nursery() as nursery:
            for node in self._askable():
                nursery.start_soon(ask, node)
        for known in list(self._known.values()):
            if known.session_key != session_key:
                continue
            if self._lost(known):
                assert known.lost_at is not None
                lost = lost_entry(known.entry, known.lost_at)
                found.append((lost, f"node {known.node} lost"))
            elif known.node not in answered:  # as last told
                found.append((known.entry, f"on {known.node}"))
        return found

    async def act(
        self,
        session_key: str,
        args: dict[str, Any],
        on_kept: Callable[[Callable[[], None]], None] | None = None,
    ) -> ToolResult | None:
        """`args` on the node running its job (see `ProcessPeers.act`). A checkpoint,
        bounded by the action's wait and `ACT_WAIT_S`."""
        params = msgspec.convert(args, ProcessParams)
        job_id = str(params.sessionId)
        known = self._known.get((session_key, job_id))
        if known is not None and self._lost(known):
            await trio.lowlevel.checkpoint()
            return self._lost_answer(known, params)
        nodes = [known.node] if known is not None else self._askable()
        wait_s = ACT_WAIT_S
        if params.action == "poll":
            wait_s += min(30_000.0, params.timeout or 0.0) / 1000
        body = {"sessionKey": session_key, "args": args, "defer": True}
        results: dict[str, tuple[Ask, dict[str, Any] | None]] = {}
        async with trio.open_nursery() as nursery:

            async def ask(node: str) -> None:
                results[node] = await self._ask(node, body, wait_s)
                how, answer = results[node]
                if how == "answered" and answer is not None and answer.get("found"):
                    nursery.cancel_scope.cancel()  # the job's node answered: enough

            for node in nodes:
                nursery.start_soon(ask, node)
        for node, (how, answer) in results.items():
            if how == "answered" and answer is not None and answer.get("found"):
                ended = bool(answer.get("ended") or answer.get("collected"))  # returned the end
                read = answer.get("read")  # the output offset a poll read up to
                upto = read if isinstance(read, int) and not isinstance(read, bool) else None
                if ended or upto is not None:
                    kept = functools.partial(
                        self._kept_on, node, session_key, job_id, upto, ended=ended
                    )
                    kept() if on_kept is None else on_kept(kept)
                return msgspec.convert(answer["result"], ToolResult)
        if known is None:
            return None  # no other node has it
        how, _answer = results.get(known.node, ("late", None))
        if self._lost(known):
            return self._lost_answer(known, params)
        if how == "late":
            return _fail(f"node {known.node} did not answer in time about session {job_id}")
        self._known.pop((session_key, job_id), None)  # its node no longer has it
        return None

    def _lost_answer(self, known: _Known, params: ProcessParams) -> ToolResult:
        assert known.lost_at is not None
        if params.action in ("clear", "remove"):  # forgotten everywhere
            self._known.pop((known.session_key, str(params.sessionId)), None)
            self.records.drop(known.session_key, str(params.sessionId))
            note = {"proc": "unlisted", "sessionKey": known.session_key, "id": params.sessionId}
            self.router.tell_all(note)
        return lost_result(params, lost_entry(known.entry, known.lost_at), known.node)

    def _askable(self) -> _Nodes:
        """The other live nodes that can answer an ask (see the module docstring)."""
        now, others = self._clock(), self.router.alive - {self.router.node_id}
        return sorted(
            node for node, late in self._answering.items() if node in others and now >= late
        )

    async def _ask(
        self, node: str, body: dict[str, Any], wait_s: float
    ) -> tuple[Ask, dict[str, Any] | None]:
        """Ask `node` (its answer), until `node` is gone or `wait_s` passed. A checkpoint;
        cancelled, it tells `node` to stop."""
        qid = f"{self.router.node_id}:{next(self._qids)}"
        pending = self._pending[qid] = _Pending(node)
        self.asked += 1
        self.router.tell(node, {**body, "proc": "ask", "qid": qid})
        deadline = self._clock() + wait_s
        try:
            while not pending.done.is_set():
                if node not in self.router.alive:
                    return "gone", None
                if self._clock() >= deadline:
                    if node in self._answering:  # not asked again for a while
                        self._answering[node] = self._clock() + SILENT_S
                    return "late", None
                with trio.move_on_after(CHECK_S):
                    await pending.done.wait()
            return "answered", pending.answer
        except trio.Cancelled:
            if not pending.done.is_set():
                self.router.tell(node, {"proc": "cancel", "qid": qid})
            raise
        finally:
            self._pending.pop(qid, None)

    # --- a job's end, told to its session's owner --------------------------------------------

    def on_exit(self, job: Job) -> None:
        """(The registry's `on_exit`.) A backgrounded job ended by itself. Not a checkpoint."""
        self._ended(job.agent_id, job.session_key, job.id, job.exit_event(), job)

    def _ended(
        self, agent_id: str, key: str, job_id: str, text: str, job: Job | None = None
    ) -> None:
        if key in self.router.leases.held or self._nursery is None:
            self.supervisor.exec_ended(agent_id, key, job_id, text)
            return
        self._nursery.start_soon(self._tell_owner, agent_id, key, job_id, text, job)

    async def _tell_owner(
        self, agent_id: str, key: str, job_id: str, text: str, job: Job | None
    ) -> None:
        """Queue the end on the session's owner: this node when it holds the lease or takes
        it now (kept while the event waits here), else the node that holds it; not when a
        poll collected `job` meanwhile (OpenClaw queues no completion then)."""
        leases = self.router.leases
        owner = self.router.node_id
        with leases.pinned(key):
            try:
                owner = await leases.owner(key)
            except (ClusterError, StoreError) as exc:
                log.warning("exec end of %s queued here: its owner is unknown: %s", key, exc)
            if job is not None and job.collected:
                return
            if owner == self.router.node_id:
                self.supervisor.exec_ended(agent_id, key, job_id, text)
                return
        note = {"proc": "ended", "agentId": agent_id, "sessionKey": key, "id": job_id}
        self.router.tell(owner, {**note, "text": text})

    # --- another node's notices --------------------------------------------------------------

    def on_note(self, note: dict[str, Any]) -> bool:
        """Take another node's notice about background jobs; False when `note` is not one.
        Not a checkpoint."""
        what = note.get("proc")
        if what is None:
            return False
        node = str(note.get("from"))
        self._answering[node] = 0.0
        self._seen(node, note.get("inc"))
        try:
            self._take(node, str(what), note)
        except (KeyError, TypeError, ValueError, msgspec.ValidationError) as exc:
            log.warning("unreadable job notice %r from %s dropped: %s", what, node, exc)
        return True

    def _take(self, node: str, what: str, note: dict[str, Any]) -> None:
        registry = self.registry
        if what == "listed":
            self._remember(node, note)
        elif what == "jobs":
            for listed in note["jobs"]:
                self._remember(node, {**listed, "inc": note.get("inc")})
        elif what == "unlisted":
            self._known.pop((str(note["sessionKey"]), str(note["id"])), None)
        elif what == "ask":
            self._serve(node, note)
        elif what == "answer":
            pending = self._pending.get(str(note["qid"]))
            if pending is not None and pending.node == node:
                pending.answer = note
                pending.done.set()
        elif what == "cancel":
            scope = self._serving.get((node, str(note["qid"])))
            if scope is not None:
                scope.cancel()
        elif what in ("read", "collect"):  # a poll's result kept on the asker
            job = registry.get(str(note["sessionKey"]), str(note["id"]))
            upto = note.get("upto")
            if job is not None and isinstance(upto, int):
                job.output.mark_read(upto)
            if what == "collect" and job is not None and not job.running:
                registry.collect(job)
        elif what == "ended":
            key, job_id = str(note["sessionKey"]), str(note["id"])
            self.supervisor.exec_ended(str(note["agentId"]), key, job_id, str(note["text"]))
        elif what == "kill-run":
            registry.kill_run(str(note["runId"]), tell=False)
        elif what == "kill-session":
            self._drop(str(note["sessionKey"]), ended_only=False)
            registry.kill_session(str(note["sessionKey"]), tell=False)
        elif what == "clear":
            self._drop(str(note["sessionKey"]), ended_only=True)
            registry.clear_finished(str(note["sessionKey"]), tell=False)

    def _remember(self, node: str, note: dict[str, Any]) -> None:
        entry = dict(note["entry"])
        key = (str(note["sessionKey"]), str(entry["sessionId"]))
        inc = note.get("inc")
        self._known.pop(key, None)
        self._known[key] = _Known(
            node=node,
            inc=inc if isinstance(inc, int) else None,
            session_key=key[0],
            agent_id=str(note["agentId"]),
            notify=bool(note.get("notify")),
            keep_s=float(note.get("keepS") or 0),
            entry=entry,
        )
        while len(self._known) > MAX_KNOWN:
            self._known.popitem(last=False)
        if note.get("collected"):
            self._collected(*key)

    def _kept_on(
        self, node: str, session_key: str, job_id: str, upto: int | None, *, ended: bool
    ) -> None:
        """A poll's result about `node`'s job is kept: its output up to `upto` (when told) is
        read there (a `"read"` notice), and a job it returned the end of is collected there
        (a `"collect"` notice, carrying `upto` too), its completion taken back here."""
        note: dict[str, Any] = {"sessionKey": session_key, "id": job_id}
        if upto is not None:
            note["upto"] = upto
        if ended:
            self._collected(session_key, job_id)
        self.router.tell(node, {**note, "proc": "collect" if ended else "read"})

    def _collected(self, session_key: str, job_id: str) -> None:
        """A poll returned the end of another node's job: noted, its completion taken back
        from this node's queue (`ProcessRegistry.collected`)."""
        known = self._known.get((session_key, job_id))
        if known is not None:
            known.collected = True
        self.registry.collected(session_key, job_id)

    def _seen(self, node: str, inc: object) -> None:
        """`node`'s process is the one that started at `inc`: if it is not the one this node
        knew, the jobs it told before are lost (a restart kills them), and it is greeted."""
        if not isinstance(inc, int) or self._inc.get(node) == inc:
            return
        if node in self._inc:  # started again: it knows nothing of this node's jobs
            self._greeted.discard(node)
        self._inc[node] = inc
        self._find_lost()

    def _serve(self, node: str, note: dict[str, Any]) -> None:
        qid = str(note["qid"])
        if self._nursery is None:
            self.router.tell(node, {"proc": "answer", "qid": qid, "found": False})
            return
        scope = self._serving[(node, qid)] = trio.CancelScope()
        self.served += 1
        self._nursery.start_soon(self._answer, node, qid, note, scope)

    async def _answer(
        self, node: str, qid: str, note: dict[str, Any], scope: trio.CancelScope
    ) -> None:
        """Do what `node` asked here and answer it (nothing when it cancelled the ask)."""
        try:
            with scope:
                key, args = str(note["sessionKey"]), note.get("args")
                answer = await self._here(key, args, defer=bool(note.get("defer")))
                self.router.tell(node, {**answer, "proc": "answer", "qid": qid})
        finally:
            self._serving.pop((node, qid), None)

    async def _here(self, session_key: str, args: Any, *, defer: bool) -> dict[str, Any]:
        """What another node's `process` call finds here: the session's list entries
        (`args` None), else whether the job is here and the action's result. A poll that
        returned the job's end says so (`ended`); with `defer` the job is collected when the
        asker's result is kept (its `"collect"` notice), else at once (`collected`: a node
        of an earlier version asks so). So is a poll's output marked read: with `defer` the
        answer says up to where (`read`, a stream offset) and the asker sends it back once
        its result is kept (a `"read"` notice, or the `"collect"` one's `upto`), else at
        once."""
        registry = self.registry
        if args is None:
            await trio.lowlevel.checkpoint()
            return {"entries": [job_entry(job) for job in registry.list(session_key)]}
        try:
            params = msgspec.convert(args, ProcessParams)
        except msgspec.ValidationError:
            params = None
        job = registry.get(session_key, params.sessionId) if params and params.sessionId else None
        if params is None or job is None:
            await trio.lowlevel.checkpoint()
            return {"found": False}
        commits: list[Callable[[], None]] = []
        result = await act_here(registry, session_key, params, commits.append if defer else None)
        # No checkpoint passed since the poll read its output: it read up to `total`.
        upto = job.output.total
        ended = params.action == "poll" and not job.running  # the poll returned its end
        collected = ended and job.collected
        answer = {
            "found": True,
            "result": msgspec.to_builtins(result),
            "ended": ended,
            "collected": collected,
        }
        if defer and params.action == "poll":
            answer["read"] = upto
        return answer

    # --- the nodes that join and go ---------------------------------------------------------

    def _restarted(self, known: _Known) -> bool:
        return known.inc is not None and self._inc.get(known.node, known.inc) != known.inc

    def _lost(self, known: _Known) -> bool:
        """Whether `known`'s node is gone or started again since it told it, noting when
        this node first found it so. A node gone that comes back (its record expired while
        it was cut off) has its jobs again."""
        if known.node in self.router.alive and not self._restarted(known):
            known.lost_at = None
            return False
        if known.lost_at is None:
            known.lost_at, known.lost_since = _now_ms(), self._clock()
        return True

    def _find_lost(self) -> None:
        """Find the jobs lost since the last look; tell the sessions of those that were to
        tell their end, once the node stayed gone two lease TTLs (as the reaper judges a
        node lost), or at once when it restarted: by the first live node (by id) only."""
        first = min(self.router.alive, default=self.router.node_id) == self.router.node_id
        for known in list(self._known.values()):
            if known.told_lost or not self._lost(known):
                continue
            young = self._clock() - known.lost_since < 2 * self.router.ttl_s
            if young and not self._restarted(known):
                continue  # not yet lost for the reaper: it may come back
            known.told_lost = True
            if first and known.notify and known.entry.get("status") == "running":
                job_id = str(known.entry["sessionId"])
                text = f"Exec finished (node={known.node} id={job_id[:8]}, node lost)"
                self._ended(known.agent_id, known.session_key, job_id, text)
                self.records.tell(part_key(known.node, known.inc), known.session_key, job_id)

    def _expire(self) -> None:
        """Forget the known jobs ended (or lost) longer ago than their keep time."""
        now = _now_ms()
        for key, known in list(self._known.items()):
            ended = known.lost_at or known.entry.get("endedAt")
            if isinstance(ended, int) and ended + known.keep_s * 1000 < now:
                del self._known[key]

    def _greet(self) -> None:
        """Tell each node seen since the last look the jobs listed here."""
        others = self.router.alive - {self.router.node_id}
        new = others - self._greeted
        if new:
            notes = [_listed_note(job) for job in self.registry.all_listed()]
            for node in new:
                for start in range(0, max(len(notes), 1), GREETING_JOBS):
                    self.router.tell(
                        node, {"proc": "jobs", "jobs": notes[start : start + GREETING_JOBS]}
                    )
        self._greeted = others

    # --- the job records (`_job_records`) -------------------------------------------------

    def _record_jobs(self) -> _Notes | None:
        """This node's part of the job records (None while it closes: lost with it)."""
        if self.registry.closing:
            return None
        return [_listed_note(job) for job in self.registry.all_listed()]

    def _dead(self, part: JobPart) -> bool:
        """Whether the process of `part` is gone: its node is, or started again since."""
        if part.node == self.router.node_id:
            return part.inc != self.router.started_ms
        known = self._inc.get(part.node)
        return part.node not in self.router.alive or (known is not None and known != part.inc)

    def _take_parts(self, parts: _Parts) -> None:
        """Learn the jobs of the processes gone from their parts of the job records (a node
        that joined after they went heard none of their notices, nor this node's own former
        process's): lost, and told as their part says (the nodes alive when they went told
        their sessions)."""
        now = _now_ms()
        for part in parts:
            if not self._dead(part):
                continue
            told = set(map(tuple, part.told))
            for note in part.jobs:
                entry = note["entry"]
                key = (str(note["sessionKey"]), str(entry["sessionId"]))
                if key not in self._known:
                    if part.at + float(note.get("keepS") or 0) * 1000 < now:
                        continue  # kept no longer
                    self._remember(part.node, {**note, "inc": part.inc})
                known = self._known.get(key)
                if known is not None and key in told:
                    known.told_lost = True

    def _ready(self, since: float) -> bool:
        """Whether this node knows the live nodes (the router refreshed them)."""
        return len(self.router.alive) > 1 or self._clock() - since >= 1.0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the other nodes' asks, greet the nodes that join, find the jobs lost with
        the nodes that go, keep the job records. Never returns; cancel it to stop."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            since = self._clock()
            nursery.start_soon(
                self.records.run,
                self._record_jobs,
                self._dead,
                self._take_parts,
                lambda: self._ready(since),
            )
            task_status.started()
            try:
                while True:
                    self._greet()
                    self._find_lost()
                    if self._clock() - self._expired_at >= EXPIRE_S:
                        self._expired_at = self._clock()
                        self._expire()
                    await trio.sleep(CHECK_S)
            finally:
                self._nursery = None
