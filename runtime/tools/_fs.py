"""The file tools `ls`, `read` and `write`, confined to the session workspace (`edit` is in
`_edit`, on the helpers here).

Each call resolves its path with `resolve_in_workspace` and does all its disk work in one
worker thread (`trio.to_thread.run_sync`, not abandoned on cancellation: a started read or
write finishes, then `Cancelled` is raised). Files are opened by their resolved real path with
`O_NOFOLLOW`, and checked to be regular files after opening. A refused path, a missing file or
an OS error becomes an error `ToolResult`; these tools do not raise for them.

`read` and `write` answer as OpenClaw 2026.9.6's do, word for word (paths named as the model
gave them). `read` (`_read_page`): a text file's lines from `offset`, at most `limit`, from
`cursor` within the first, shown with CRLF as LF and the BOM dropped, in pages sized to the
run's model's context window (`ToolContext.context_window`, or `ReadTool(context_window)`;
32 KB when unknown) with OpenClaw's continuation notices and `{kind, content, truncation?,
continuation?}` details, a `.env` file's credentials masked (`ENV_FILE`, `_redact`); its
messages for an empty file, an offset past the end, a directory, a missing file (another
spelling of its name read instead, with a note, or near names suggested: `_read_paths`);
`optional` (and a daily memory note, `memory/YYYY-MM-DD.md`) answers a missing file with
`{kind: not_found}`; an image (OpenClaw's detection: JPEG, a real non-animated PNG, GIF,
WebP, BMP) as image content, "Read image file [type]", converted, resized and re-encoded
as OpenClaw's read does (`_images`: a BMP as PNG, within 1200 px a side and 5 MiB, with
OpenClaw's notes, or a text saying why it was left out; an image of any size up to the
bound below is read and shrunk, as OpenClaw's, its decoding bounded by the pixel cap of
`_images`). Beyond OpenClaw: a file over `READ_MAX_TEXT_BYTES`, an image over
`READ_MAX_IMAGE_BYTES`, is refused (OpenClaw reads any file whole). `write`
(`_write_details`): "Successfully wrote N bytes to <path>" with OpenClaw's diff details, or
"No changes made" when the file already has those bytes. Both answer a blank path, a
directory and a file in place of a directory with OpenClaw's messages. Every failure of
read, write, edit and ls is answered in OpenClaw's thrown-tool shape (`in_thread`).
"""

from __future__ import annotations

import base64
import errno
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Final, Literal, TypeVar

import msgspec
import trio

from runtime.llm._types import ImageContent, TextContent, UserContent

from ._errors import SandboxError
from ._images import DEFAULT_MAX_DIMENSION_PX, prepare_read_image, sanitize_blocks
from ._read_page import ReadError, read_text
from ._read_paths import absolute, missing_path, name_variants, suggestions
from ._redact import redact_tool_payload_text
from ._sandbox import ESCAPES, NOT_A_DIRECTORY, resolve_in_workspace
from ._tool import ToolContext, ToolResult, text_result, thrown_result
from ._write_details import (
    WRITE_PRECHECK_READ_LIMIT_BYTES,
    js_utf8,
    unchanged_text,
    write_details,
    written_text,
)

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
READ_MAX_TEXT_BYTES = 64 * 1024 * 1024
"""clawlane's own bound: OpenClaw reads a text file whole, however large."""
READ_MAX_IMAGE_BYTES = READ_MAX_TEXT_BYTES
"""The same for an image file (OpenClaw reads any and shrinks it; a 36 MB PNG of 4000x3000 is
read and shrunk in half a second here)."""
LS_DEFAULT_LIMIT = 500
LS_MAX_BYTES = 50 * 1024

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

    def __init__(self, context_window: int | None = None) -> None:
        self.context_window = context_window
        """The model's context window in tokens, which sizes OpenClaw's pages (None: unknown,
        32 KB pages and no model budget)."""

    async def run(self, args: ReadParams, ctx: ToolContext) -> ToolResult:
        window = self.context_window or ctx.context_window
        side = ctx.image_max_side
        return await in_thread(
            self.name, lambda root, a: _read(root, a, window, side), ctx.workspace, args
        )


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
    """Run `fn` in a worker thread; a failure is answered as OpenClaw's file tools throw it
    (`thrown_result`): a refused path, an OS error or an error result of `fn`'s."""

    def call() -> ToolResult:
        try:
            result = fn(workspace, args)
        except SandboxError as exc:
            return thrown_result(name, _with_temp_hint(str(exc)))
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            return thrown_result(name, f"{exc.strerror or exc}{where}")
        if result.is_error and len(result.content) == 1 and result.details is None:
            block = result.content[0]
            if isinstance(block, TextContent):
                return thrown_result(name, block.text)
        return result

    return await trio.to_thread.run_sync(call)


