"""The background jobs `exec` starts and `process` controls: OpenClaw's process sessions.

A `ProcessRegistry` (`open_process_registry`) owns every job of a host: the job's process tree
(`_proctree`: a keeper that no descendant escapes), a task pumping its output, its timeout, and
what is kept once it ended. Jobs are scoped by session key (what `process` sees) and bounded per
agent (`ProcessLimits`): running jobs by count (a start beyond it is refused), output by bytes
per job (the retained tail; the unread part a poll drains is capped apart), finished jobs by
count and total bytes (the oldest forgotten first) and by age (`keep_s`, from their end).
Only backgrounded jobs are listed and kept after their end; a foreground job is forgotten when
its `exec` call returns. A job's id is OpenClaw's slug (`_slug`), unique in a cluster too.

Who kills what: `Job.kill` (the `process` tool, a cancelled foreground call), `kill_run` (a run
aborted: its jobs, backgrounded ones too), `kill_session` (a session deleted: its jobs, running
and finished), and the registry's end (shutdown: every job). A kill is SIGTERM to the keeper,
which SIGKILLs the tree; SIGKILL to the keeper and its group follows after a grace.

A job started with `pty` runs on a pseudo-terminal (`_pty`): its output is the terminal's one
stream (named stdout), its input is typed at the terminal; where none can be made it runs with
pipes (`Job.tty` is None).

Output is kept as OpenClaw keeps it: each stream passes, as it arrives, through a sanitizer of
its own (`_ansi.OutputSanitizer`: UTF-8 decoded, escape sequences removed even when split
across reads, control characters escaped) before it is counted, kept and streamed, so the
byte bounds apply to the text a model sees. The stdout sanitizer also follows the cursor key
mode the output sets (`Job.cursor_keys`, for `process send-keys`: `_pty_keys`) and, on a
terminal, answers its cursor position queries, as OpenClaw's does.

When a backgrounded job ends by itself (not killed on request) the registry calls `on_exit`
with it, as OpenClaw's `notifyOnExit` enqueues an `Exec completed|failed (<id>, code N) :: <tail>`
system event (`Job.exit_event`); the host wakes the session with it. A `process` poll that
returns a job's end collects it (`collect`, OpenClaw's terminal poll) once its result is
kept: the host takes its queued completion back (`on_collected`), so no heartbeat tells what
the model has seen. A
job running, or ended and not collected, holds a subagent's `sessions_yield`
(`awaits_collection`, as in OpenClaw).

In a cluster the registry stays the one home of this node's jobs, and `peers` (a
`ProcessPeers`, set by `transports.cluster`) is the other nodes': the registry tells them
which jobs it lists (`listed`, `unlisted`) and passes a run's abort, a session's deletion and
its reset on to them (`kill_run`, `kill_session`, `clear_finished`: `tell=False` when they
come from there); `process` asks them for the session's jobs that run elsewhere.

All methods run in the trio thread; those that are checkpoints say so.
"""

from __future__ import annotations

import logging
import math
import re
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Literal, Protocol

import attrs
import trio

from ._ansi import OutputSanitizer
from ._errors import JobLimitError, ToolError
from ._output_log import OutputLog
from ._proctree import (
    JOB_ENV,
    JobRecords,
    decode_status,
    kill_marked,
    kill_tree,
    new_job_token,
    spawn_tree,
)
from ._pty import EOT, Terminal, open_terminal, terminal_env
from ._pty_keys import CursorKeyMode
from ._slug import session_slug
from ._tool import ToolResult

__all__ = [
    "TIMEOUT_RETRY_GUIDANCE",
    "Job",
    "JobLimitError",
    "OutputLog",
    "ProcessLimits",
    "ProcessPeers",
    "ProcessRegistry",
    "derive_name",
    "exec_event_prompt",
    "open_process_registry",
]

log = logging.getLogger("clawlane.tools.process")

_NOTIFY_TAIL_CHARS: Final = 400
_NOTIFY_SNIPPET_CHARS: Final = 180
_DRAIN_GRACE: Final = 1.0

ExitReason = Literal[
    "exit", "signal", "overall-timeout", "manual-cancel", "aborted", "session-ended", "shutdown"
]
_REQUESTED: Final = frozenset({"manual-cancel", "aborted", "session-ended", "shutdown"})


