"""The `exec` tool: run a command in the workspace, in the foreground or on into the background.

OpenClaw's parameters: `command` (a string runs as `/bin/sh -c COMMAND`; clawlane also takes an
argv list), `workdir` (relative to the workspace; default the workspace), `env` (overrides on
top of `ENV_ALLOWLIST`; `PATH` and loader variables refused, as OpenClaw's host exec does),
`timeoutSeconds` (default `tools.exec.timeoutSeconds`, 1800; 0 disables; `timeout` is the
older clawlane name), `yieldMs` (default `tools.exec.backgroundMs`, 10,000, clamped to
10–120,000), `background` and `pty`: the command runs on a pseudo-terminal (`_pty`: a real
terminal of 120 by 30, its output one stream with CRLF line ends, its input typed at it), or,
where none can be made, without one, the result starting with a warning that says so, as
OpenClaw's PTY fallback does. `host`, `elevated`, `ask`, `node` and `title` are accepted as
OpenClaw's schema has them; clawlane runs every command on the gateway host (`host` `sandbox`
or `node` is refused).

With a `ProcessRegistry` (`processes`) a command still running after `yieldMs` (at once with
`background`) goes on as a job of the session and the call returns `status: "running"` with
its `sessionId`, for the `process` tool; its stdin is then a pipe or its terminal (`process
write`, `send-keys`). Without one (the `process` tool is not available) the call waits for the
end and ignores both.

Every command runs under a keeper (`_proctree`): when it ends, or times out, or the call is
cancelled (a run's abort), its whole process tree is killed, including what left its process
group (`setsid`). The output streams to `ctx.on_update` while the call waits.

Output is sanitized as OpenClaw's is: each stream as it arrives (`_process`: escape sequences
removed, control characters escaped, before the bounds count it). Nothing else in a result is:
what is not output, such as a command echoed in a warning or in `process list`, is returned as
written, as OpenClaw returns it (its whole-text `sanitizeBinaryOutput` is in its terminal UI's
display code only).

`exec` is not confined by the path sandbox: it is a shell, and can read anything the gateway's
user can. Whether an agent gets it at all is a matter of tool policy (`group:runtime`); which
commands it runs, of the exec policy (`_exec_guard`): the agent's `tools.exec` tightened by
the host approvals document and by the call's `ask`, applied before anything starts (a command
it does not allow outright is refused, or waits for an operator's approval).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import msgspec
import trio
from attrs import frozen

from runtime.llm._types import TextContent

from ._exec_guard import ExecApprover, ExecReviewer, guard_exec
from ._exec_policy import ExecPolicy
from ._process import (
    TIMEOUT_RETRY_GUIDANCE,
    Job,
    JobLimitError,
    ProcessLimits,
    ProcessRegistry,
    open_process_registry,
)
from ._tool import ToolContext, ToolResult, text_result

__all__ = [
    "BACKGROUND_FOLLOW_UP",
    "ENV_ALLOWLIST",
    "EXEC_DEFAULT_TIMEOUT",
    "EXEC_MAX_OUTPUT_BYTES",
    "ExecParams",
    "ExecSettings",
    "ExecTool",
]

EXEC_DEFAULT_TIMEOUT = 1800.0
EXEC_DEFAULT_YIELD_MS = 10_000
EXEC_LEGACY_MAX_TIMEOUT = 3600.0
EXEC_MAX_OUTPUT_BYTES = ProcessLimits().max_output_bytes
ENV_ALLOWLIST: tuple[str, ...] = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ")
BACKGROUND_FOLLOW_UP = (
    "Use process (list/poll/log/write/send-keys/submit/paste/kill/clear/remove) for follow-up."
)
RETENTION_CAP_NOTE = (
    "[earlier output was discarded at the retention cap and cannot be recovered]\n\n"
)

_DEFAULT_POLICY = ExecPolicy()
_EnvName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
_KILL_WAIT = 10.0


class ExecParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    command: Annotated[
        str | list[str],
        msgspec.Meta(description="Shell command (run with /bin/sh -c), or an argv list."),
    ]
    workdir: (
        Annotated[str, msgspec.Meta(description="Omit/empty string: the workspace.")] | None
    ) = None
    env: (
        Annotated[
            dict[_EnvName, str],
            msgspec.Meta(description="Literal overrides; no expansion. Omit to inherit."),
        ]
        | None
    ) = None
    yieldMs: (
        Annotated[
            float,
            msgspec.Meta(ge=0, description="Milliseconds before backgrounding; default 10000."),
        ]
        | None
    ) = None
    background: (
        Annotated[bool, msgspec.Meta(description="Background now; timeoutSeconds applies.")] | None
    ) = None
    timeoutSeconds: (
        Annotated[float, msgspec.Meta(ge=0, description="Process lifetime in seconds; 0 disables.")]
        | None
    ) = None
    timeout: (
        Annotated[
            float,
            msgspec.Meta(
                gt=0,
                le=EXEC_LEGACY_MAX_TIMEOUT,
                description="Older name of timeoutSeconds (seconds).",
            ),
        ]
        | None
    ) = None
    pty: (
        Annotated[bool, msgspec.Meta(description="PTY for TTY-required CLIs/coding agents.")] | None
    ) = None
    title: Annotated[str, msgspec.Meta(description="A short title for the command.")] | None = None
    host: (
        Annotated[
            Literal["auto", "sandbox", "gateway", "node"],
            msgspec.Meta(description="Omit/auto: the gateway host."),
        ]
        | None
    ) = None
    elevated: Annotated[bool, msgspec.Meta(description="Host elevation if allowed.")] | None = None
    ask: (
        Annotated[str, msgspec.Meta(description="off|on-miss|always: can only ask more.")] | None
    ) = None
    node: Annotated[str, msgspec.Meta(description="Node id/name for host=node.")] | None = None


@frozen
class ExecSettings:
    """`tools.exec.*` as `exec` uses them (OpenClaw's defaults): `timeoutSeconds` (0: none),
    `backgroundMs`, `cleanupMs` (how long an ended background job is kept), `notifyOnExit`,
    `notifyOnExitEmptySuccess`."""

    timeout_s: float = EXEC_DEFAULT_TIMEOUT
    background_ms: int = EXEC_DEFAULT_YIELD_MS
    cleanup_ms: int = 1_800_000
    notify_on_exit: bool = True
    notify_on_exit_empty_success: bool = False
    policy: ExecPolicy = _DEFAULT_POLICY
    """The agent's exec policy from the config (`requested_policy`)."""
    approver: ExecApprover | None = None
    """The host's approvals and approvals document (None: asks settle by `askFallback`)."""
    reviewer: ExecReviewer | None = None
    """The auto-reviewer for `mode: auto` (None: a human is asked)."""

    def tool(self, processes: ProcessRegistry | None) -> ExecTool:
        """An `exec` with these settings over `processes`."""
        return ExecTool(
            processes=processes,
            default_timeout=self.timeout_s,
            background_ms=self.background_ms,
            keep_s=min(max(self.cleanup_ms, 60_000), 10_800_000) / 1000,
            notify_on_exit=self.notify_on_exit,
            notify_on_exit_empty_success=self.notify_on_exit_empty_success,
            policy=self.policy,
            approver=self.approver,
            reviewer=self.reviewer,
        )


@frozen
class ExecTool:
    """`exec`, with its settings (`ExecSettings`) and the host's `processes` (None: every
    call runs in the foreground, in a registry of its own)."""

    processes: ProcessRegistry | None = None
    default_timeout: float = EXEC_DEFAULT_TIMEOUT
    background_ms: int = EXEC_DEFAULT_YIELD_MS
    keep_s: float | None = None
    notify_on_exit: bool = True
    notify_on_exit_empty_success: bool = False
    max_output_bytes: int = EXEC_MAX_OUTPUT_BYTES
    policy: ExecPolicy = _DEFAULT_POLICY
    approver: ExecApprover | None = None
    reviewer: ExecReviewer | None = None

    name: ClassVar[str] = "exec"
    description: ClassVar[str] = (
        "Run shell now; background continuation supported. Completed calls return command "
        "output directly. Use process only when exec reports running with a sessionId; output "
        "text alone is not a process handle. Long run: automatic completion wake when enabled "
        "and output/failure occurs; otherwise process confirms completion. Quote arguments "
        "containing shell metacharacters, including URL query strings with `?` or `&`."
    )
    params: ClassVar[type[ExecParams]] = ExecParams
    mutating: ClassVar[bool] = True

    async def run(self, args: ExecParams, ctx: ToolContext) -> ToolResult:
        """Run the command. A checkpoint; cancellation kills its tree, then raises."""
        refused = _refusal(args)
        if refused is not None:
            return text_result(refused, is_error=True, details={"status": "failed"})
        argv = ["/bin/sh", "-c", args.command] if isinstance(args.command, str) else args.command
        cwd = _workdir(ctx.workspace, args.workdir)
        if isinstance(cwd, str):
            return _unavailable_workdir(cwd)
        timeout = _timeout(args, self.default_timeout)
        path = _child_env(dict(ctx.env)).get("PATH")
        denied = await guard_exec(
            self.policy,
            self.approver,
            args.command,
            cwd=cwd,
            path=path,
            ctx=ctx,
            call_ask=args.ask,
            env=args.env,
            reviewer=self.reviewer,
        )
        if denied is not None:  # the exec policy: nothing runs before an allow
            return text_result(denied, is_error=True, details={"status": "denied"})
        if self.processes is None:
            limits = ProcessLimits(max_output_bytes=self.max_output_bytes)
            async with open_process_registry(limits=limits) as private:
                return await self._run(private, argv, args, ctx, cwd, timeout, can_yield=False)
        return await self._run(self.processes, argv, args, ctx, cwd, timeout, can_yield=True)

    async def _run(
        self,
        registry: ProcessRegistry,
        argv: list[str],
        args: ExecParams,
        ctx: ToolContext,
        cwd: Path,
        limit_s: float | None,
        *,
        can_yield: bool,
    ) -> ToolResult:
        command = args.command if isinstance(args.command, str) else " ".join(args.command)
        try:
            job = await registry.start(
                argv,
                command=command,
                cwd=cwd,
                env=_child_env({**ctx.env, **(args.env or {})}),
                agent_id=ctx.agent_id,
                session_key=ctx.session_key,
                run_id=ctx.run_id,
                timeout_s=limit_s,
                keep_s=self.keep_s,
                stdin=can_yield,
                notify_on_exit=self.notify_on_exit,
                notify_empty_success=self.notify_on_exit_empty_success,
                on_chunk=lambda stream, text: _update(ctx, stream, text),
                pty=bool(args.pty),
            )
        except JobLimitError as exc:
            return text_result(str(exc), is_error=True, details={"status": "failed"})
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            message = f"exec could not start the command: {exc.strerror or exc}{where}"
            return text_result(message, is_error=True, details={"status": "failed"})
        window = self._yield_window(args) if can_yield else None
        try:
            with trio.move_on_after(window if window is not None else float("inf")):
                await job.done.wait()
        except BaseException:
            job.kill("aborted")
            with trio.CancelScope(shield=True), trio.move_on_after(_KILL_WAIT):
                await job.done.wait()
            raise
        if job.done.is_set():
            registry.forget(job)
            result = _finished_result(job, limit_s)
        else:
            registry.background(job)
            result = _running_result(job)
        return _with_pty_warning(result, args) if args.pty and job.tty is None else result

    def _yield_window(self, args: ExecParams) -> float:
        if args.background:
            return 0.0
        ms = args.yieldMs if args.yieldMs is not None else self.background_ms
        return min(max(ms, 10.0), 120_000.0) / 1000


def _with_pty_warning(result: ToolResult, args: ExecParams) -> ToolResult:
    """`pty: true` ran without a terminal (none could be made): say so first, as OpenClaw's
    fallback does."""
    command = args.command if isinstance(args.command, str) else " ".join(args.command)
    warning = f"Warning: PTY is not available; ran without PTY for `{command}`.\n\n"
    content = list(result.content)
    first = content[0] if content else None
    if isinstance(first, TextContent):
        content[0] = TextContent(text=warning + first.text)
    else:
        content.insert(0, TextContent(text=warning.rstrip()))
    return ToolResult(content=content, is_error=result.is_error, details=result.details)


def _refusal(args: ExecParams) -> str | None:
    if isinstance(args.command, list):
        if not args.command or not args.command[0]:
            return "exec: command is empty"
    elif not args.command.strip():
        return "exec: command is empty"
    extra = args.env or {}
    parts = [args.command] if isinstance(args.command, str) else args.command
    if any("\0" in part for part in (*parts, *extra.values(), args.workdir or "")):
        return "exec: command and env must not contain NUL bytes"
    blocked = sorted(
        k for k in extra if k == "PATH" or k.startswith(("LD_", "DYLD_")) or k == "OPENCLAW_SHELL"
    )
    if blocked:
        return f"exec: env may not override {', '.join(blocked)} on the gateway host"
    if args.host in ("sandbox", "node"):
        return f"exec host not available (requested {args.host}; clawlane runs on the gateway host)"
    return None


def _workdir(workspace: Path, raw: str | None) -> Path | str:
    """The directory to run in; the workdir as asked when it is blank or no directory."""
    if raw is None or raw == "":
        return workspace
    if not raw.strip():
        return raw
    path = (workspace / raw.strip()) if not os.path.isabs(raw.strip()) else Path(raw.strip())
    if not path.is_dir():
        return raw.strip()
    return path


def _unavailable_workdir(requested: str) -> ToolResult:
    """OpenClaw's answer for a workdir that is blank or no directory: the command is not run
    (its runtime-error outcome, with its words)."""
    text = (
        f'workdir "{requested}" is unavailable or not a directory: command was not executed. '
        'workdir is treated as a literal path; shell expansions such as "~" are not applied. '
        "Use an existing directory, omit an explicit workdir to use the default cwd, or "
        "update the configured default cwd."
    )
    details = {
        "status": "failed",
        "exitCode": None,
        "exitSignal": None,
        "failureKind": "runtime-error",
        "durationMs": 0,
        "aggregated": "",
        "timedOut": False,
        "cwd": requested,
    }
    return text_result(text, is_error=True, details=details)


def _timeout(args: ExecParams, default: float) -> float | None:
    if args.timeoutSeconds is not None:
        return args.timeoutSeconds or None
    if args.timeout is not None:
        return args.timeout
    return default or None


def _finished_result(job: Job, timeout: float | None) -> ToolResult:
    """OpenClaw's foreground result: `completed` (exit 0 or another code, which is said at
    the end) or `failed` (126/127, a signal, the timeout), with the retained output."""
    output = job.output.text()
    note = RETENTION_CAP_NOTE if job.output.dropped else ""
    details: dict[str, Any] = {
        "status": job.status,
        "exitCode": job.exit_code,
        "exitSignal": job.exit_signal,
        "exitReason": job.exit_reason,
        "durationMs": (job.ended_at or job.started_at) - job.started_at,
        "cwd": job.cwd,
        "truncatedBytes": job.output.dropped,
    }
    if job.status == "completed":
        text = output or "(no output)"
        if job.exit_code:
            text = f"{text.rstrip()}\n\n(Command exited with code {job.exit_code})"
        return text_result(note + text, details=details)
    reason = _failure_reason(job, timeout)
    details["timedOut"] = job.timed_out
    details["failureKind"] = _failure_kind(job)
    text = f"{output.rstrip()}\n\n{reason}" if output.strip() else reason
    return text_result(note + text, is_error=True, details=details)


def _failure_kind(job: Job) -> str:
    if job.exit_reason == "exit":
        return "shell-command-not-found" if job.exit_code == 127 else "shell-not-executable"
    if job.timed_out:
        return "overall-timeout"
    return "signal" if job.exit_signal is not None else "aborted"


def _failure_reason(job: Job, timeout: float | None) -> str:
    kind = _failure_kind(job)
    if kind == "shell-command-not-found":
        return "Command not found"
    if kind == "shell-not-executable":
        return "Command not executable (permission denied)"
    if kind == "overall-timeout":
        said = f"Command timed out after {timeout:g} seconds." if timeout else "Command timed out."
        return f"{said}\n\n{TIMEOUT_RETRY_GUIDANCE}"
    if kind == "signal":
        return f"Command aborted by signal {job.exit_signal}"
    return "Command aborted before exit code was captured"


def _running_result(job: Job) -> ToolResult:
    text = f"Command still running (session {job.id}, pid {job.pid}). {BACKGROUND_FOLLOW_UP}"
    return text_result(
        text,
        details={
            "status": "running",
            "sessionId": job.id,
            "pid": job.pid,
            "startedAt": job.started_at,
            "cwd": job.cwd,
            "tail": job.output.tail(),
            "followUp": BACKGROUND_FOLLOW_UP,
        },
    )


def _update(ctx: ToolContext, name: str, text: str) -> None:
    ctx.on_update(ToolResult(content=[TextContent(text=text)], details={"stream": name}))


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {key: os.environ[key] for key in ENV_ALLOWLIST if key in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(extra)
    return env