def _with_temp_hint(message: str) -> str:
    """OpenClaw's file tools' hint on a path that leaves the workspace."""
    if not message.startswith(ESCAPES) or ".openclaw/tmp/" in message:
        return message
    return f"{message}. {_TEMP_HINT}"


_TEMP_HINT: Final = (
    "Use a relative path under `.openclaw/tmp/` inside the workspace for scratch/temp/meta "
    "files that file tools need to read or write later."
)


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


_DAILY_MEMORY: Final = re.compile(r"(?:\./)*memory/\d{4}-\d{2}-\d{2}\.md")
ENV_FILE: Final = re.compile(r"(?:^|[/\\])(?:\.env(?:\.[^/\\]+)?|[^/\\]+\.env)\Z", re.IGNORECASE)
"""OpenClaw's `.env` file path (`.env`, `.env.local`, `prod.env`): what `read` returns of one
has its credentials masked (OpenClaw's `redactSecrets`, `_redact`)."""


def _refused_as(exc: SandboxError, tail: str) -> bool:
    """Whether `resolve_in_workspace` refused a path for the reason its message ends with
    (the cases OpenClaw answers with its own messages rather than as an escape)."""
    return str(exc).endswith(tail)


def _resolve_read(workspace: Path, path: str) -> Path | None:
    """The real path to read; None when a component is not a directory (missing, as to
    OpenClaw's read: ENOTDIR)."""
    try:
        return resolve_in_workspace(workspace, path, for_write=False)
    except SandboxError as exc:
        if str(exc).startswith(NOT_A_DIRECTORY):
            return None
        raise


def _locate(workspace: Path, args: ReadParams) -> tuple[Path, str | None] | ToolResult:
    """The file to read and the note naming it when another spelling was found, or the
    answer for a missing file (OpenClaw's resolveReadToolPathFromAbsolute)."""
    real = _resolve_read(workspace, args.path)
    if real is not None and os.path.lexists(real):
        return real, None
    wanted = absolute(workspace, args.path)
    found: list[tuple[str, Path]] = []
    for variant in name_variants(wanted):
        candidate = _resolve_read(workspace, variant)
        if candidate is not None and os.path.lexists(candidate):
            if os.path.isdir(candidate):
                return _is_a_directory(args.path)
            found.append((variant, candidate))
    name = os.path.basename(wanted)
    if len(found) > 1:
        names = ", ".join(os.path.basename(v) for v, _ in found)
        return text_result(f"Read path is ambiguous: {name} matches {names}.", is_error=True)
    if found:
        variant, candidate = found[0]
        return candidate, f"[Resolved filename: {name} -> {os.path.basename(variant)}.]"
    if args.optional or _DAILY_MEMORY.fullmatch(args.path) is not None:
        details = {"kind": "not_found", "status": "not_found", "path": args.path}
        return text_result(
            f"Optional file not found: {args.path}.", details=details | {"optional": True}
        )
    near = suggestions(real if real is not None else Path(wanted))
    return text_result(f"File not found: {wanted}.{near}", is_error=True)


