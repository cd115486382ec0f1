"""The `apply_patch` tool: OpenClaw's patch envelope, applied to the workspace all at once.

The input (OpenClaw's format, from OpenAI's) is::

    *** Begin Patch
    *** Add File: path          then its lines, each starting with "+"
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       (optional, right after Update File)
    @@ optional context line    then hunk lines: " " context, "-" removed, "+" added;
                                "*** End of File" anchors a hunk at the end
    *** End Patch

(a `<<EOF` ... `EOF` heredoc around it is tolerated). `parse_patch` turns it into `FileOp`s
or raises `PatchError` naming the line. `apply_patch` plans every operation in memory first:
each path is resolved by `resolve_in_workspace` (so `..`, absolute paths elsewhere and symlink
escapes are refused exactly as `read`/`write`/`edit` refuse them), hunks are located as
OpenClaw locates them (exact, then ignoring trailing space, then surrounding space, then
Unicode punctuation), and later operations see the earlier ones' results. Only when the whole
plan holds does it touch the disk: new contents go to temporary files beside their targets,
the old files are renamed aside, the new ones renamed in, and the old ones removed last; a
failure on the way puts every file back. So a patch changes every file it names or none.

A refused path, a bad patch or a hunk that does not match is an error `ToolResult` in the shape
of what OpenClaw answers when its tool throws (`thrown_result`); the tool
does not raise for them. The disk work runs in one worker thread (not abandoned on
cancellation). Not a guard against another process writing the same files meanwhile.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path
from typing import Annotated

import msgspec
import trio
from attrs import define, frozen

from ._errors import PatchError, SandboxError
from ._sandbox import resolve_in_workspace
from ._tool import ToolContext, ToolResult, text_result, thrown_result

__all__ = [
    "ApplyPatchParams",
    "ApplyPatchTool",
    "FileOp",
    "Hunk",
    "PatchError",
    "apply_patch",
    "parse_patch",
]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
_ADD = "*** Add File: "
_DELETE = "*** Delete File: "
_UPDATE = "*** Update File: "
_MOVE = "*** Move to: "
_EOF = "*** End of File"


class ApplyPatchParams(msgspec.Struct, frozen=True):
    input: Annotated[
        str, msgspec.Meta(description="Patch content using the *** Begin Patch/End Patch format.")
    ]


@frozen
class Hunk:
    """One `@@` hunk of an update: its context line, the lines it expects and writes, which
    new lines are context (index into `old`), and whether it is anchored at the end."""

    context: str | None
    old: tuple[str, ...]
    new: tuple[str, ...]
    context_old: tuple[int | None, ...]
    at_end: bool


@frozen
class FileOp:
    """One file operation of a patch: `add` (with `contents`), `delete`, or `update` (with
    `hunks` and an optional `move_to`)."""

    kind: str
    path: str
    contents: str = ""
    hunks: tuple[Hunk, ...] = ()
    move_to: str | None = None


# --- parsing -------------------------------------------------------------------------------


def parse_patch(text: str) -> list[FileOp]:
    """The operations of a patch envelope, in order. Raises `PatchError` naming the line."""
    trimmed = text.strip()
    if not trimmed:
        raise PatchError("Invalid patch: input is empty.")
    lines = _envelope(re.split(r"\r?\n", trimmed))
    ops: list[FileOp] = []
    rest = lines[1:-1]
    lineno = 2
    while rest:
        op, used = _one_op(rest, lineno)
        ops.append(op)
        lineno += used
        rest = rest[used:]
    return ops


def _boundary_error(lines: list[str]) -> str | None:
    first, last = lines[0].strip(), lines[-1].strip()
    if first == BEGIN and last == END and len(lines) >= 2:
        return None
    if first != BEGIN:
        return f"The first line of the patch must be '{BEGIN}'"
    return f"The last line of the patch must be '{END}'"


def _envelope(lines: list[str]) -> list[str]:
    error = _boundary_error(lines)
    if error is None:
        return lines
    first, last = lines[0], lines[-1]
    if len(lines) >= 4 and first in ("<<EOF", "<<'EOF'", '<<"EOF"') and last.endswith("EOF"):
        inner = lines[1:-1]
        inner_error = _boundary_error(inner)
        if inner_error is None:
            return inner
        raise PatchError(inner_error)
    raise PatchError(error)


def _one_op(lines: list[str], lineno: int) -> tuple[FileOp, int]:
    first = lines[0].strip()
    if first.startswith(_ADD):
        used = 1
        contents: list[str] = []
        for line in lines[1:]:
            if not line.startswith("+"):
                break
            contents.append(line[1:] + "\n")
            used += 1
        return FileOp("add", first[len(_ADD) :], contents="".join(contents)), used
    if first.startswith(_DELETE):
        return FileOp("delete", first[len(_DELETE) :]), 1
    if first.startswith(_UPDATE):
        path = first[len(_UPDATE) :]
        rest = lines[1:]
        used = 1
        move_to = None
        if rest and rest[0].strip().startswith(_MOVE):
            move_to = rest[0].strip()[len(_MOVE) :]
            rest, used = rest[1:], used + 1
        hunks: list[Hunk] = []
        while rest:
            if not rest[0].strip():
                rest, used = rest[1:], used + 1
                continue
            if rest[0].startswith("***"):
                break
            hunk, n = _one_hunk(rest, lineno + used, first=not hunks)
            hunks.append(hunk)
            rest, used = rest[n:], used + n
        if not hunks:
            raise PatchError(
                f"Invalid patch hunk at line {lineno}: Update file hunk for path '{path}' is empty"
            )
        return FileOp("update", path, hunks=tuple(hunks), move_to=move_to), used
    raise PatchError(
        f"Invalid patch hunk at line {lineno}: '{lines[0]}' is not a valid hunk header. "
        "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
        "'*** Update File: {path}'"
    )


def _one_hunk(lines: list[str], lineno: int, *, first: bool) -> tuple[Hunk, int]:
    context: str | None = None
    start = 0
    if lines[0] == "@@":
        start = 1
    elif lines[0].startswith("@@ "):
        context, start = lines[0][3:], 1
    elif not first:
        raise PatchError(
            f"Invalid patch hunk at line {lineno}: Expected update hunk to start with a @@ "
            f"context marker, got: '{lines[0]}'"
        )
    if start >= len(lines):
        raise PatchError(f"Invalid patch hunk at line {lineno + 1}: Update hunk has no lines")
    old: list[str] = []
    new: list[str] = []
    context_old: list[int | None] = []
    at_end = False
    parsed = 0
    for line in lines[start:]:
        if line == _EOF:
            if parsed == 0:
                raise PatchError(
                    f"Invalid patch hunk at line {lineno + 1}: Update hunk has no lines"
                )
            at_end = True
            parsed += 1
            break
        marker, body = line[:1], line[1:]
        if marker in ("", " "):
            context_old.append(len(old))
            old.append(body)
            new.append(body)
        elif marker == "+":
            context_old.append(None)
            new.append(body)
        elif marker == "-":
            old.append(body)
        elif parsed == 0:
            raise PatchError(
                f"Invalid patch hunk at line {lineno + start}: Unexpected line found in update "
                f"hunk: '{line}'. Every line should start with ' ' (context line), '+' (added "
                "line), or '-' (removed line)"
            )
        else:
            break
        parsed += 1
    return Hunk(context, tuple(old), tuple(new), tuple(context_old), at_end), parsed + start


# --- matching and updating -----------------------------------------------------------------

_PUNCTUATION = str.maketrans(
    {
        **{chr(c): "-" for c in (*range(0x2010, 0x2016), 0x2212)},
        **{chr(c): "'" for c in range(0x2018, 0x201C)},
        **{chr(c): '"' for c in range(0x201C, 0x2020)},
        **{chr(c): " " for c in (0x00A0, *range(0x2002, 0x200B), 0x202F, 0x205F, 0x3000)},
    }
)
_NORMALIZERS = (
    lambda s: s,
    str.rstrip,
    str.strip,
    lambda s: s.strip().translate(_PUNCTUATION),
)


def _seek(lines: list[str], pattern: tuple[str, ...], start: int, at_end: bool) -> int | str:
    """Index of `pattern` in `lines` from `start`: an int, or "missing" / "N" (ambiguous)."""
    if not pattern:
        return start
    last = len(lines) - len(pattern)
    begin = max(start, last) if at_end else start
    if begin > last:
        return "missing"
    for norm in _NORMALIZERS:
        want = [norm(p) for p in pattern]
        found = [
            i
            for i in range(begin, last + 1)
            if all(norm(lines[i + k]) == want[k] for k in range(len(want)))
        ]
        if len(found) == 1:
            return found[0]
        if found:
            return str(len(found))
    return "missing"


@define
class _Line:
    text: str
    ending: str


def _split_source(contents: str) -> tuple[str, list[_Line]]:
    bom = "\ufeff" if contents.startswith("\ufeff") else ""
    body = contents[len(bom) :]
    lines = []
    for m in re.finditer(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+", body):
        raw = m.group(0)
        for ending in ("\r\n", "\r", "\n"):
            if raw.endswith(ending):
                lines.append(_Line(raw[: -len(ending)], ending))
                break
        else:
            lines.append(_Line(raw, ""))
    return bom, lines


def _changed(
    source: list[_Line], start: int, old_count: int, new: tuple[str, ...], preferred: str
) -> list[_Line]:
    replaced = source[start : start + old_count]
    nearby = next((line.ending for line in replaced if line.ending), "")
    if not nearby:
        around = [source[i].ending for i in (start, start - 1) if 0 <= i < len(source)]
        nearby = next((e for e in around if e), preferred)
    out = []
    for i, text in enumerate(new):
        ending = nearby
        if len(replaced) == len(new):
            ending = replaced[i].ending
        elif i == len(new) - 1 and replaced:
            ending = replaced[-1].ending
        elif i < len(replaced) - 1:
            ending = replaced[i].ending
        out.append(_Line(text, ending))
    return out


def update_text(contents: str, hunks: tuple[Hunk, ...], shown: str) -> str:
    """`contents` with `hunks` applied, line endings kept. Raises `PatchError` when a hunk's
    context or lines are missing or ambiguous."""
    bom, source = _split_source(contents)
    preferred = next((line.ending for line in source if line.ending), "\n")
    texts = [line.text for line in source]
    replacements: list[tuple[int, int, list[_Line]]] = []
    index = 0
    for hunk in hunks:
        if hunk.context is not None:
            found = _seek(texts, (hunk.context,), index, False)
            if found == "missing":
                raise PatchError(f"Failed to find context '{hunk.context}' in {shown}")
            if isinstance(found, str):
                raise PatchError(
                    f"Found {found} occurrences of context '{hunk.context}' in {shown}. The "
                    "context must be unique; use a more specific @@ context line."
                )
            index = found + 1
        if not hunk.old:
            at = index if hunk.context is not None and not hunk.at_end else len(source)
            added = _changed(source, at, 0, hunk.new, preferred)
            if added and at == len(source) and source and not source[-1].ending:
                added[-1].ending = ""
            replacements.append((at, 0, added))
            index = at
            continue
        old, new = hunk.old, hunk.new
        found = _seek(texts, old, index, hunk.at_end)
        if found == "missing" and old[-1] == "":
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = _seek(texts, old, index, hunk.at_end)
        if not isinstance(found, int):
            what = (
                "Failed to find expected lines in"
                if found == "missing"
                else (f"Found {found} occurrences of these lines in")
            )
            hint = (
                ""
                if found == "missing"
                else (". The lines must be unique; include more surrounding lines in the hunk")
            )
            raise PatchError(f"{what} {shown}{hint}:\n" + "\n".join(hunk.old))
        replacements.append((found, len(old), _hunk_lines(source, found, old, new, hunk)))
        index = found + len(old)
    result = list(source)
    for start, count, lines in sorted(replacements, key=lambda r: r[0], reverse=True):
        result[start : start + count] = lines
    for line in result[:-1]:
        line.ending = line.ending or preferred
    return bom + "".join(line.text + line.ending for line in result)


def _hunk_lines(
    source: list[_Line], at: int, old: tuple[str, ...], new: tuple[str, ...], hunk: Hunk
) -> list[_Line]:
    """The new lines of a matched hunk: context lines kept from the file as they are."""
    preferred = next((line.ending for line in source if line.ending), "\n")
    out: list[_Line] = []
    old_start = new_start = 0
    for new_i, old_i in enumerate(hunk.context_old):
        if old_i is None or old_i >= len(old) or new_i >= len(new):
            continue
        out += _changed(source, at + old_start, old_i - old_start, new[new_start:new_i], preferred)
        kept = source[at + old_i]
        out.append(_Line(kept.text, kept.ending))
        old_start, new_start = old_i + 1, new_i + 1
    out += _changed(source, at + old_start, len(old) - old_start, new[new_start:], preferred)
    return out


def _same(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        s = s.replace("\r\n", "\n").replace("\r", "\n")
        return s if not s or s.endswith("\n") else s + "\n"

    return norm(a) == norm(b)


# --- planning and committing ---------------------------------------------------------------


@define
class _Plan:
    """What the patch does to the disk: final contents by real path (None: removed), and
    the summary the model sees."""

    workspace: Path
    files: dict[Path, str | None]
    shown: dict[Path, str]
    added: list[str]
    modified: list[str]
    deleted: list[str]
    unchanged: list[str]

    def current(self, real: Path) -> str | None:
        """The file's content as the plan has it so far (None: absent)."""
        if real in self.files:
            return self.files[real]
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise PatchError(f"cannot read {self.shown.get(real, real)}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise PatchError(f"{self.shown.get(real, real)} is not a regular file")
            raw = f.read()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise PatchError(f"{self.shown.get(real, real)} is not a UTF-8 text file") from None

    def resolve(self, user_path: str) -> Path:
        if not user_path.strip():
            raise PatchError("a patch path is empty")
        try:
            real = resolve_in_workspace(self.workspace, user_path.strip(), for_write=True)
        except SandboxError as exc:
            raise PatchError(str(exc)) from None
        rel = os.path.relpath(real, os.path.realpath(self.workspace))
        self.shown.setdefault(real, rel)
        return real


def _note(bucket: list[str], name: str) -> None:
    if name not in bucket:
        bucket.append(name)


def plan_patch(workspace: Path, ops: list[FileOp]) -> _Plan:
    """Resolve and compute every operation without writing anything. Raises `PatchError`."""
    plan = _Plan(workspace, {}, {}, [], [], [], [])
    for op in ops:
        real = plan.resolve(op.path)
        shown = plan.shown[real]
        current = plan.current(real)
        if op.kind == "add":
            if current is not None:
                raise PatchError(
                    f'{shown} already exists. Use "*** Update File: {shown}" to change it, '
                    "or delete it earlier in the same patch."
                )
            plan.files[real] = op.contents
            _note(plan.added, shown)
        elif op.kind == "delete":
            if current is None:
                raise PatchError(f"cannot delete {shown}: file not found")
            plan.files[real] = None
            _note(plan.deleted, shown)
        else:
            if current is None:
                raise PatchError(f"Failed to read file to update {shown}: file not found")
            updated = update_text(current, op.hunks, shown)
            target = plan.resolve(op.move_to) if op.move_to else real
            if target != real:
                if plan.current(target) is not None:
                    raise PatchError(
                        f"{plan.shown[target]} already exists. Delete it earlier in the same "
                        "patch to replace it."
                    )
                plan.files[target], plan.files[real] = updated, None
                _note(plan.modified, plan.shown[target])
            elif _same(current, updated):
                _note(plan.unchanged, shown)
            else:
                plan.files[real] = updated
                _note(plan.modified, shown)
    return plan


def _commit(plan: _Plan) -> None:
    """Write the plan's files all or none (see the module docstring). Raises `OSError`."""
    tag = secrets.token_hex(4)
    staged: dict[Path, Path] = {}  # target -> its new content's temporary file
    aside: dict[Path, Path] = {}  # target -> where its old file waits
    placed: list[Path] = []
    made: list[Path] = []
    try:
        for real, content in plan.files.items():
            if content is None:
                continue
            for parent in reversed([real.parent, *real.parent.parents]):
                if not parent.exists():
                    parent.mkdir()
                    made.append(parent)
            tmp = real.with_name(f".{real.name}.patch-{tag}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
            with os.fdopen(fd, "wb") as f:
                f.write(content.encode("utf-8"))
            staged[real] = tmp
            try:
                os.chmod(tmp, stat.S_IMODE(os.lstat(real).st_mode))
            except FileNotFoundError:
                pass
        for real in plan.files:
            if os.path.lexists(real):
                backup = real.with_name(f".{real.name}.orig-{tag}")
                os.rename(real, backup)
                aside[real] = backup
            if real in staged:
                os.rename(staged.pop(real), real)
                placed.append(real)
    except BaseException:
        for real in placed:
            os.unlink(real)
        for real, backup in aside.items():
            os.rename(backup, real)
        for tmp in staged.values():
            os.unlink(tmp)
        for parent in reversed(made):
            os.rmdir(parent)
        raise
    for backup in aside.values():
        os.unlink(backup)


def apply_patch(workspace: Path, text: str) -> ToolResult:
    """Parse, plan and commit a patch in `workspace`; the tool's result. Synchronous disk
    I/O (call it in a worker thread). A bad patch or path is an error result."""
    try:
        ops = parse_patch(text)
        if not ops:
            raise PatchError("No files were modified.")
        plan = plan_patch(workspace, ops)
        _commit(plan)
    except PatchError as exc:
        return thrown_result("apply_patch", str(exc))
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        text = f"apply_patch failed, nothing changed: {exc.strerror or exc}{where}"
        return thrown_result("apply_patch", text)
    summary = {"added": plan.added, "modified": plan.modified, "deleted": plan.deleted}
    if plan.unchanged and not (plan.added or plan.modified or plan.deleted):
        message = f"No changes made to {', '.join(plan.unchanged)}."
    else:
        lines = ["Success. Updated the following files:"]
        lines += [f"A {p}" for p in plan.added]
        lines += [f"M {p}" for p in plan.modified]
        lines += [f"D {p}" for p in plan.deleted]
        message = "\n".join(lines)
    return text_result(message, details={"summary": summary})


class ApplyPatchTool:
    """`apply_patch`: add, update, move and delete files with one patch, all or nothing."""

    name = "apply_patch"
    description = "Patch one/many files. Input requires *** Begin Patch and *** End Patch."
    params = ApplyPatchParams
    mutating = True

    async def run(self, args: ApplyPatchParams, ctx: ToolContext) -> ToolResult:
        """A checkpoint: the patch is applied in a worker thread (finished if cancelled)."""
        if not args.input.strip():
            return thrown_result("apply_patch", "Provide a patch input.")
        return await trio.to_thread.run_sync(apply_patch, ctx.workspace, args.input)
