"""The `apply_patch` tool: OpenClaw's patch envelope (`_patch_parse`), applied to the workspace
all at once, answering as OpenClaw 2026.9.6's own apply_patch answers.

`apply_patch` plans every operation in memory first, in order, as OpenClaw performs them one
by one: each path is resolved by `resolve_in_workspace` (so `..`, absolute paths elsewhere and
symlink escapes are refused with OpenClaw's words, as `read`/`write`/`edit` refuse them; a
leading `@` is read as OpenClaw reads it), an update's hunks are applied by `_patch_update`,
and later operations see the earlier ones' results. The failures are OpenClaw's: "Cannot
create <path>: the file already exists. ...", "file not found" (a delete), "directory is not
empty", "not a file", "Failed to read file to update <absolute path>: ...", and the hunk
errors naming the absolute path. The success text lists what was added, modified (a move
under its new name) and deleted, in that order, each once, and `details.summary` holds the
same lists; a patch whose updates change nothing says "No changes made to <paths>.".

Unlike OpenClaw, which leaves the operations before a failing one done, clawlane touches the
disk only when the whole plan holds: new contents go to temporary files beside their targets,
the old files (and the empty directories a patch deletes) are renamed aside, the new ones
renamed in, and the old ones removed last; a failure on the way puts every file back. So a
patch changes every file it names or none.

A refused path, a bad patch or a hunk that does not match is an error `ToolResult` in the shape
of what OpenClaw answers when its tool throws (`thrown_result`); the tool does not raise for
them. The disk work runs in one worker thread (not abandoned on cancellation). Not a guard
against another process writing the same files meanwhile.
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
from attrs import define, field, frozen

from ._errors import PatchError, SandboxError
from ._patch_parse import FileOp, Hunk, js_trim, parse_patch
from ._patch_update import same_text, update_text
from ._sandbox import ESCAPES, path_escapes, resolve_in_workspace
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


class ApplyPatchParams(msgspec.Struct, frozen=True):
    input: Annotated[
        str, msgspec.Meta(description="Patch content using the *** Begin Patch/End Patch format.")
    ]


@frozen
class _Target:
    """A patch path resolved: the real path, how OpenClaw's summary names it (relative to the
    workspace) and how its update errors name it (absolute, under the workspace as given)."""

    real: Path
    display: str
    where: str


def _literal_at(workspace: Path, raw: str) -> tuple[str, str]:
    """OpenClaw's reading of a leading `@` (its preserveAtPrefixedRelativePath, then
    normalizeFileReferencePrefix): a file reference unless `./@...` (or its first
    component) exists in the workspace. The path its messages name, and the path meant."""
    if not raw.startswith("@"):
        return raw, raw
    stripped = raw[1:]
    if (
        not stripped
        or stripped == "~"
        or stripped.startswith(("~/", "~\\", "/", "\\"))
        or re.match(r"(?i)file://|[a-z]:[\\/]", stripped)
    ):
        preserved = raw
    else:
        top = raw.replace("\\", "/").split("/")[0]
        exists = os.path.exists(workspace / raw) or os.path.exists(workspace / top)
        preserved = "./" + raw if exists else raw
    if not preserved.startswith("@"):
        return preserved, preserved
    meant = preserved[1:]
    return preserved, "./" + meant if meant.startswith("@") else meant


@define
class _Plan:
    """What the patch does to the disk: final contents by real path (None: removed), the
    empty directories it removes, and what the model is told."""

    workspace: Path
    files: dict[Path, str | None] = field(factory=dict)
    gone_dirs: dict[Path, None] = field(factory=dict)
    summary: dict[str, list[str]] = field(
        factory=lambda: {"added": [], "modified": [], "deleted": []}
    )
    no_op: dict[str, None] = field(factory=dict)

    def target(self, raw: str) -> _Target:
        named, meant = _literal_at(self.workspace, raw)
        try:
            real = resolve_in_workspace(self.workspace, meant, for_write=False)
        except SandboxError as exc:
            message = str(exc)
            if message.startswith(ESCAPES) and message.endswith(f": {meant}"):
                message = message[: -len(meant)] + named  # OpenClaw names the path as written
            raise PatchError(message) from None
        root = Path(os.path.realpath(self.workspace))
        display = os.path.relpath(real, root)
        if display == ".":
            return _Target(real, self.workspace.name, str(self.workspace))
        return _Target(real, display, os.path.join(self.workspace, display))

    def kind(self, real: Path) -> str:
        """The kind of `real` ("file", "dir", "other" or "missing") as the plan has it so far."""
        if real in self.files:
            return "missing" if self.files[real] is None else "file"
        if any(content is not None and real in p.parents for p, content in self.files.items()):
            return "dir"
        if real in self.gone_dirs or any(d in real.parents for d in self.gone_dirs):
            return "missing"
        try:
            mode = os.lstat(real).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
        return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"

    def empty_dir(self, real: Path) -> bool:
        """Whether the directory `real` is empty once the plan so far is done."""
        if any(content is not None and real in p.parents for p, content in self.files.items()):
            return False
        with os.scandir(real) as entries:
            for entry in entries:
                child = Path(entry.path)
                if not (self.files.get(child, "") is None or child in self.gone_dirs):
                    return False
        return True

    def read(self, target: _Target) -> str:
        """The text an update starts from, or OpenClaw's error for a file it cannot read."""
        failed = f"Failed to read file to update {target.where}: "
        kind = self.kind(target.real)
        if kind != "file":
            reason = "path not found" if kind == "missing" else "unsafe path"
            raise PatchError(f"{failed}Failed boundary read for {target.where} ({reason})")
        planned = self.files.get(target.real)
        if planned is not None:
            return planned
        try:
            return target.real.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise PatchError(
                f"{failed}File {target.where} is not valid UTF-8 and cannot be edited safely. | "
                "The encoded data was not valid for encoding utf-8 | "
                "ERR_ENCODING_INVALID_ENCODED_DATA"
            ) from None
        except OSError as exc:
            raise PatchError(f"{failed}{exc.strerror or exc}") from None

    def create(self, target: _Target, contents: str, hint: str) -> None:
        """Plan a new file where none may be (OpenClaw's createFileExclusive)."""
        self.not_root(target)
        kind = self.kind(target.real)
        if kind == "file":
            raise PatchError(f"Cannot create {target.display}: the file already exists. {hint}")
        if kind != "missing":
            raise PatchError("not a file")
        self.files[target.real] = contents

    def not_root(self, target: _Target) -> None:
        """OpenClaw refuses to create or remove the workspace itself as an escape."""
        if target.real == Path(os.path.realpath(self.workspace)):
            raise PatchError(path_escapes(str(self.workspace), str(self.workspace)))

    def note(self, bucket: str, name: str) -> None:
        if name not in self.summary[bucket]:
            self.summary[bucket].append(name)