def _is_a_directory(path: str) -> ToolResult:
    return text_result(
        f"Read requires a file path, but {path} is a directory. List the directory, then "
        "read a specific file.",
        is_error=True,
    )


def _read(
    workspace: Path,
    args: ReadParams,
    context_window: int | None = None,
    image_max_side: int | None = None,
) -> ToolResult:
    """OpenClaw's `read` (see the module docstring and `_read_page`)."""
    received = {"path": args.path, "offset": args.offset, "limit": args.limit}
    received |= {"cursor": args.cursor, "optional": args.optional}
    blank = missing_path(received, frozenset())
    if blank is not None:
        return text_result(blank, is_error=True)
    located = _locate(workspace, args)
    if isinstance(located, ToolResult):
        return located
    real, note = located
    try:
        fd = open_regular(real, os.O_RDONLY, args.path)
    except Refused:
        if os.path.isdir(real):
            return _is_a_directory(args.path)
        return text_result(
            "Read only supports regular files; no read was attempted: "
            f"{absolute(workspace, args.path)}",
            is_error=True,
        )
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(64)
        mime = image_mime(head)
        limit = READ_MAX_IMAGE_BYTES if mime else READ_MAX_TEXT_BYTES
        if size > limit:
            what = f"a {mime} image" if mime else "a file"
            return text_result(
                f"{args.path} is {what} of {size} bytes, over the {limit} byte read limit",
                is_error=True,
            )
        data = head + f.read(limit + 1 - len(head))
    if mime is not None and image_mime(data) == mime:
        return _image_result(data, mime, args.path, note, image_max_side)
    try:
        text, details = read_text(
            data,
            offset=args.offset,
            limit=args.limit,
            cursor=args.cursor,
            context_window=context_window,
            note=note,
        )
    except ReadError as exc:
        return text_result(str(exc), is_error=True)
    if ENV_FILE.search(args.path):  # OpenClaw's redactSecrets over a `.env` file's page
        text = redact_tool_payload_text(text)
        if isinstance(details.get("content"), str):
            details = {**details, "content": redact_tool_payload_text(details["content"])}
    return text_result(text, details=details)


def _image_result(
    data: bytes, mime: str, path: str, note: str | None, max_side: int | None = None
) -> ToolResult:
    """OpenClaw's read of an image: its read tool's step (BMP to PNG, fit in 2000 px and
    4.5 MiB, with its notes), then its tool-result sanitizer (fit in 1200 px and 5 MiB as a
    JPEG, or a text saying why it was left out), labelled "read:<path>" (`_images`)."""
    prepared = prepare_read_image(data, mime)
    lines = [f"Read image file [{prepared.mime}]", *prepared.hints]
    if prepared.omitted is not None:
        lines.append(prepared.omitted)
    if note is not None:
        lines.insert(0, note)
    content: list[UserContent] = [TextContent(text="\n".join(lines))]
    if prepared.data is not None:
        b64 = base64.b64encode(prepared.data).decode("ascii")
        content.append(ImageContent(data=b64, mimeType=prepared.mime))
    side = DEFAULT_MAX_DIMENSION_PX if max_side is None else max(1, max_side)
    content = sanitize_blocks(content, f"read:{path}", max_side=side)
    shown = "\n".join(block.text for block in content if isinstance(block, TextContent))
    image = next((block for block in content if isinstance(block, ImageContent)), None)
    if image is None:
        return ToolResult(content=content, details={"kind": "text", "content": shown})
    return ToolResult(
        content=content, details={"kind": "image", "content": shown, "mimeType": image.mimeType}
    )


def _ls(workspace: Path, args: LsParams) -> ToolResult:
    real = resolve_in_workspace(workspace, args.path or ".", for_write=False)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return text_result("directory not found", is_error=True)  # OpenClaw's, path-less
    except NotADirectoryError:
        return text_result("directory not found", is_error=True)  # also a file, as OpenClaw
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


