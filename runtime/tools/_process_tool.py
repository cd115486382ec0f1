"""The `process` tool: OpenClaw's control of the background jobs `exec` left running.

Actions (OpenClaw's): `list` (the session's jobs, running and ended), `poll` (the output no
poll has read yet, and the exit status; `timeout` waits up to that many ms, at most 30,000, for
output or the end), `log` (the retained output by lines: `offset`/`limit`; neither gives the
last 200 lines), `write` (`data` to stdin, `eof` closes it, or types Ctrl-D on a terminal),
`send-keys` (`literal`, `hex` bytes and `keys` tokens, encoded as OpenClaw's encoder does, in
the job's cursor key mode: `_pty_keys`), `submit` (a CR), `paste` (`text`, bracketed unless
`bracketed` is false), `kill`, `clear` (forget an ended job) and `remove` (kill, or clear).
Input goes to the job's terminal when it runs on one (`exec` `pty: true`: keys reach a `read`
or a REPL as typed), else to its stdin pipe. A job is visible only to the session that
started it. Failures are error results with `details.status` `failed` and the message in
`details.error`.

A poll marks the output it returns read (`OutputLog.mark_read`) once its result is kept, as
OpenClaw 2026.9.6 does (its tool-result acknowledgement): a run aborted before shows the same
output to the next poll. A poll that returns a job's end collects it
(`ProcessRegistry.collect`, OpenClaw 2026.9.6's terminal poll): its queued completion is
taken back, so no heartbeat tells it again. It does so once the poll's result is kept
(`ToolContext.on_kept`, OpenClaw's acknowledgement of the result once its message is
persisted): a run aborted between the poll's return and its result leaves the completion
queued and the job uncollected, so the model is still told of the end. Only a poll collects: `log` and `list` collect nothing, `clear` and `remove` leave
the completion queued.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Final, Literal

import msgspec
import trio
from attrs import frozen

from ._errors import ToolError
from ._exec import RETENTION_CAP_NOTE
from ._process import TIMEOUT_RETRY_GUIDANCE, Job, ProcessRegistry
from ._pty_keys import (
    bracketed_paste,
    cursor_mode_sensitive,
    encode_keys,
    unknown_cursor_mode_message,
    utf16_length,
)
from ._tool import ToolContext, ToolResult, text_result

__all__ = ["ProcessParams", "ProcessTool", "act_here", "job_entry", "lost_entry", "lost_result"]

_LOG_TAIL_LINES: Final = 200
_MAX_POLL_WAIT_MS: Final = 30_000
_INPUT_WAIT_IDLE_S: Final = 15.0
_MAX_WRITE_BYTES: Final = 1 << 20

Action = Literal[
    "list", "poll", "log", "write", "send-keys", "submit", "paste", "kill", "clear", "remove"
]


class ProcessParams(msgspec.Struct, frozen=True):
    """OpenClaw 2026.9.6's process parameters; unknown fields are ignored, as its are."""

    action: Annotated[
        Action,
        msgspec.Meta(
            description="Process action (list|poll|log|write|send-keys|submit|paste|kill|clear|remove)"
        ),
    ]
    sessionId: (
        Annotated[str, msgspec.Meta(description="Required for every action except list.")] | None
    ) = None
    data: Annotated[str, msgspec.Meta(description="Data to write for write")] | None = None
    keys: (
        Annotated[list[str], msgspec.Meta(description="Key tokens to send for send-keys")] | None
    ) = None
    hex: (
        Annotated[list[str], msgspec.Meta(description="Hex bytes to send for send-keys")] | None
    ) = None
    literal: Annotated[str, msgspec.Meta(description="Literal string for send-keys")] | None = None
    text: Annotated[str, msgspec.Meta(description="Text to paste for paste")] | None = None
    bracketed: Annotated[bool, msgspec.Meta(description="Wrap paste in bracketed mode")] | None = (
        None
    )
    eof: Annotated[bool, msgspec.Meta(description="Close stdin after write")] | None = None
    offset: Annotated[float, msgspec.Meta(description="Log offset")] | None = None
    limit: Annotated[float, msgspec.Meta(description="Log length")] | None = None
    timeout: (
        Annotated[
            float,
            msgspec.Meta(
                ge=0,
                description="For poll: wait up to this many milliseconds before returning; "
                "max 30000 ms, higher values are clamped to 30000",
            ),
        ]
        | None
    ) = None


def _fail(text: str) -> ToolResult:
    return text_result(text, is_error=True, details={"status": "failed", "error": text})