@attrs.frozen
class ProcessLimits:
    """Per-agent bounds (OpenClaw's defaults where it has one: 200,000 retained and 30,000
    pending per job, 50 finished jobs and 2,000,000 of their output, 30 min after the end)."""

    max_output_bytes: int = 200_000
    pending_bytes: int = 30_000
    max_running_per_agent: int = 32
    max_finished_per_agent: int = 50
    max_finished_bytes_per_agent: int = 2_000_000
    finished_ttl_s: float = 1800.0


OnChunk = Callable[[str, str], None]
"""Receives each sanitized chunk of a job's output and its stream name, while a foreground
call streams it."""


@attrs.define(eq=False)
class Job:
    """One command and its process tree. Read its fields; change it through the registry."""

    id: str
    token: str
    command: str
    cwd: str
    agent_id: str
    session_key: str
    run_id: str
    started_at: int
    timeout_s: float | None
    keep_s: float
    """How long the job is kept after its end (`tools.exec.cleanupMs`, captured at its start)."""
    notify_on_exit: bool
    notify_empty_success: bool
    output: OutputLog
    proc: trio.Process | None = None
    tty: Terminal | None = None
    """The master side of the job's pseudo-terminal (`pty`), which carries its input and output."""
    cursor_keys: CursorKeyMode = "normal"
    """The cursor key mode (DECCKM) its output last set: `ESC [ ? 1 h` application, `ESC [ ? 1 l`
    normal; `unknown` until then for a job started with `pty` (even one that fell back to
    pipes), `normal` for one without, as OpenClaw tracks it."""
    backgrounded: bool = False
    ended_at: int | None = None
    exit_code: int | None = None
    exit_signal: str | None = None
    exit_reason: ExitReason | None = None
    on_chunk: OnChunk | None = None
    last_output_at: float = attrs.field(factory=time.monotonic)
    stdin_open: bool = False
    done: trio.Event = attrs.field(factory=trio.Event)
    kill_requested: trio.Event = attrs.field(factory=trio.Event)
    changed: trio.Event = attrs.field(factory=trio.Event)
    """Set (and replaced) when output arrives or the job ends: await the current one."""
    sanitizers: dict[str, OutputSanitizer] = attrs.field(factory=dict)
    """One per output stream, made when the job's task starts."""
    collected: bool = False
    """A `process` poll returned its end (OpenClaw's `terminalPollObserved`)."""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.ended_at is None

    @property
    def status(self) -> str:
        """`running`, `completed` (a clean exit, or stopped on request) or `failed`."""
        if self.ended_at is None:
            return "running"
        if self.exit_reason in _REQUESTED:
            return "completed"
        if self.exit_reason == "exit" and self.exit_code not in (126, 127):
            return "completed"
        return "failed"

    @property
    def stopped_on_request(self) -> bool:
        return self.exit_reason in _REQUESTED

    @property
    def timed_out(self) -> bool:
        return self.exit_reason == "overall-timeout"

    @property
    def name(self) -> str:
        """A short label: the command's verb and first operand (OpenClaw's derived name)."""
        return derive_name(self.command)

    def exit_label(self) -> str:
        if self.exit_signal is not None:
            return f"signal {self.exit_signal}"
        return f"code {self.exit_code}" if self.exit_code is not None else "unknown exit code"

    def exit_event(self) -> str:
        """The system event of this job's end (OpenClaw's text)."""
        state = "completed" if self.status == "completed" else "failed"
        snippet = _compact(self.output.text()[-_NOTIFY_TAIL_CHARS:])
        head = f"Exec {state} ({self.id[:8]}, {self.exit_label()})"
        text = f"{head} :: {snippet}" if snippet else head
        if self.timed_out:
            text += f"\n\n{TIMEOUT_RETRY_GUIDANCE}"
        return text

    def wants_notice(self) -> bool:
        """Whether this ended background job's end should wake its session."""
        if not (self.backgrounded and self.notify_on_exit) or self.stopped_on_request:
            return False
        quiet = self.status == "completed" and self.exit_code == 0
        return not (quiet and not self.output.text().strip() and not self.notify_empty_success)

    def notify(self) -> None:
        """Wake whoever awaits `changed`."""
        event, self.changed = self.changed, trio.Event()
        event.set()

    def kill(self, reason: ExitReason = "manual-cancel") -> bool:
        """Ask for the tree to be killed (the job's task does it). False when it ended."""
        if self.ended_at is not None:
            return False
        if self.exit_reason is None:
            self.exit_reason = reason
        self.kill_requested.set()
        return True


