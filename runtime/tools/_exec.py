"""The `exec` tool: run a command in the workspace, stream its output, leave nothing behind.

A string command runs as `/bin/sh -c COMMAND`; a list is the argv itself. The process starts in
the workspace, in a session (and process group) of its own, with stdin from /dev/null and an
environment reduced to `ENV_ALLOWLIST` plus the call's `env`. stdout and stderr are read as
they arrive: each decoded chunk goes to `ctx.on_update`, and the combined output keeps its last
`max_output_bytes` for the result.

The whole process group gets SIGKILL (`killpg`) when the command times out, when the call is
cancelled, and also when the command's leader exits, so background children it left running
are not orphaned and cannot hold the pipes open. A process that escapes the group itself
(`setsid`) is beyond reach; after the group is killed its output is drained for at most
`_DRAIN_GRACE` seconds.

`exec` is not confined by the path sandbox: it is a shell, and can read anything the gateway's
user can. Whether an agent gets it at all is a matter of tool policy (`group:runtime`).
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
from typing import Annotated, ClassVar

import msgspec
import trio
from attrs import frozen

from runtime.llm._types import TextContent

from ._tool import ToolContext, ToolResult, text_result

__all__ = [
    "ENV_ALLOWLIST",
    "EXEC_DEFAULT_TIMEOUT",
    "EXEC_MAX_OUTPUT_BYTES",
    "ExecParams",
    "ExecTool",
]

EXEC_DEFAULT_TIMEOUT = 60.0
EXEC_MAX_TIMEOUT = 3600.0
EXEC_MAX_OUTPUT_BYTES = 64 * 1024
ENV_ALLOWLIST: tuple[str, ...] = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ")

# After the group is killed, how long the pipes may take to reach EOF (a process that left the
# group can keep them open forever).
_DRAIN_GRACE = 1.0
# How long to wait for a SIGKILLed leader to be reaped (only a process stuck in the kernel
# takes longer).
_REAP_TIMEOUT = 5.0

_EnvName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class ExecParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    command: Annotated[
        str | list[str],
        msgspec.Meta(
            description="A shell command (run with /bin/sh -c), or an argv list run directly."
        ),
    ]
    timeout: (
        Annotated[
            float,
            msgspec.Meta(
                gt=0,
                le=EXEC_MAX_TIMEOUT,
                description=f"Seconds before the command is killed (default {EXEC_DEFAULT_TIMEOUT:g}).",
            ),
        ]
        | None
    ) = None
    env: (
        Annotated[
            dict[_EnvName, str],
            msgspec.Meta(description="Extra environment variables for the command."),
        ]
        | None
    ) = None


@frozen
class ExecTool:
    """`exec`, with its limits: `default_timeout` (seconds) and `max_output_bytes`."""

    default_timeout: float = EXEC_DEFAULT_TIMEOUT
    max_output_bytes: int = EXEC_MAX_OUTPUT_BYTES

    name: ClassVar[str] = "exec"
    description: ClassVar[str] = (
        "Run a command in the workspace and return its combined stdout and stderr (the last "
        f"{EXEC_MAX_OUTPUT_BYTES // 1024} KiB) and exit code. A string runs with /bin/sh -c; "
        "a list runs as argv. Stdin is empty. The command and everything it started are "
        f"killed after timeout seconds (default {EXEC_DEFAULT_TIMEOUT:g})."
    )
    params: ClassVar[type[ExecParams]] = ExecParams
    mutating: ClassVar[bool] = True

    async def run(self, args: ExecParams, ctx: ToolContext) -> ToolResult:
        """Run the command. A checkpoint; cancellation kills the process group, then raises."""
        argv = ["/bin/sh", "-c", args.command] if isinstance(args.command, str) else args.command
        if not argv or not argv[0]:
            return text_result("exec: command is empty", is_error=True)
        extra = args.env or {}
        if any("\0" in part for part in (*argv, *extra.values())):
            return text_result("exec: command and env must not contain NUL bytes", is_error=True)
        timeout = args.timeout if args.timeout is not None else self.default_timeout
        output = _Output(self.max_output_bytes)
        started = trio.current_time()
        try:
            proc = await trio.lowlevel.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=ctx.workspace,
                env=_child_env({**ctx.env, **extra}),
                start_new_session=True,
            )
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            return text_result(
                f"exec could not start the command: {exc.strerror or exc}{where}", is_error=True
            )

        timed_out = False
        try:
            assert proc.stdout is not None and proc.stderr is not None
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump, proc.stdout, "stdout", output, ctx)
                nursery.start_soon(_pump, proc.stderr, "stderr", output, ctx)
                with trio.move_on_after(timeout) as deadline:
                    await proc.wait()
                timed_out = deadline.cancelled_caught
                # Also after a normal exit: background children must not outlive the call.
                _kill_group(proc.pid)
                with trio.move_on_after(_DRAIN_GRACE):
                    await output.drained.wait()
                nursery.cancel_scope.cancel()
        finally:
            # Timeout, cancellation or a crash in a pump: kill the group before anything else,
            # then reap the leader (shielded, so a cancelled call still leaves no zombie).
            _kill_group(proc.pid)
            with trio.move_on_after(_REAP_TIMEOUT, shield=True):
                await proc.wait()
            with trio.CancelScope(shield=True):
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        await pipe.aclose()

        code = proc.returncode
        text = output.text() or "(no output)"
        details: dict[str, object] = {
            "exitCode": code,
            "timedOut": timed_out,
            "durationMs": round((trio.current_time() - started) * 1000),
            "truncatedBytes": output.dropped,
        }
        status = ""
        if timed_out:
            status = f"[timed out after {timeout:g}s; the command and its children were killed]"
        elif code is not None and code < 0:
            status = f"[killed by {_signal_name(-code)}]"
        elif code:
            status = f"[exit code {code}]"
        if status:
            text = f"{text.rstrip()}\n\n{status}"
        return text_result(text, is_error=timed_out or code != 0, details=details)


class _Output:
    """The tail of the combined output, capped at `cap` bytes, and end-of-stream tracking."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._buf = bytearray()
        self.dropped = 0
        self._open_streams = 2
        self.drained = trio.Event()

    def append(self, chunk: bytes | bytearray) -> None:
        self._buf += chunk
        excess = len(self._buf) - self._cap
        if excess > 0:
            del self._buf[:excess]
            self.dropped += excess

    def stream_ended(self) -> None:
        self._open_streams -= 1
        if self._open_streams == 0:
            self.drained.set()

    def text(self) -> str:
        data = bytes(self._buf)
        if not self.dropped:
            return data.decode("utf-8", errors="replace")
        # The cut may have split a UTF-8 sequence: skip its continuation bytes.
        skip = 0
        while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
            skip += 1
        body = data[skip:].decode("utf-8", errors="replace")
        return f"…[truncated {self.dropped + skip} bytes of earlier output]\n{body}"


async def _pump(
    stream: trio.abc.ReceiveStream, name: str, output: _Output, ctx: ToolContext
) -> None:
    """Copy one pipe into `output`, handing each decoded chunk to `ctx.on_update`."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        async for chunk in stream:
            output.append(chunk)
            _update(ctx, name, decoder.decode(chunk))
        _update(ctx, name, decoder.decode(b"", final=True))
    finally:
        output.stream_ended()


def _update(ctx: ToolContext, name: str, text: str) -> None:
    if text:
        ctx.on_update(ToolResult(content=[TextContent(text=text)], details={"stream": name}))


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {key: os.environ[key] for key in ENV_ALLOWLIST if key in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(extra)
    return env


def _kill_group(pgid: int) -> None:
    """SIGKILL every process in the group; a group already gone is fine.

    The leader's pid is also the group id (a new session). Once the leader is reaped the id
    stays reserved while any member lives, so this never reaches an unrelated group unless the
    kernel wraps around its whole pid space in between.
    """
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