@frozen
class ProcessTool:
    """`process` over the host's `ProcessRegistry`."""

    processes: ProcessRegistry

    name: ClassVar[str] = "process"
    description: ClassVar[str] = (
        "Control existing exec: list, poll, log, write, send-keys, submit, paste, kill. "
        "poll/log: status, output, quiet success, completion without auto-wake, input hints. "
        "Others: input/intervention."
    )
    params: ClassVar[type[ProcessParams]] = ProcessParams
    mutating: ClassVar[bool] = True

    async def run(self, args: ProcessParams, ctx: ToolContext) -> ToolResult:
        """Do `args.action`. A checkpoint (`poll` may wait, `write` may block up to 10 s). The
        output in a result was sanitized as it arrived; the rest (a command in `list`) is
        returned as written, as OpenClaw returns it."""
        registry, key = self.processes, ctx.session_key
        peers = registry.peers  # in a cluster: the jobs of this session on other nodes
        if args.action == "list":
            elsewhere = await peers.list(key) if peers is not None else []
            await trio.lowlevel.checkpoint()
            return _list([(job_entry(job), "") for job in registry.list(key)] + elsewhere)
        if args.sessionId and peers is not None and registry.get(key, args.sessionId) is None:
            answer = await peers.act(key, msgspec.to_builtins(args), ctx.on_kept)
            if answer is not None:
                return answer
        return await act_here(registry, key, args, ctx.on_kept)


OnKept = Callable[[Callable[[], None]], None]
"""`ToolContext.on_kept`: runs a commit once the call's result is kept."""


async def act_here(
    registry: ProcessRegistry,
    session_key: str,
    args: ProcessParams,
    on_kept: OnKept | None = None,
) -> ToolResult:
    """`args` (any action but `list`) on `session_key`'s jobs in `registry` (this node's).
    A poll marks its output read, and collects a job whose end it returns, once its result
    is kept (`on_kept`; None: at once). A checkpoint."""
    if not args.sessionId:
        await trio.lowlevel.checkpoint()
        return _fail("sessionId is required for this action.")
    job = registry.get(session_key, args.sessionId)
    if args.action == "poll":
        result, upto = await _poll(job, args)
        if job is not None:
            _on_poll_kept(registry, job, upto, on_kept)
        return result
    await trio.lowlevel.checkpoint()
    if args.action == "log":
        return (
            _log(job, args) if job is not None else _fail(f"No session found for {args.sessionId}")
        )
    if args.action in ("kill", "remove", "clear"):
        return _stop(registry, job, args)
    return await _input(registry, job, args)


def _on_poll_kept(registry: ProcessRegistry, job: Job, upto: int, on_kept: OnKept | None) -> None:
    """Once a poll of `job`'s result is kept (`on_kept`; None: at once): its output up to
    `upto` is read, and a job it returned the end of is collected (OpenClaw's terminal poll)."""

    def mark_read() -> None:
        job.output.mark_read(upto)

    commits = [mark_read]
    if not job.running:  # it returned the end

        def collect() -> None:
            registry.collect(job)

        commits.append(collect)
    for commit in commits:
        commit() if on_kept is None else on_kept(commit)


def job_entry(job: Job) -> dict[str, Any]:
    """`job` as `process list` entry (OpenClaw's shape)."""
    entry: dict[str, Any] = {
        "sessionId": job.id,
        "status": job.status,
        "startedAt": job.started_at,
        "runtimeMs": (job.ended_at or int(time.time() * 1000)) - job.started_at,
        "cwd": job.cwd,
        "command": job.command,
        "name": job.name,
        "tail": job.output.tail(),
        "truncated": job.output.dropped > 0,
    }
    if job.ended_at is not None:
        entry.update(_finished_details(job), status=job.status, endedAt=job.ended_at)
    else:
        entry.update(pid=job.pid, **_input_details(job))
    return entry


def _list(entries: list[tuple[dict[str, Any], str]]) -> ToolResult:
    """The `list` result of `entries` (each with where it runs: `""` here), newest first."""
    entries = sorted(entries, key=lambda found: found[0]["startedAt"], reverse=True)
    lines: list[str] = []
    for entry, where in entries:
        label = entry["name"] or entry["command"][:120]
        marker = " [overall-timeout]" if entry.get("exitReason") == "overall-timeout" else ""
        if entry.get("waitingForInput"):
            marker += " [input-wait]"
        if where:
            marker += f" [{where}]"
        duration = _duration(entry["runtimeMs"])
        lines.append(f"{entry['sessionId']} {entry['status']:<9} {duration}{marker} :: {label}")
    text = "\n".join(lines) or "No running or recent sessions."
    sessions = [entry for entry, _ in entries]
    return text_result(text, details={"status": "completed", "sessions": sessions})