TIMEOUT_RETRY_GUIDANCE: Final = (
    "The command was terminated, but external side effects may already have completed. "
    "Verify the resulting state before retrying. Do not automatically rerun non-idempotent "
    "commands. Use a higher timeout only when the command is known to be safe to retry."
)


_EVENT_PROMPT_CHARS: Final = 8000


def exec_event_prompt(events: Sequence[str]) -> str:
    """The message of the turn that wakes a session for its jobs' ends (OpenClaw's exec
    completion prompt: the events, then what to do with them)."""
    text = "\n".join(e.strip() for e in events if e.strip())
    if len(text) > _EVENT_PROMPT_CHARS:
        text = f"{text[:_EVENT_PROMPT_CHARS]}\n\n[truncated]"
    return (
        "An async command you ran earlier has completed. The command completion details "
        f"are:\n\n{text}\n\nPlease relay the command output to the user in a helpful way. If "
        "the command succeeded, share the relevant output. If it failed, explain what went wrong."
    )


def _compact(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _NOTIFY_SNIPPET_CHARS else flat[: _NOTIFY_SNIPPET_CHARS - 1] + "…"


_TOKEN_RE: Final = re.compile(r"""(?:[^\s"']+|"(?:\\.|[^"\\])*"|'[^']*')+""")


def derive_name(command: str) -> str:
    tokens: list[str] = [str(t).strip("\"'") for t in _TOKEN_RE.findall(command)]
    tokens = [t for t in tokens if t]
    if not tokens:
        return ""
    target = next((t for t in tokens[1:] if not t.startswith("-")), None)
    target = target if target is not None else (tokens[1] if len(tokens) > 1 else None)
    if target is None:
        return tokens[0]
    if len(target) > 48:
        target = f"{target[:22]}...{target[-22:]}"
    return f"{tokens[0]} {target}"


class ProcessPeers(Protocol):
    """The job registries of a cluster's other nodes (`transports.cluster`), as
    `ProcessRegistry.peers`. The telling methods are not checkpoints and never raise."""

    def listed(self, job: Job) -> None:
        """`job` is listed here now (backgrounded, or ended and kept)."""

    def unlisted(self, job: Job) -> None:
        """`job` is no longer listed here (forgotten, removed, ended and not kept)."""

    def kill_run(self, run_id: str) -> None:
        """Kill the running jobs of aborted run `run_id` on the other nodes."""

    def kill_session(self, session_key: str) -> None:
        """Kill `session_key`'s jobs on the other nodes and forget its ended ones."""

    def clear_finished(self, session_key: str) -> None:
        """Forget `session_key`'s ended jobs on the other nodes."""

    def awaits_collection(self, session_key: str) -> bool:
        """`ProcessRegistry.awaits_collection` for the other nodes' jobs, as last told."""
        ...

    def taken(self, job_id: str) -> bool:
        """Whether a job of another node has id `job_id`, as far as this node knows."""
        ...

    async def reserve(self, job_id: str) -> bool:
        """Claim `job_id` for a new job of this node across the cluster: False when another
        node claimed it. A checkpoint; True when the cluster cannot be asked."""
        ...

    async def list(self, session_key: str) -> list[tuple[dict[str, Any], str]]:
        """`session_key`'s jobs on the other nodes, each as its `process list` entry and
        where it runs (a job whose node is gone: ended `failed`, `exitReason` `node-lost`).
        A checkpoint, bounded in time."""
        ...

    async def act(
        self,
        session_key: str,
        args: dict[str, Any],
        on_kept: Callable[[Callable[[], None]], None] | None = None,
    ) -> ToolResult | None:
        """`process` with `args` (its `ProcessParams` as builtins) on the node running job
        `args["sessionId"]` of `session_key`: its result there (or the answer for a job whose
        node is gone); None when no other node has the job. A poll returning the end
        collects the job there once its result is kept (`on_kept`; None: at once). A
        checkpoint, bounded in time (a poll's wait included)."""
        ...


class ProcessRegistry:
    """Create with `open_process_registry`. See the module docstring."""

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        limits: ProcessLimits,
        records: JobRecords | None,
        on_exit: Callable[[Job], None] | None,
    ) -> None:
        self._nursery = nursery
        self.limits = limits
        self.records = records
        self.on_exit = on_exit
        self.peers: ProcessPeers | None = None
        """The other nodes' registries, in a cluster (see the module docstring)."""
        self.on_collected: Callable[[str, str], None] | None = None  # see `collected`
        self._jobs: dict[str, Job] = {}
        self._finished: dict[str, Job] = {}  # backgrounded and ended, oldest first
        self._reserving: set[str] = set()  # the ids of jobs being started
        self.closing = False

    # --- starting -------------------------------------------------------------------------

    async def start(
        self,
        argv: Sequence[str],
        *,
        command: str,
        cwd: Path,
        env: Mapping[str, str],
        agent_id: str,
        session_key: str,
        run_id: str,
        timeout_s: float | None,
        keep_s: float | None = None,
        stdin: bool = False,
        notify_on_exit: bool = True,
        notify_empty_success: bool = False,
        on_chunk: OnChunk | None = None,
        pty: bool = False,
    ) -> Job:
        """Start `argv` as a job of `session_key`, with `pty` on a pseudo-terminal when one can
        be made (`job.tty`; its input is then always open). Raises `JobLimitError` (too many
        running jobs for `agent_id`, or the registry is closing) and `OSError` (it could not
        start). A checkpoint; the job's task runs in the registry's nursery, so it outlives the
        call."""
        job_id = await self._new_id()  # reserved (`_reserving`) until it is in `_jobs`
        try:
            running = sum(1 for j in self._jobs.values() if j.agent_id == agent_id and j.running)
            if self.closing:
                raise JobLimitError("exec: the gateway is shutting down")
            if running >= self.limits.max_running_per_agent:
                raise JobLimitError(
                    f"exec: agent {agent_id} already has {running} running commands (the "
                    "limit); kill or wait for one with the process tool"
                )
            job = Job(
                id=job_id,
                token=new_job_token(),
                command=command,
                cwd=str(cwd),
                agent_id=agent_id,
                session_key=session_key,
                run_id=run_id,
                started_at=_now_ms(),
                timeout_s=timeout_s,
                keep_s=self.limits.finished_ttl_s if keep_s is None else keep_s,
                notify_on_exit=notify_on_exit,
                notify_empty_success=notify_empty_success,
                output=OutputLog(self.limits.max_output_bytes, self.limits.pending_bytes),
                on_chunk=on_chunk,
                cursor_keys="unknown" if pty else "normal",
            )
            await self._spawn(job, argv, cwd=cwd, env=env, stdin=stdin, pty=pty)
        finally:
            self._reserving.discard(job_id)
        self._nursery.start_soon(self._run, job, name=f"exec-job:{job.id}")
        return job

    async def _spawn(
        self,
        job: Job,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stdin: bool,
        pty: bool,
    ) -> None:
        """Start `job`'s process tree and keep the job in `_jobs`. Raises `OSError`. A
        checkpoint, shielded: its caller starts the job's task before the next checkpoint,
        so a cancellation (a run's abort) arriving meanwhile can never leave a process that
        no task watches."""
        with trio.CancelScope(shield=True):
            job.tty = _open_terminal(job) if pty else None
            job_env = {**env, JOB_ENV: job.token, "OPENCLAW_SHELL": "exec"}
            try:
                job.proc = await spawn_tree(
                    argv,
                    cwd=cwd,
                    env=job_env if job.tty is None else terminal_env(job_env),
                    stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                    tty=job.tty.slave if job.tty is not None else None,
                )
            finally:
                if job.tty is not None and job.proc is None:
                    await job.tty.aclose()
                elif job.tty is not None:
                    job.tty.close_slave()
        job.stdin_open = stdin or job.tty is not None
        self._jobs[job.id] = job

    async def _new_id(self) -> str:
        """A new job id (OpenClaw's slug: `_slug`) that no job here has nor, as far as this
        node knows, one of another node's; in a cluster claimed there too (`peers.reserve`:
        another id is tried when another node claimed it). It stays reserved here until the
        caller discards it (`_reserving`). A checkpoint."""
        refused: set[str] = set()

        def taken(job_id: str) -> bool:
            if job_id in self._jobs or job_id in self._finished or job_id in self._reserving:
                return True
            return job_id in refused or (self.peers is not None and self.peers.taken(job_id))

        while True:
            candidate = session_slug(taken)
            self._reserving.add(candidate)
            if self.peers is None or await self.peers.reserve(candidate):
                await trio.lowlevel.checkpoint()
                return candidate
            self._reserving.discard(candidate)
            refused.add(candidate)

    # --- one job's life ---------------------------------------------------------------------

    async def _run(self, job: Job) -> None:
        proc = job.proc
        assert proc is not None
        streams = _output_streams(job, proc)
        job.sanitizers = {name: _sanitizer(job, name) for _, name in streams}
        open_streams = [len(streams)]
        drained = trio.Event()

        async def pump(stream: trio.abc.ReceiveStream, name: str) -> None:
            try:
                async for chunk in stream:
                    self._take(job, name, chunk)
            finally:
                self._take(job, name, b"", final=True)
                open_streams[0] -= 1
                if not open_streams[0]:
                    drained.set()

        async def watch_kill() -> None:
            await job.kill_requested.wait()
            await kill_tree(proc)

        try:
            if self.records is not None:
                records, token, pid = self.records, job.token, proc.pid
                await trio.to_thread.run_sync(lambda: records.add(token, pid))
            async with trio.open_nursery() as nursery:
                for stream, name in streams:
                    nursery.start_soon(pump, stream, name)
                nursery.start_soon(watch_kill)
                deadline = math.inf if job.timeout_s is None else job.timeout_s
                with trio.move_on_after(deadline) as scope:
                    await proc.wait()
                if scope.cancelled_caught:
                    job.kill("overall-timeout")
                    await kill_tree(proc)
                with trio.move_on_after(_DRAIN_GRACE):
                    await drained.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                if proc.returncode is None:
                    if job.exit_reason is None:
                        job.exit_reason = "shutdown"
                    await kill_tree(proc)
                if proc.returncode is not None and proc.returncode < 0:
                    # The keeper died of a signal: had it been killed outright, its tree
                    # would be the system's now. What carries the job's marker dies here.
                    await trio.to_thread.run_sync(kill_marked, job.token)
                for pipe in (proc.stdin, proc.stdout, proc.stderr, job.tty):
                    if pipe is not None:
                        await pipe.aclose()
            self._ended(job)

    def _take(
        self, job: Job, stream: str, chunk: bytes | bytearray, *, final: bool = False
    ) -> None:
        """Sanitize a chunk of `stream` (`final`: its end), then keep and stream the text."""
        text = job.sanitizers[stream].feed(bytes(chunk), final=final)
        if chunk:
            job.last_output_at = time.monotonic()
        if not text:
            return
        job.output.append(text.encode())
        job.notify()
        if job.on_chunk is not None:
            job.on_chunk(stream, text)

    def _ended(self, job: Job) -> None:
        assert job.proc is not None
        code, sig = decode_status(job.proc.returncode)
        job.exit_code, job.exit_signal = code, sig
        if job.exit_reason is None:
            job.exit_reason = "signal" if sig is not None else "exit"
        job.ended_at = _now_ms()
        job.stdin_open = False
        job.on_chunk = None
        if self.records is not None:
            try:
                self.records.remove(job.token)  # one unlink: cheaper than a thread hop
            except Exception:  # pragma: no cover - remove logs its own failures
                log.exception("could not remove the record of job %s", job.id)
        self._jobs.pop(job.id, None)
        if job.backgrounded and job.exit_reason != "session-ended":
            self._retain(job)
            self._tell(job, listed=True)
        elif job.backgrounded:
            self._tell(job, listed=False)
        job.done.set()
        job.notify()
        if self.on_exit is not None and job.wants_notice() and not self.closing:
            try:
                self.on_exit(job)
            except Exception:
                log.exception("on_exit failed for job %s", job.id)

    def _retain(self, job: Job) -> None:
        self._finished[job.id] = job
        limits = self.limits
        mine = [j for j in self._finished.values() if j.agent_id == job.agent_id]
        size = sum(len(j.output.buf) for j in mine)
        while len(mine) > 1 and (
            len(mine) > limits.max_finished_per_agent or size > limits.max_finished_bytes_per_agent
        ):
            oldest = mine.pop(0)
            size -= len(oldest.output.buf)
            if self._finished.pop(oldest.id, None) is not None:
                self._tell(oldest, listed=False)

    def _expire(self) -> None:
        if not self._finished:
            return
        now = _now_ms()
        for job_id in [
            i for i, j in self._finished.items() if (j.ended_at or 0) + j.keep_s * 1000 < now
        ]:
            self._tell(self._finished.pop(job_id), listed=False)

    def _tell(self, job: Job, *, listed: bool) -> None:
        """Tell the other nodes (`peers`) that `job` is listed here, or no longer is. Not
        while closing: the other nodes then find this node gone, and its jobs lost with it."""
        if self.peers is None or self.closing:
            return
        if listed:
            self.peers.listed(job)
        else:
            self.peers.unlisted(job)

    # --- what `exec` and `process` do ----------------------------------------------------------

    def background(self, job: Job) -> None:
        """The foreground call returns while `job` runs on: keep it, listed, stop streaming."""
        job.backgrounded = True
        job.on_chunk = None
        self._tell(job, listed=True)

    def forget(self, job: Job) -> None:
        """Drop an ended job (a foreground one once its call returned, `process clear`)."""
        if job.ended_at is not None and self._finished.pop(job.id, None) is not None:
            self._tell(job, listed=False)

    def all_listed(self) -> list[Job]:
        """Every backgrounded job, running and kept, of every session."""
        self._expire()
        return [j for j in (*self._jobs.values(), *self._finished.values()) if j.backgrounded]

    def hide(self, job: Job) -> None:
        """Kill a running backgrounded job and list it no more (`process remove`)."""
        job.kill("manual-cancel")
        if job.backgrounded:
            job.backgrounded = False
            self._tell(job, listed=False)

    def collect(self, job: Job) -> None:
        """A poll's result that returned ended `job`'s end is kept: mark it, tell the other
        nodes and the host."""
        if not job.collected:
            job.collected = True
            if job.id in self._finished:
                self._tell(job, listed=True)
        self.collected(job.session_key, job.id)

    def collected(self, session_key: str, job_id: str) -> None:
        """A poll returned the end of job `job_id` of `session_key` (here, or on another
        node): the host takes its queued completion back (`on_collected`)."""
        if self.on_collected is not None:
            try:
                self.on_collected(session_key, job_id)
            except Exception:
                log.exception("on_collected failed for job %s", job_id)

    def awaits_collection(self, session_key: str) -> bool:
        """Whether a backgrounded job of `session_key` runs, or ended and no poll returned
        its end, here or (as last told) on another node: OpenClaw's check before a subagent's
        `sessions_yield`."""
        self._expire()
        jobs = (*self._jobs.values(), *self._finished.values())
        if any(j.session_key == session_key and j.backgrounded and not j.collected for j in jobs):
            return True
        return self.peers is not None and self.peers.awaits_collection(session_key)

    def get(self, session_key: str, job_id: str) -> Job | None:
        """The backgrounded job `job_id` of `session_key`, running or kept after its end."""
        self._expire()
        job = self._jobs.get(job_id) or self._finished.get(job_id)
        if job is None or job.session_key != session_key or not job.backgrounded:
            return None
        return job

    def list(self, session_key: str) -> list[Job]:
        """`session_key`'s backgrounded jobs, running and kept, newest first."""
        self._expire()
        jobs = [
            j
            for j in (*self._jobs.values(), *self._finished.values())
            if j.session_key == session_key and j.backgrounded
        ]
        return sorted(jobs, key=lambda j: j.started_at, reverse=True)

    async def write(self, job: Job, data: bytes, *, eof: bool = False) -> None:
        """Write `data` to the job's stdin (and close it with `eof`; on a terminal, type
        Ctrl-D). Raises `ToolError` when stdin is closed or takes nothing for 10 s. A
        checkpoint."""
        stdin = job.tty or (job.proc.stdin if job.proc is not None else None)
        if stdin is None or not job.stdin_open:
            raise ToolError(f"Session {job.id} stdin is not writable.")
        try:
            with trio.fail_after(10):
                if data:
                    await stdin.send_all(data)
                if eof:
                    job.stdin_open = False
                    if job.tty is not None:
                        await job.tty.send_all(EOT)
                    else:
                        await stdin.aclose()
        except trio.TooSlowError:
            raise ToolError(f"Session {job.id} is not reading its stdin.") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            job.stdin_open = False
            raise ToolError(f"Session {job.id} stdin is not writable.") from None

    def kill_run(self, run_id: str, *, tell: bool = True) -> int:
        """Kill every running job `run_id` started (it was aborted), on the other nodes too
        (`tell`). Returns how many were killed here."""
        if tell and self.peers is not None:
            self.peers.kill_run(run_id)
        return sum(j.kill("aborted") for j in list(self._jobs.values()) if j.run_id == run_id)

    def clear_finished(self, session_key: str, *, tell: bool = True) -> int:
        """Forget `session_key`'s ended jobs (it was reset, as OpenClaw does), on the other
        nodes too (`tell`); its running ones go on. Returns how many were forgotten here."""
        if tell and self.peers is not None:
            self.peers.clear_finished(session_key)
        ended = [i for i, j in self._finished.items() if j.session_key == session_key]
        for job_id in ended:
            self._tell(self._finished.pop(job_id), listed=False)
        return len(ended)

    def kill_session(self, session_key: str, *, tell: bool = True) -> int:
        """Kill `session_key`'s running jobs and forget its ended ones (it was deleted), on
        the other nodes too (`tell`). Returns how many were killed here."""
        if tell and self.peers is not None:
            self.peers.kill_session(session_key)
        self.clear_finished(session_key, tell=False)
        jobs = [j for j in self._jobs.values() if j.session_key == session_key]
        return sum(j.kill("session-ended") for j in jobs)

    def kill_all(self) -> int:
        return sum(j.kill("shutdown") for j in list(self._jobs.values()))

    def statistics(self) -> dict[str, int]:
        """Running and kept jobs, and the output bytes they hold."""
        jobs = [*self._jobs.values(), *self._finished.values()]
        return {
            "running": len(self._jobs),
            "finished": len(self._finished),
            "bytes": sum(len(j.output.buf) + len(j.output.pending) for j in jobs),
        }

    async def wait_idle(self) -> None:
        """Until no job runs. A checkpoint."""
        while self._jobs:
            await next(iter(self._jobs.values())).done.wait()
        await trio.lowlevel.checkpoint()


