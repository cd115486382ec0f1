"""The workspace sandbox: every path a file tool touches is resolved here first.

`resolve_in_workspace` walks the user's path one component at a time from the workspace's real
path, following symlinks itself (with `os.lstat` / `os.readlink`), so it can refuse the first
step that would leave the workspace and say which one it was: a `..` above the root, an
absolute path elsewhere, or a symlink (anywhere in the chain, dangling or not) whose target
lies outside. The result is then checked once more with `os.path.realpath` and
`Path.is_relative_to` against the workspace's real path, so the walk is never the only guard.

What it cannot promise: a path is checked, then used. A process that swaps a directory for a
symlink between the two steps (only the `exec` tool could, and `exec` is not confined by this
module at all: it runs a shell in the workspace) can still race it. File tools narrow that
window by opening the resolved path with `O_NOFOLLOW`. Hard links are not symlinks: a hard
link inside the workspace to a file outside cannot be told apart from an ordinary file.

Everything here is synchronous and touches the disk: call it from a worker thread
(`trio.to_thread.run_sync`), as the file tools do.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Final

from ._errors import SandboxError

__all__ = [
    "ESCAPES",
    "NOT_A_DIRECTORY",
    "ensure_workspace",
    "path_escapes",
    "resolve_in_workspace",
]

ESCAPES: Final = "Path escapes sandbox root ("
"""How OpenClaw's message for a path that leaves the workspace begins (`path_escapes`)."""
NOT_A_DIRECTORY: Final = "Path component is not a directory: "
"""How OpenClaw's message for a path through a file begins."""

# Like the kernel's own limit (MAXSYMLINKS), so a symlink loop fails fast with a clear message.
_MAX_SYMLINKS = 40

_SPECIAL_KINDS: tuple[tuple[int, str], ...] = (
    (stat.S_IFCHR, "character device"),
    (stat.S_IFBLK, "block device"),
    (stat.S_IFIFO, "FIFO"),
    (stat.S_IFSOCK, "socket"),
)


