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
from typing import Annotated, Literal, TypeVar

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

_PathArg = Annotated[str, msgspec.Meta(description="File path; relative/absolute.")]

# The parameters are OpenClaw 2026.9.6's (its read-tool-contract, ls and write schemas): the
# same names, types, bounds and descriptions, and unknown fields ignored as it ignores them.


class ReadParams(msgspec.Struct, frozen=True, rename="camel"):
    path: _PathArg
    offset: Annotated[int, msgspec.Meta(ge=1, description="Start line; 1-based.")] | None = None
    limit: Annotated[float, msgspec.Meta(description="Max lines.")] | None = None
    cursor: (
        Annotated[
            int,
            msgspec.Meta(ge=0, description="Character position within the start line; 0-based."),
        ]
        | None
    ) = None
    optional: (
        Annotated[
            Literal[True],
            msgspec.Meta(
                description="Missing paths return structured not_found instead of failing.",
                extra_json_schema={"type": "boolean", "const": True},
            ),
        ]
        | None
    ) = None


class LsParams(msgspec.Struct, frozen=True, rename="camel"):
    path: Annotated[str, msgspec.Meta(description="Directory; default cwd.")] | None = None
    limit: Annotated[float, msgspec.Meta(description="Max entries; default 500.")] | None = None
    after: (
        Annotated[str, msgspec.Meta(description="Filename cursor returned by the previous page.")]
        | None
    ) = None


class WriteParams(msgspec.Struct, frozen=True, rename="camel"):
    path: _PathArg
    content: Annotated[str, msgspec.Meta(description="File content.")]


def _positive(limit: float | None, default: int) -> int:
    """A model's line or entry count: whole, at least 1 (OpenClaw's normalizePositiveLimit)."""
    if limit is None or limit != limit or limit in (float("inf"), float("-inf")):
        return default
    return max(1, int(limit))


class ReadTool:
    """`read`: a text file by lines (`offset`, `limit`), or an image as image content."""

    name = "read"
    description = (
        "Read text/image file (jpg/png/gif/webp/bmp); images attach to model context. Text "
        f"caps {READ_DEFAULT_LINES} lines or {READ_MAX_BYTES // 1024}KB. Continue with "
        "offset/limit, or cursor within a long line."
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
    description = "Write/overwrite file; creates parent directories."
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
    if args.optional and not os.path.lexists(real):
        return text_result(
            f"Optional file not found: {args.path}.",
            details={
                "kind": "not_found",
                "status": "not_found",
                "path": args.path,
                "optional": True,
            },
        )
    try:
        fd = open_regular(real, os.O_RDONLY, shown)
    except Refused as exc:
        return text_result(str(exc), is_error=True)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(32)
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


def _from_cursor(line: bytes, cursor: int, lineno: int) -> bytes | str:
    """The start line from `cursor` (UTF-16 units, as OpenClaw counts them), or OpenClaw's
    message when the cursor is at its end or splits a character."""
    text = line.decode("utf-8", errors="replace")
    body = text.removesuffix(_NL)
    units = 0
    for index, ch in enumerate(body):
        if units == cursor:
            return text[index:].encode("utf-8")
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > cursor:
            return (
                f"Cursor {cursor} splits a UTF-16 surrogate pair; retry with "
                f"cursor={cursor - 1} or cursor={cursor + 1}."
            )
    return f"Cursor {cursor} is at or beyond the end of line {lineno} ({units} characters)."


def _read_lines(f: Iterable[bytes], shown: str, size: int, args: ReadParams) -> ToolResult:
    start = args.offset or 1
    limit = _positive(args.limit, READ_DEFAULT_LINES)
    cursor = args.cursor or 0
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
        if cursor and not taken:
            resumed = _from_cursor(raw, cursor, lineno)
            if isinstance(resumed, str):
                return text_result(resumed, is_error="splits" in resumed)
            raw = resumed
        if len(taken) >= limit:
            more = True
            break
        if used + len(raw) > READ_MAX_BYTES:
            if not taken:  # one line longer than the whole budget: show its start
                part = raw[:READ_MAX_BYTES].decode("utf-8", errors="ignore")
                taken.append(part.encode("utf-8"))
                after = cursor + len(part.encode("utf-16-le")) // 2
                note = (
                    f"[line {lineno} is {len(raw)} bytes from cursor {cursor}; showing "
                    f"{len(taken[0])}] [use offset={lineno} cursor={after} to continue]"
                )
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
        notice = note or (
            f"[showing lines {start}-{end} of {shown} ({size} bytes)] "
            f"[use offset={end + 1} to continue]"
        )
        text = f"{text.rstrip(_NL)}\n\n{notice}"
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
    limit = _positive(args.limit, LS_DEFAULT_LIMIT)
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
    if head[:2] == b"BM" and _is_bmp(head):
        return "image/bmp"
    return None


def _is_bmp(head: bytes) -> bool:
    """A BMP header, not text that starts with "BM": a known DIB header size, the pixel data
    after the headers, one colour plane."""
    if len(head) < 26:
        return False
    size, offset, dib = (int.from_bytes(head[i : i + 4], "little") for i in (2, 10, 14))
    planes_at = 22 if dib == 12 else 26
    planes = int.from_bytes(head[planes_at : planes_at + 2], "little")
    return (
        dib in (12, 40, 52, 56, 108, 124)
        and offset >= 14 + dib
        and (size == 0 or offset < size)
        and planes == 1
    )


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