def _open_terminal(job: Job) -> Terminal | None:
    try:
        return open_terminal()
    except OSError as exc:
        log.warning("exec job %s runs without a PTY: %s", job.id, exc)
        return None


def _sanitizer(job: Job, stream: str) -> OutputSanitizer:
    """`stream`'s sanitizer. stdout's sets `job.cursor_keys` from the DECCKM sequences it
    removes, and a terminal's answers the cursor position queries it removes."""
    if stream != "stdout":
        return OutputSanitizer()
    tty = job.tty

    def on_csi(sequence: str) -> None:
        if sequence in ("?1h", "?1l"):
            job.cursor_keys = "application" if sequence == "?1h" else "normal"
        elif tty is not None and sequence in ("6n", "?6n"):
            tty.answer_cursor_query()

    return OutputSanitizer(on_csi)


def _output_streams(job: Job, proc: trio.Process) -> list[tuple[trio.abc.ReceiveStream, str]]:
    """What `_run` pumps: the terminal's one stream, or the pipes."""
    if job.tty is not None:
        return [(job.tty, "stdout")]
    assert proc.stdout is not None and proc.stderr is not None
    return [(proc.stdout, "stdout"), (proc.stderr, "stderr")]


def _now_ms() -> int:
    return int(time.time() * 1000)


@asynccontextmanager
async def open_process_registry(
    *,
    limits: ProcessLimits | None = None,
    records_dir: Path | None = None,
    on_exit: Callable[[Job], None] | None = None,
) -> AsyncIterator[ProcessRegistry]:
    """A registry for the block. With `records_dir`, running jobs are recorded there and
    what a crashed owner left is killed first (`JobRecords.sweep`, in a worker thread). On
    exit every job is killed, its whole tree, and reaped (shielded)."""
    records = JobRecords(records_dir) if records_dir is not None else None
    if records is not None:
        killed = await trio.to_thread.run_sync(records.sweep)
        if killed:
            log.warning("killed %d processes left by exec jobs of a previous run", killed)
    async with trio.open_nursery() as nursery:
        registry = ProcessRegistry(
            nursery, limits=limits or ProcessLimits(), records=records, on_exit=on_exit
        )
        try:
            yield registry
        finally:
            registry.closing = True
            registry.kill_all()
            with trio.CancelScope(shield=True), trio.move_on_after(10):
                await registry.wait_idle()
            nursery.cancel_scope.cancel()