def ensure_workspace(path: Path) -> Path:
    """Create the workspace directory (and its parents) when missing; return its real path.

    Raises `SandboxError` when `path` exists and is not a directory. Synchronous disk I/O.
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise SandboxError(f"workspace {str(path)!r} exists and is not a directory") from None
    return Path(os.path.realpath(path))


def resolve_in_workspace(workspace: Path, user_path: str, *, for_write: bool) -> Path:
    """Resolve `user_path` (relative to `workspace`, or absolute inside it) to a real path.

    The returned path contains no symlinks and lies inside the workspace's real path. It need
    not exist (a new file, or a file the caller will report as missing); missing parent
    directories are allowed too (`write` creates them).

    Raises `SandboxError`, with a message meant for the model, when the path:
    contains a NUL byte or is empty; climbs above the workspace with `..`; is absolute and
    outside the workspace; passes through a symlink whose target is outside (including a
    dangling one, and the final component); names a device, FIFO or socket; goes through a
    component that is not a directory; or, with `for_write`, names an existing directory.
    """
    if "\0" in user_path:
        raise SandboxError("path contains a NUL byte")
    if not user_path.strip():
        raise SandboxError("path is empty")
    roots = _Roots(os.path.realpath(workspace), os.path.abspath(workspace))

    expanded = user_path
    if user_path == "~" or user_path.startswith("~/"):
        expanded = os.path.expanduser(user_path)
    if os.path.isabs(expanded):
        rest = roots.strip(expanded)
        if rest is None:
            raise SandboxError(path_escapes(roots.lexical, user_path))
    else:
        rest = expanded

    resolved = _walk(roots, rest, user_path)

    # The walk keeps `resolved` inside by construction; realpath re-checks what the OS sees now.
    real = Path(os.path.realpath(resolved))
    if not real.is_relative_to(roots.real):
        raise SandboxError(path_escapes(roots.real, user_path))
    _check_kind(real, user_path, for_write=for_write)
    return real


class _Roots:
    """The workspace as the OS sees it (`real`) and as it was named (`lexical`)."""

    __slots__ = ("lexical", "real")

    def __init__(self, real: str, lexical: str) -> None:
        self.real = real
        self.lexical = lexical

    def strip(self, absolute: str) -> str | None:
        """The part of an absolute path below the workspace, or None when it is elsewhere."""
        parts = PurePosixPath(absolute).parts
        for root in (self.real, self.lexical):
            root_parts = PurePosixPath(root).parts
            if parts[: len(root_parts)] == root_parts:
                return os.path.join(".", *parts[len(root_parts) :])
        return None


def _walk(roots: _Roots, rest: str, user_path: str) -> str:
    """Follow `rest` from the workspace root, one component at a time, never leaving it.

    `pending` is a stack of (component, the symlink it came from or None). Invariant: `current`
    is the root or a path below it whose existing components are real directories.
    """
    root = roots.real
    current = root
    pending: list[tuple[str, str | None]] = [
        (part, None) for part in reversed(PurePosixPath(rest).parts)
    ]
    links = 0
    while pending:
        part, via = pending.pop()
        if part == "..":
            if current == root:
                if via is not None:
                    raise SandboxError(symlink_escapes(roots, via))
                raise SandboxError(path_escapes(roots.lexical, user_path))
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            # Missing: nothing below it exists either, so the rest is plain text.
            current = candidate
            continue
        except NotADirectoryError:
            raise SandboxError(_not_a_directory(roots, current)) from None
        except OSError as exc:
            raise SandboxError(f"{user_path!r}: {exc.strerror or exc}") from exc
        if not stat.S_ISLNK(st.st_mode):
            if pending and not stat.S_ISDIR(st.st_mode):
                raise SandboxError(_not_a_directory(roots, candidate))
            current = candidate
            continue

        links += 1
        if links > _MAX_SYMLINKS:
            raise SandboxError(f"{user_path!r}: too many levels of symbolic links")
        link = _display(root, candidate)
        target = os.readlink(candidate)
        if os.path.isabs(target):
            inside = roots.strip(target)
            if inside is None:
                raise SandboxError(symlink_escapes(roots, link))
            current = root
            target = inside
        pending.extend((p, link) for p in reversed(PurePosixPath(target).parts))
    return current


def path_escapes(root: str, user_path: str) -> str:
    """OpenClaw's refusal of a path that leaves the workspace by its text (`..` above the
    root, an absolute path elsewhere): the root with the home directory as `~`, the path as
    given."""
    return f"{ESCAPES}{_home_short(root)}): {user_path}"


def symlink_escapes(roots: _Roots, link: str) -> str:
    """OpenClaw's refusal of a path through a symlink (`link`, relative to the workspace)
    whose target lies outside: the root and the link's absolute path, home as `~`."""
    where = os.path.join(roots.lexical, link)
    return f"Symlink escapes sandbox root ({_home_short(roots.real)}): {_home_short(where)}"


def _not_a_directory(roots: _Roots, real: str) -> str:
    """OpenClaw's refusal of a path through a file (`real`: the file, under the real root)."""
    where = os.path.join(roots.lexical, _display(roots.real, real))
    return f"{NOT_A_DIRECTORY}{_home_short(where)}"


def _home_short(path: str) -> str:
    """`path` with the home directory written `~`, C0/C1 controls and line separators as
    `\\uXXXX` (OpenClaw's shortPath and formatErrorDetail)."""
    home = os.path.expanduser("~")
    if path == home:
        path = "~"
    elif home not in ("", "/") and path.startswith(home.rstrip("/") + "/"):
        path = "~/" + path[len(home.rstrip("/")) + 1 :]
    return _UNSAFE_DETAIL.sub(lambda m: f"\\u{ord(m.group()):04x}", path)


_UNSAFE_DETAIL: Final = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _check_kind(real: Path, user_path: str, *, for_write: bool) -> None:
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SandboxError(f"{user_path!r}: {exc.strerror or exc}") from exc
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        if for_write:
            raise SandboxError(f"{user_path!r} is a directory")
        return
    kind = next((name for fmt, name in _SPECIAL_KINDS if stat.S_IFMT(mode) == fmt), "special file")
    raise SandboxError(f"{user_path!r} is a {kind}, not a regular file")


def _display(root: str, path: str) -> str:
    """`path` as the model knows it: relative to the workspace."""
    return os.path.relpath(path, root)
