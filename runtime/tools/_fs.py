"""The file tools `ls`, `read` and `write`, confined to the session workspace (`edit` is in
`_edit`, on the helpers here).

Each call resolves its path with `resolve_in_workspace` and does all its disk work in one
worker thread (`trio.to_thread.run_sync`, not abandoned on cancellation: a started read or
write finishes, then `Cancelled` is raised). Files are opened by their resolved real path with
`O_NOFOLLOW`, and checked to be regular files after opening. A refused path, a missing file or
an OS error becomes an error `ToolResult`; these tools do not raise for them.

Line endings as OpenClaw's (`_line_endings`): `read` shows CRLF as LF (a lone CR kept, a BOM
dropped), which is what `edit` matches `oldText` against.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, TypeVar

import msgspec
import trio

from runtime.llm._types import ImageContent, TextContent

from ._errors import SandboxError
from ._line_endings import read_view_line
from ._sandbox import resolve_in_workspace
from ._tool import ToolContext, ToolResult, text_result

__all__ = [
    "LsParams",
    "LsTool",
    "ReadParams",
    "ReadTool",
    "WriteParams",
    "WriteTool",
]

READ_DEFAULT_LINES = 2000
READ_MAX_BYTES = 50 * 1024
READ_MAX_IMAGE_BYTES = 10 * 1024 * 1024
LS_DEFAULT_LIMIT = 500
LS_MAX_BYTES = 50 * 1024

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

_NL = "\n"

_PathArg = Annotated[
    str,
    msgspec.Meta(description="Path relative to the workspace (or absolute, inside it)."),
]


class ReadParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    path: _PathArg
    offset: (
        Annotated[int, msgspec.Meta(ge=1, description="First line to read (1-based).")] | None
    ) = None
    limit: Annotated[int, msgspec.Meta(ge=1, description="Maximum number of lines.")] | None = None


class LsParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    path: Annotated[str, msgspec.Meta(description="Directory; default cwd.")] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, description="Max entries; default 500.")] | None = None
    after: (
        Annotated[str, msgspec.Meta(description="Filename cursor returned by the previous page.")]
        | None
    ) = None


class WriteParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    path: _PathArg
    content: Annotated[str, msgspec.Meta(description="The whole new content of the file.")]


class ReadTool:
    """`read`: a text file by lines (`offset`, `limit`), or an image as image content."""

    name = "read"
    description = (
        "Read a file from the workspace. Text files are returned by lines: at most "
        f"{READ_DEFAULT_LINES} lines or {READ_MAX_BYTES // 1024} KiB per call; use offset "
        "and limit to page through larger files. PNG, JPEG, GIF and WebP images are "
        "returned as images."
    )
    params = ReadParams
    mutating = False

    async def run(self, args: ReadParams, ctx: ToolContext) -> ToolResult:
        return await in_thread(self.name, _read, ctx.workspace, args)


class LsTool:
    """`ls`: one page of a directory's entries, OpenClaw's shape (JSON-quoted names, `/` on
    directories, an `after` cursor for the next page)."""

    name = "ls"
    description = (
        "List directory entries in binary filename order, including dotfiles and links. "
        "Names are JSON-quoted; / marks actual directories. Pass the returned after cursor "
        "with the same path to continue."
    )
    params = LsParams
    mutating = False

    async def run(self, args: LsParams, ctx: ToolContext) -> ToolResult:
        return await in_thread(self.name, _ls, ctx.workspace, args)


class WriteTool:
    """`write`: create or overwrite a file, creating missing parent directories."""

    name = "write"
    description = (
        "Write a file in the workspace, replacing it if it exists. Missing parent "
        "directories are created."
    )
    params = WriteParams
    mutating = True

    async def run(self, args: WriteParams, ctx: ToolContext) -> ToolResult:
        return await in_thread(self.name, _write, ctx.workspace, args)


# --- the thread side ---------------------------------------------------------------------

_P = TypeVar("_P")


async def in_thread(
    name: str, fn: Callable[[Path, _P], ToolResult], workspace: Path, args: _P
) -> ToolResult:
    """Run `fn` in a worker thread, mapping refused paths and OS errors to error results."""

    def call() -> ToolResult:
        try:
            return fn(workspace, args)
        except SandboxError as exc:
            return text_result(f"{name} refused: {exc}", is_error=True)
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            return text_result(f"{name} failed: {exc.strerror or exc}{where}", is_error=True)

    return await trio.to_thread.run_sync(call)


class Refused(Exception):
    """A file-level problem worth a plain error result (missing, a directory, not UTF-8)."""


def _display(workspace: Path, real: Path) -> str:
    rel = os.path.relpath(real, os.path.realpath(workspace))
    return "." if rel == "." else rel


def open_regular(real: Path, flags: int, shown: str) -> int:
    """Open `real` without following a symlink there, and insist on a regular file."""
    try:
        fd = os.open(real, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except FileNotFoundError:
        raise Refused(f"file not found: {shown}") from None
    except IsADirectoryError:
        raise Refused(f"{shown} is a directory") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SandboxError(f"{shown!r} changed into a symlink; refused") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise Refused(f"{shown} is {what}")
    return fd


def _read(workspace: Path, args: ReadParams) -> ToolResult:
    real = resolve_in_workspace(workspace, args.path, for_write=False)
    shown = _display(workspace, real)
    try:
        fd = open_regular(real, os.O_RDONLY, shown)
    except Refused as exc:
        return text_result(str(exc), is_error=True)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(16)
        mime = _image_mime(head)
        if mime is not None:
            if size > READ_MAX_IMAGE_BYTES:
                return text_result(
                    f"{shown} is a {mime} image of {size} bytes, over the "
                    f"{READ_MAX_IMAGE_BYTES} byte limit",
                    is_error=True,
                )
            data = head + f.read()
            return ToolResult(
                content=[
                    TextContent(text=f"Read image file {shown} [{mime}]"),
                    ImageContent(data=base64.b64encode(data).decode("ascii"), mimeType=mime),
                ],
                details={"path": shown, "mimeType": mime, "bytes": len(data)},
            )
        f.seek(0)
        return _read_lines(f, shown, size, args)


def _read_lines(f: Iterable[bytes], shown: str, size: int, args: ReadParams) -> ToolResult:
    start = args.offset or 1
    limit = args.limit or READ_DEFAULT_LINES
    taken: list[bytes] = []
    used = 0
    lineno = 0
    more = False
    note = ""
    for raw in f:
        lineno += 1
        if lineno < start:
            continue
        raw = read_view_line(raw, first=lineno == 1)
        if len(taken) >= limit:
            more = True
            break
        if used + len(raw) > READ_MAX_BYTES:
            if not taken:  # one line longer than the whole budget: show its start
                taken.append(raw[:READ_MAX_BYTES])
                note = f"[line {lineno} is {len(raw)} bytes; showing its first {READ_MAX_BYTES}]"
            more = True
            break
        taken.append(raw)
        used += len(raw)
    if not taken:
        if size == 0:
            return text_result("(empty file)", details={"path": shown, "lines": 0})
        return text_result(
            f"offset {start} is beyond the end of {shown} ({lineno} lines)", is_error=True
        )
    end = start + len(taken) - 1
    text = b"".join(taken).decode("utf-8", errors="replace")
    if more:
        shown_range = note or f"[showing lines {start}-{end} of {shown} ({size} bytes)]"
        text = f"{text.rstrip(_NL)}\n\n{shown_range} [use offset={end + 1} to continue]"
    return text_result(
        text, details={"path": shown, "startLine": start, "endLine": end, "truncated": more}
    )


def _ls(workspace: Path, args: LsParams) -> ToolResult:
    real = resolve_in_workspace(workspace, args.path or ".", for_write=False)
    shown = _display(workspace, real)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return text_result(f"directory not found: {shown}", is_error=True)
    except NotADirectoryError:
        return text_result(f"{shown} is not a directory", is_error=True)
    try:
        with os.scandir(fd) as it:
            found = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    finally:
        os.close(fd)
    after = args.after
    entries = sorted(
        (e for e in found if after is None or os.fsencode(e[0]) > os.fsencode(after)),
        key=lambda e: os.fsencode(e[0]),
    )
    if not entries:
        return text_result("(empty directory)", details={"content": "(empty directory)"})
    limit = args.limit or LS_DEFAULT_LIMIT
    lines: list[str] = []
    used = 0
    for name, is_dir in entries[:limit]:
        line = _quoted(name + ("/" if is_dir else ""))
        # Leave room for the continuation note.
        if used + len(line.encode()) + 1 > LS_MAX_BYTES - 200 and lines:
            break
        lines.append(line)
        used += len(line.encode()) + 1
    text = "\n".join(lines)
    details: dict[str, object] = {}
    if len(lines) < len(entries):
        next_after = entries[len(lines) - 1][0]
        note = _quoted(next_after)
        text += f"\n\n[More entries. Continue with the same path and after={note}.]"
        details["nextAfter"] = next_after
    return text_result(text, details={"content": text, **details})


def _quoted(name: str) -> str:
    """A name as a JSON string; one that is not valid Unicode (undecodable bytes) is escaped."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(name)
    return json.dumps(name, ensure_ascii=False)


def _image_mime(head: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def write_bytes(real: Path, data: bytes, shown: str) -> None:
    fd = open_regular(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, shown)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _write(workspace: Path, args: WriteParams) -> ToolResult:
    real = resolve_in_workspace(workspace, args.path, for_write=True)
    shown = _display(workspace, real)
    data = args.content.encode("utf-8")
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(real, data, shown)
    except Refused as exc:
        return text_result(str(exc), is_error=True)
    except FileExistsError:
        return text_result(f"cannot create {shown}: a parent is not a directory", is_error=True)
    return text_result(f"wrote {len(data)} bytes to {shown}", details={"path": shown})