def lost_entry(entry: dict[str, Any], lost_at: int) -> dict[str, Any]:
    """The `list` entry of a job whose node was found gone at `lost_at` (ms), from its last
    known `entry`: one that still ran ended then, `failed` (`exitReason` `node-lost`); one that
    had ended keeps its end. Its output is gone with its node."""
    known: tuple[str, ...] = ("sessionId", "startedAt", "cwd", "command", "name")
    lost: dict[str, Any] = {k: entry[k] for k in known if k in entry}
    lost.update(tail="", truncated=False)
    if entry.get("status") == "running":
        ended = max(lost_at, int(entry.get("startedAt") or lost_at))
        lost.update(status="failed", endedAt=ended, exitReason="node-lost", timedOut=False)
    else:
        ended = int(entry.get("endedAt") or lost_at)
        exit_keys = ("status", "endedAt", "exitCode", "exitSignal", "exitReason", "timedOut")
        lost.update({k: entry[k] for k in exit_keys if k in entry})
    lost["runtimeMs"] = ended - int(lost.get("startedAt") or ended)
    return lost


def lost_result(args: ProcessParams, entry: dict[str, Any], node: str) -> ToolResult:
    """`args` on a job whose node (`node`) is gone, from its `lost_entry`: `poll` and `log`
    tell how it ended, with no output; the input actions and `kill` fail as for an ended job;
    `clear` and `remove` succeed (the caller forgets it)."""
    sid, name = args.sessionId, entry.get("name") or ""
    gone = f"node {node} is gone, and its output with it"
    if args.action in ("clear", "remove"):
        verb = "Cleared" if args.action == "clear" else "Removed"
        return text_result(f"{verb} session {sid}.", details={"status": "completed"})
    if args.action not in ("poll", "log"):
        return _fail(f"No active session found for {sid} ({gone})")
    exit_keys = ("exitCode", "exitSignal", "exitReason", "timedOut")
    details = {"status": entry["status"], "sessionId": sid, "name": name}
    details.update({k: entry[k] for k in exit_keys if k in entry})
    if entry.get("exitReason") == "node-lost":
        end = f"Process lost: it ran on node {node}, which is gone."
    else:
        end = f"Process ended ({entry['status']}) on node {node}, which is gone since."
    if args.action == "log":
        details.update(total=0, totalLines=0, totalChars=0, truncated=False)
    text = f"(no output: {gone})\n\n{end}"
    return text_result(text, is_error=entry["status"] == "failed", details=details)


def _finished_details(job: Job) -> dict[str, Any]:
    details: dict[str, Any] = {"status": job.status, "sessionId": job.id, "exitCode": job.exit_code}
    if job.exit_signal is not None:
        details["exitSignal"] = job.exit_signal
    if job.exit_reason:
        details["exitReason"] = job.exit_reason
        details["timedOut"] = job.timed_out
    details["name"] = job.name
    return details


def _input_details(job: Job) -> dict[str, Any]:
    idle_s = max(0.0, time.monotonic() - job.last_output_at)
    return {
        "stdinWritable": job.stdin_open,
        "waitingForInput": job.stdin_open and idle_s >= _INPUT_WAIT_IDLE_S,
        "idleMs": int(idle_s * 1000),
    }


def _end_line(job: Job) -> str:
    if job.stopped_on_request:
        return f"\n\nProcess stopped by request ({job.exit_label()})."
    return f"\n\nProcess exited with {job.exit_label()}."


async def _poll(job: Job | None, args: ProcessParams) -> tuple[ToolResult, int]:
    """The poll's result, and the output offset it read up to (marked read by the caller
    once the result is kept)."""
    if job is None:
        await trio.lowlevel.checkpoint()
        return _fail(f"No session found for {args.sessionId}"), 0
    wait_ms = min(_MAX_POLL_WAIT_MS, args.timeout or 0)
    if wait_ms > 0 and job.running and not job.output.pending:
        with trio.move_on_after(wait_ms / 1000):
            while job.running and not job.output.pending:
                await job.changed.wait()
    else:
        await trio.lowlevel.checkpoint()
    unread, dropped, upto = job.output.peek()
    output = unread.strip()
    omitted = (
        "[earlier output is omitted from this poll; use action=log with offset and limit to "
        "inspect retained output]\n\n"
        if dropped
        else ""
    )
    cap = RETENTION_CAP_NOTE if job.output.dropped else ""
    body = cap + omitted + (output or "(no new output)")
    if job.running:
        hints = _input_details(job)
        tail = (
            f"\n\nNo new output for {hints['idleMs'] // 1000}s; this session may be waiting for "
            "input. Use process write, send-keys, submit, or paste to provide input."
            if hints["waitingForInput"]
            else "\n\nProcess still running."
        )
        details = {"status": "running", "sessionId": job.id, "name": job.name, **hints}
        return text_result(body + tail, details=details), upto
    text = body + _end_line(job)
    if job.timed_out:
        text += f"\n\n{TIMEOUT_RETRY_GUIDANCE}"
    result = text_result(text, is_error=job.status == "failed", details=_finished_details(job))
    return result, upto