def _delete(plan: _Plan, op: FileOp) -> None:
    target = plan.target(op.path)
    plan.not_root(target)
    kind = plan.kind(target.real)
    if kind == "missing":
        raise PatchError("file not found")
    if kind == "dir":
        if not plan.empty_dir(target.real):
            raise PatchError("directory is not empty")
        plan.gone_dirs[target.real] = None
    else:
        plan.files[target.real] = None
    plan.note("deleted", target.display)


def _update(plan: _Plan, op: FileOp) -> None:
    target = plan.target(op.path)
    moved = plan.target(op.move_to) if op.move_to is not None else None
    current = plan.read(target)
    updated = update_text(current, op.hunks, target.where)
    if moved is not None and moved.real != target.real:
        plan.no_op.pop(target.display, None)
        plan.create(moved, updated, "Delete it earlier in the same patch to replace it.")
        plan.files[target.real] = None
        plan.note("modified", moved.display)
    elif same_text(current, updated):
        plan.no_op[target.display] = None
    else:
        plan.no_op.pop(target.display, None)
        plan.files[target.real] = updated
        plan.note("modified", target.display)


def plan_patch(workspace: Path, ops: list[FileOp]) -> _Plan:
    """Resolve and compute every operation, in order, without writing anything. Raises
    `PatchError` with OpenClaw's message for the first one that fails."""
    plan = _Plan(workspace)
    for op in ops:
        if op.kind == "add":
            target = plan.target(op.path)
            hint = (
                f'Use "*** Update File: {target.display}" to change it, or delete it earlier '
                "in the same patch."
            )
            plan.create(target, op.contents, hint)
            plan.note("added", target.display)
        elif op.kind == "delete":
            _delete(plan, op)
        else:
            _update(plan, op)
    return plan


def _commit(plan: _Plan) -> None:
    """Write the plan's files all or none (see the module docstring). Raises `OSError`."""
    tag = secrets.token_hex(4)
    root = Path(os.path.realpath(plan.workspace))
    staged: dict[Path, Path] = {}  # target -> its new content's temporary file
    aside: dict[Path, Path] = {}  # target -> where its old file (or empty directory) waits
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
                f.write(content.encode("utf-8", "surrogatepass"))
            staged[real] = tmp
            try:
                os.chmod(tmp, stat.S_IMODE(os.lstat(real).st_mode))
            except FileNotFoundError:
                pass
        gone = [d for d in plan.gone_dirs if not any(d in p.parents for p in staged)]
        for real in [*plan.files, *gone]:
            if os.path.lexists(real):
                backup = root / f".apply_patch-{tag}-{len(aside)}"
                os.rename(real, backup)
                aside[real] = backup
            if real in staged:
                os.rename(staged.pop(real), real)
                placed.append(real)
    except BaseException:
        for real in placed:
            os.unlink(real)
        for real, backup in reversed(aside.items()):
            os.rename(backup, real)
        for tmp in staged.values():
            os.unlink(tmp)
        for parent in reversed(made):
            os.rmdir(parent)
        raise
    for backup in aside.values():
        if backup.is_dir() and not backup.is_symlink():
            os.rmdir(backup)
        else:
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
    summary = plan.summary
    if plan.no_op and not any(summary.values()):
        message = f"No changes made to {', '.join(plan.no_op)}."
    else:
        lines = ["Success. Updated the following files:"]
        lines += [f"A {p}" for p in summary["added"]]
        lines += [f"M {p}" for p in summary["modified"]]
        lines += [f"D {p}" for p in summary["deleted"]]
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
        if not js_trim(args.input):
            return thrown_result("apply_patch", "Provide a patch input.")
        return await trio.to_thread.run_sync(apply_patch, ctx.workspace, args.input)
