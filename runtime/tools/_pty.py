"""Pseudo-terminals for `exec`'s `pty: true`: the command runs on a terminal, as OpenClaw's does.

`open_terminal` makes a pseudo-terminal (`os.openpty`) of OpenClaw's size, 120 columns by 30
rows, in UTF-8 mode; the job's keeper (`_proctree.spawn_tree(tty=...)`) gives the command
its slave side as stdin, stdout and stderr, in a session of its own with the terminal as its
controlling terminal, so the command sees a real terminal (`isatty`, `stty size`, job control
keys: a Ctrl-C sent to it interrupts its foreground process group, not the keeper). The
gateway keeps the master side, a `Terminal`:

- what the command writes comes out of it as one stream (stdout and stderr together, as the
  terminal shows them, with the line discipline's CRLF line ends and the echo of what was
  typed); the end of the output is the read that fails with EIO once no process holds the
  slave side any more, which `receive_some` reports as EOF;
- what is sent to it is typed at the command (`process write`/`send-keys`/`submit`/`paste`);
  an end of input is Ctrl-D (`EOT`), as OpenClaw's PTY stdin sends;
- a cursor position query (`ESC [ 6 n`) is answered `ESC [ 1 ; 1 R` (`answer_cursor_query`),
  as OpenClaw answers it, so a program that asks where its cursor is does not wait for a reply
  forever. The job's output sanitizer finds the query (`_ansi`, even split across reads) and
  calls it, as OpenClaw's does.

`TERM` is the command's own unless unset or `dumb`, then `xterm-256color` (OpenClaw's
default). Where no pseudo-terminal can be made (no /dev/ptmx), `open_terminal` raises
`OSError` and the caller runs the command without one.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import termios
from collections.abc import Mapping
from typing import Final

import trio

__all__ = [
    "PTY_COLS",
    "PTY_ROWS",
    "PTY_TERM",
    "Terminal",
    "open_terminal",
    "terminal_env",
]

PTY_COLS: Final = 120
PTY_ROWS: Final = 30
PTY_TERM: Final = "xterm-256color"
EOT: Final = b"\x04"

_IUTF8: Final = 0o40000
"""The input flag that makes erase remove a whole UTF-8 character (node-pty sets it; Python's
termios does not name it; the same bit on Linux and macOS)."""
_CURSOR_REPLY: Final = b"\x1b[1;1R"


class Terminal(trio.abc.Stream):
    """The master side of a job's pseudo-terminal (see the module docstring). Owns both fds:
    the slave one until `close_slave` (once the command holds its own copies), the master
    one until `aclose`. One task may receive while another sends."""

    def __init__(self, master: int, slave: int) -> None:
        self.slave: int | None = slave
        self._master = trio.lowlevel.FdStream(master)  # sets the fd non-blocking
        self._fd = master

    def close_slave(self) -> None:
        """Let go of the slave side: from now on the output ends when the command's tree is
        gone. Idempotent; not a checkpoint."""
        if self.slave is not None:
            slave, self.slave = self.slave, None
            os.close(slave)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """The next output, or b"" at its end (EIO: no process holds the terminal). A
        checkpoint; cancellation loses nothing."""
        try:
            data = await self._master.receive_some(max_bytes)
        except trio.BrokenResourceError as exc:
            cause = exc.__cause__
            if isinstance(cause, OSError) and cause.errno == errno.EIO:
                return b""
            raise
        return data

    def answer_cursor_query(self) -> None:
        """Type the reply to a cursor position query: the cursor is at the top left. Not a
        checkpoint."""
        try:  # a few bytes into a terminal's input: written at once, or not at all
            os.write(self._fd, _CURSOR_REPLY)
        except OSError:
            pass

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Type `data` at the command. Raises `trio.BrokenResourceError` when the terminal is
        gone. A checkpoint; it waits while the terminal's input buffer is full."""
        await self._master.send_all(bytes(data))

    async def wait_send_all_might_not_block(self) -> None:
        await self._master.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        """Close both sides. A checkpoint."""
        self.close_slave()
        await self._master.aclose()


def open_terminal(cols: int = PTY_COLS, rows: int = PTY_ROWS) -> Terminal:
    """A new pseudo-terminal of `cols` by `rows`, its input in UTF-8 mode. Raises `OSError`
    when the system has none to give (no /dev/ptmx, all in use). Not a checkpoint (a few
    syscalls)."""
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        mode = termios.tcgetattr(slave)
        mode[0] |= _IUTF8
        termios.tcsetattr(slave, termios.TCSANOW, mode)
    except (OSError, termios.error) as exc:
        os.close(master)
        os.close(slave)
        raise OSError(f"could not set up the pseudo-terminal: {exc}") from exc
    return Terminal(master, slave)


def terminal_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the terminal's `TERM`: its own unless unset, empty or `dumb`."""
    term = env.get("TERM", "").strip()
    return {**env, "TERM": term if term and term.lower() != "dumb" else PTY_TERM}