def image_mime(data: bytes) -> str | None:
    """The image type OpenClaw's read sends as an image (detectSupportedImageMimeType): JPEG
    (not JPEG-LS), PNG (a real one, not animated), GIF, WebP, BMP; other files are text."""
    if data.startswith(b"\xff\xd8\xff"):
        return None if data[3:4] == b"\xf7" else "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        is_png = len(data) >= 16 and data[8:12] == b"\0\0\0\x0d" and data[12:16] == b"IHDR"
        return "image/png" if is_png and not _animated_png(data) else None
    if data.startswith(b"GIF"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:2] == b"BM" and _is_bmp(data):
        return "image/bmp"
    return None


def _animated_png(data: bytes) -> bool:
    offset = 8
    while offset + 8 <= len(data):
        length = int.from_bytes(data[offset : offset + 4], "big")
        kind = data[offset + 4 : offset + 8]
        if kind == b"acTL":
            return True
        if kind == b"IDAT":
            return False
        following = offset + 12 + length
        if following <= offset or following > len(data):
            return False
        offset = following
    return False


def _is_bmp(head: bytes) -> bool:
    """A BMP header, not text that starts with "BM" (OpenClaw's isBmp)."""
    if len(head) < 26:
        return False
    size, offset, dib = (int.from_bytes(head[i : i + 4], "little") for i in (2, 10, 14))
    if (size != 0 and size < 26) or offset < 14 + dib or (size != 0 and offset >= size):
        return False
    if dib == 12:
        planes_at = 22
    elif 40 <= dib <= 124 and len(head) >= 30:
        planes_at = 26
    else:
        return False
    planes = int.from_bytes(head[planes_at : planes_at + 2], "little")
    bits = int.from_bytes(head[planes_at + 2 : planes_at + 4], "little")
    return planes == 1 and bits in (1, 4, 8, 16, 24, 32)


def write_bytes(real: Path, data: bytes, shown: str) -> None:
    fd = open_regular(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, shown)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _before_write(real: Path, shown: str, data: bytes) -> tuple[bool, bytes | None]:
    """Whether a file is at `real`, and its bytes when it is worth reading: OpenClaw's
    precheck reads a file of the new content's size (to tell an identical write), and
    otherwise one of at most `WRITE_PRECHECK_READ_LIMIT_BYTES` (for the diff)."""
    try:
        fd = open_regular(real, os.O_RDONLY, shown)
    except NotADirectoryError:  # a parent is a file: creating it fails
        return False, None
    except Refused:
        if not os.path.lexists(real):
            return False, None
        raise
    with os.fdopen(fd, "rb") as f:
        if os.fstat(f.fileno()).st_size > WRITE_PRECHECK_READ_LIMIT_BYTES:
            return True, None
        return True, f.read(WRITE_PRECHECK_READ_LIMIT_BYTES + 1)


def _write(workspace: Path, args: WriteParams) -> ToolResult:
    """OpenClaw's `write`: its texts and details (`_write_details`), the path as given."""
    blank = missing_path({"path": args.path, "content": args.content}, frozenset({"content"}))
    if blank is not None:
        return text_result(blank, is_error=True)
    try:
        real = resolve_in_workspace(workspace, args.path, for_write=True)
    except SandboxError as exc:  # OpenClaw's messages for these two
        if _refused_as(exc, " is a directory"):
            return text_result("not a file", is_error=True)
        if str(exc).startswith(NOT_A_DIRECTORY):
            return text_result("directory component must be a directory", is_error=True)
        raise
    shown = _display(workspace, real)
    data = js_utf8(args.content)
    try:
        existed, before = _before_write(real, shown, data)
        if before == data:
            return text_result(unchanged_text(args.path), details={"changed": False})
        details = write_details(args.path, args.content, data, existed=existed, before=before)
        real.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(real, data, shown)
    except Refused as exc:
        return text_result(str(exc), is_error=True)
    except FileExistsError:
        return text_result(f"cannot create {shown}: a parent is not a directory", is_error=True)
    return text_result(written_text(args.path, data), details=details)
