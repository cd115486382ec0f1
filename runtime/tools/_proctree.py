"""Process trees that cannot escape: every command runs under a keeper that owns its descendants.

`spawn_tree` starts a command under a small keeper process (the running Python, with
`KEEPER_SOURCE`): the keeper makes itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`),
so every process the command starts stays its descendant even after leaving the process group
or the session (`setsid`, double forks): an orphan is reparented to the keeper, not to init.
The keeper

- runs the command with the pipes the gateway gave it and closes its own copies, so the pipes
  reach EOF when the command's tree is gone; given a terminal instead (`tty`, the slave side
  of a pseudo-terminal, `_pty`), the command gets a session of its own with that terminal as
  its controlling terminal (`setsid`, `TIOCSCTTY`), its descendants still the keeper's;
- when the command's first process exits, SIGKILLs every descendant still running (what a
  shell left behind with `&`), reaps them, and exits with the command's status (killing itself
  with the same signal when the command died of one);
- on SIGTERM (`kill_tree`), SIGHUP or SIGINT kills the whole tree the same way;
- dies with its owner: `PR_SET_PDEATHSIG` sends it SIGUSR1 whenever the thread that started
  it exits (trio starts processes from worker threads, which come and go); when its parent
  process is then no longer its owner (a crash, kill -9), it kills the tree.

A keeper killed outright (SIGKILL, by someone else) leaves its tree to the system: its owner
then kills what carries the job's marker (`kill_marked`), and `JobRecords` covers that case
across a crash: each job's keeper pid, start time and marker are recorded in the state
dir while it runs, and `JobRecords.sweep` at start kills what a dead owner left, after checking
the pids are still the keeper (its start time and command line) or carry the job's marker in
their environment (`JOB_ENV`).

Cost: one extra small process per command (the keeper; about 15 ms of start on this machine).
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import trio

__all__ = [
    "JOB_ENV",
    "KEEPER_MARK",
    "JobRecords",
    "decode_status",
    "kill_marked",
    "kill_tree",
    "new_job_token",
    "spawn_tree",
    "terminate_tree",
]

log = logging.getLogger("clawlane.tools.proctree")

KEEPER_MARK: Final = "clawlane-process-keeper"
JOB_ENV: Final = "CLAWLANE_JOB"
"""The environment variable each job's processes carry: the job's token (`new_job_token`)."""

_KILL_GRACE: Final = 2.0
"""How long a keeper has to kill its tree and exit after SIGTERM before it is SIGKILLed."""

KEEPER_SOURCE: Final = r"""
import ctypes, os, signal, sys
mark, owner, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
tty = argv[:1] == ['--tty']  # 0-2 are a terminal's slave, for the command's own session
argv = argv[1:] if tty else argv
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
try:
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
except Exception:
    pass
me = os.getpid()