def _lines(count: float | None) -> int | None:
    """A model's `offset`/`limit` as OpenClaw's sliceLogLines takes it: floored, at least 0."""
    return None if count is None else max(0, math.floor(count))


def _log(job: Job, args: ProcessParams) -> ToolResult:
    lines = job.output.text().replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    total = len(lines)
    default_tail = args.offset is None and args.limit is None
    # OpenClaw's sliceLogLines: a line count is whole (floored) and at least 0.
    limit = _LOG_TAIL_LINES if default_tail else _lines(args.limit)
    start = _lines(args.offset) or 0
    if args.offset is None and limit is not None:
        start = max(total - limit, 0)
    end = None if limit is None else start + limit
    body = "\n".join(lines[start:end])
    text = (RETENTION_CAP_NOTE if job.output.dropped else "") + (
        body or ("(no output yet)" if job.running else "(no output recorded)")
    )
    if default_tail and total > _LOG_TAIL_LINES:
        text += f"\n\n[showing last {_LOG_TAIL_LINES} of {total} lines; pass offset/limit to page]"
    if job.stopped_on_request:
        text += _end_line(job)
    if job.timed_out:
        text += f"\n\n{TIMEOUT_RETRY_GUIDANCE}"
    if job.running:
        details: dict[str, Any] = {
            "status": "running",
            "sessionId": job.id,
            "name": job.name,
            **_input_details(job),
        }
    else:
        details = _finished_details(job)
    details.update(
        total=total,
        totalLines=total,
        totalChars=len(job.output.text()),
        truncated=job.output.dropped > 0,
    )
    return text_result(text, details=details)


def _stop(registry: ProcessRegistry, job: Job | None, args: ProcessParams) -> ToolResult:
    sid = args.sessionId
    if args.action == "clear":
        if job is None or job.running:
            return _fail(f"No finished session found for {sid}")
        registry.forget(job)
        return text_result(f"Cleared session {sid}.", details={"status": "completed"})
    if job is None:
        missing = "No active session found for" if args.action == "kill" else "No session found for"
        return _fail(f"{missing} {sid}")
    if args.action == "kill":
        if not job.running:
            return _fail(f"No active session found for {sid}")
        job.kill("manual-cancel")
        return text_result(
            f"Termination requested for session {sid}.",
            details={"status": "completed", "name": job.name},
        )
    if job.running:  # remove a running job: kill it and hide it at once
        registry.hide(job)
        return text_result(
            f"Removed session {sid} (termination requested).",
            details={"status": "completed", "name": job.name},
        )
    registry.forget(job)
    return text_result(f"Removed session {sid}.", details={"status": "completed"})


async def _input(registry: ProcessRegistry, job: Job | None, args: ProcessParams) -> ToolResult:
    sid = args.sessionId
    if job is None or not job.running:
        return _fail(f"No active session found for {sid}")
    if not job.stdin_open:
        return _fail(f"Session {sid} stdin is not writable.")
    try:
        payload, said = _payload(args, job)
    except ValueError as exc:
        return _fail(str(exc))
    if len(payload) > _MAX_WRITE_BYTES:
        return _fail(f"{args.action}: at most {_MAX_WRITE_BYTES} bytes at a time")
    try:
        await registry.write(job, payload, eof=bool(args.eof) and args.action == "write")
    except ToolError as exc:
        return _fail(str(exc))
    return text_result(said, details={"status": "running", "sessionId": sid, "name": job.name})


def _payload(args: ProcessParams, job: Job) -> tuple[bytes, str]:
    """The bytes an input action writes, and what its result says. Raises `ValueError` with
    the failure's text."""
    sid = args.sessionId
    if args.action == "write":
        data = (args.data or "").encode()
        closed = " (stdin closed)" if args.eof else ""
        return data, f"Wrote {len(data)} bytes to session {sid}{closed}."
    if args.action == "submit":
        return b"\r", f"Submitted session {sid} (sent CR)."
    if args.action == "paste":
        text = args.text or ""
        wrapped = bracketed_paste(text, args.bracketed is not False)
        if not wrapped:
            raise ValueError("No paste text provided.")
        return wrapped.encode(), f"Pasted {utf16_length(text)} chars to session {sid}."
    keys = args.keys or []
    if job.cursor_keys == "unknown" and cursor_mode_sensitive(keys):
        raise ValueError(unknown_cursor_mode_message(str(sid)))
    mode = "normal" if job.cursor_keys == "unknown" else job.cursor_keys
    data, warnings = encode_keys(
        literal=args.literal, hex_bytes=args.hex or (), keys=keys, mode=mode
    )
    if not data:
        raise ValueError("No key data provided.")
    said = f"Sent {len(data)} bytes to session {sid}."
    if warnings:
        said += "\nWarnings:\n- " + "\n- ".join(warnings)
    return data, said


def _duration(ms: int) -> str:
    seconds = ms // 1000
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"