def tree():
    kids = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/' + name + '/stat', 'rb') as f:
                data = f.read()
        except OSError:
            continue
        ppid = int(data[data.rindex(b')') + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    out, stack = [], [me]
    while stack:
        for pid in kids.get(stack.pop(), ()):
            out.append(pid)
            stack.append(pid)
    return out

def kill_all():
    for pid in tree():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

killing = False
def on_signal(signum, frame):
    global killing
    killing = True
    kill_all()

def on_parent_death(signum, frame):
    if os.getppid() != owner:  # the owner process is gone (not merely the thread that forked us)
        on_signal(signum, frame)

for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, on_signal)
signal.signal(signal.SIGUSR1, on_parent_death)
libc.prctl(1, signal.SIGUSR1, 0, 0, 0)  # PR_SET_PDEATHSIG: at each death of our parent thread
if os.getppid() != owner:
    os._exit(70)
try:
    leader = os.fork()
except OSError as exc:
    sys.stderr.write('exec could not start the command: %s\n' % exc.strerror)
    os._exit(127)
if leader == 0:
    try:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(s, signal.SIG_DFL)
        if tty:  # a session of its own, with the terminal as its controlling terminal
            import fcntl, termios
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        os.execvp(argv[0], argv)
    except OSError as exc:
        where = ': ' + argv[0]
        os.write(2, ('exec could not start the command: %s%s\n' % (exc.strerror, where)).encode())
    os._exit(127)
if killing:  # the owner died while the command started
    kill_all()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
status = None
while True:
    try:
        pid, st = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    if pid == leader:
        status = st
    if status is not None or killing:
        try:  # no child left: no descendant either (orphans come to us): skip the scan
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            break
        kill_all()
if status is None or os.WIFEXITED(status):
    os._exit(os.WEXITSTATUS(status) if status is not None else 137)
sig = os.WTERMSIG(status)
try:
    signal.signal(sig, signal.SIG_DFL)
except (OSError, ValueError):
    pass
signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
os.kill(me, sig)
os._exit(128 + sig)
"""


def new_job_token() -> str:
    """A fresh job marker: `JOB_ENV`'s value for one job (unguessable, unique)."""
    return secrets.token_hex(12)


async def spawn_tree(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: int | None = subprocess.DEVNULL,
    tty: int | None = None,
) -> trio.Process:
    """Start `argv` under a keeper, with stdout and stderr as pipes and `stdin` (a pipe with
    `subprocess.PIPE`), or with `tty` (a pseudo-terminal's slave fd, which the caller still
    owns and closes) as all three, the command in a session of its own on that terminal.
    `env` is the command's whole environment (its `JOB_ENV` marks the tree). The keeper
    starts in a session of its own. Raises `OSError` when even the keeper cannot start (a
    missing `cwd`); a command that cannot be executed exits with 127 and a message on
    stderr. A checkpoint."""
    keeper = [sys.executable, "-I", "-S", "-c", KEEPER_SOURCE, KEEPER_MARK, str(os.getpid())]
    pipe = subprocess.PIPE if tty is None else tty
    return await trio.lowlevel.open_process(
        [*keeper, *(["--tty"] if tty is not None else []), *argv],
        stdin=stdin if tty is None else tty,
        stdout=pipe,
        stderr=pipe,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )


def terminate_tree(proc: trio.Process) -> None:
    """Ask `proc`'s keeper to kill its whole tree (SIGTERM). Not a checkpoint; a keeper that
    already exited is fine."""
    if proc.returncode is None:
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass


async def kill_tree(proc: trio.Process, *, grace: float = _KILL_GRACE) -> None:
    """Kill `proc`'s tree and reap its keeper: SIGTERM, then after `grace` seconds SIGKILL
    the keeper and its process group. Shielded from cancellation: when this returns the
    keeper is reaped (unless the kernel holds it longer than `grace` more seconds)."""
    with trio.CancelScope(shield=True):
        terminate_tree(proc)
        with trio.move_on_after(grace):
            await proc.wait()
            return
        log.warning("keeper %s did not exit after SIGTERM; killing it", proc.pid)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.kill()
        with trio.move_on_after(grace):
            await proc.wait()


def decode_status(returncode: int | None) -> tuple[int | None, str | None]:
    """`(exitCode, exitSignal)` of a keeper's return code: a negative one is a signal's name."""
    if returncode is None:
        return None, None
    if returncode < 0:
        try:
            return None, signal.Signals(-returncode).name
        except ValueError:
            return None, f"SIG{-returncode}"
    return returncode, None


# --- records across a crash -------------------------------------------------------------------


class JobRecords:
    """The running jobs' keepers, one small file each under `directory`, so that a gateway
    started after a crash can kill what the previous one left (`sweep`).

    A file `<token>.job` holds `owner-pid owner-start keeper-pid keeper-start` (start times in
    clock ticks since boot: a pid reused by another process does not pass for the one
    recorded). All methods do blocking file I/O (a few syscalls); callers run them in a
    worker thread."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def add(self, token: str, keeper_pid: int) -> None:
        """Record a running keeper (best effort: a failure is logged, the job runs)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            owner = os.getpid()
            line = f"{owner} {_start_ticks(owner)} {keeper_pid} {_start_ticks(keeper_pid)}\n"
            (self.directory / f"{token}.job").write_text(line)
        except OSError as exc:
            log.warning("could not record job %s: %s", token, exc)

    def remove(self, token: str) -> None:
        try:
            (self.directory / f"{token}.job").unlink(missing_ok=True)
        except OSError as exc:
            log.warning("could not remove the record of job %s: %s", token, exc)

    def sweep(self) -> int:
        """Kill the trees of recorded jobs whose owner is gone, and forget them; a record
        whose owner still runs (another worker on this state dir) is kept. Returns how many
        processes were killed."""
        try:
            files = sorted(self.directory.glob("*.job"))
        except OSError:
            return 0
        killed = 0
        for path in files:
            try:
                owner, owner_start, keeper, start = (int(x) for x in path.read_text().split())
            except (OSError, ValueError):
                path.unlink(missing_ok=True)
                continue
            if owner != os.getpid() and _start_ticks(owner) == owner_start:
                continue  # its owner still runs (another worker on this state dir)
            killed += _kill_leftovers(path.stem, keeper, start)
            path.unlink(missing_ok=True)
        return killed


def _kill_leftovers(token: str, keeper: int, start: int) -> int:
    killed = 0
    if _start_ticks(keeper) == start and KEEPER_MARK in _cmdline(keeper):
        killed += _sigkill(keeper)
    return killed + kill_marked(token)


def kill_marked(token: str) -> int:
    """SIGKILL every process whose environment carries job `token`'s marker (`JOB_ENV`):
    what a keeper killed outright left to the system. Returns how many. Blocking: it reads
    /proc (a few ms); run it in a worker thread."""
    killed = 0
    marker = f"{JOB_ENV}={token}".encode()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                environ = Path(f"/proc/{name}/environ").read_bytes()
            except OSError:
                continue
            if marker in environ.split(b"\0"):
                killed += _sigkill(int(name))
    return killed


def _sigkill(pid: int) -> int:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return 0
    return 1


def _start_ticks(pid: int) -> int:
    """The process's start time (clock ticks since boot), or -1 when it is gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return -1
    return int(data[data.rindex(b")") + 2 :].split()[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""
