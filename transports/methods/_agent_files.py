"""An agent's files as OpenClaw's Control UI shows and edits them: `agents.files.list`,
`agents.files.get` (operator.read), `agents.files.set` (operator.admin), and the read-only
workspace browser `agents.workspace.list` / `agents.workspace.get` (operator.read).

- The agent files are the workspace's bootstrap files OpenClaw names: `AGENTS.md`,
  `SOUL.md`, `USER.md`, `BOOTSTRAP.md` (listed while it exists: setup not done), `MEMORY.md`
  (and `IDENTITY.md`, readable and writable, not listed: `agents.update` writes it). Any
  other name is refused (`unsupported file`). A file is read and written only when it is a
  regular file with one link (a symlink or a hard link is `unsafe workspace file`), at most
  `FILE_MAX_BYTES`; `agents.files.set` with `expectedHash` (the SHA-256 of the bytes it
  last read) writes only when the file still has it (else `agent file "x" changed since it
  was read`, with `details.currentHash`); the write replaces the file atomically. The
  answers leave out the `hash` field OpenClaw 2026.9.6 added: the published protocol
  schema (2026.9.1), which every frame must match, does not have it.
- The workspace browser resolves every path inside the workspace (`runtime.tools`'
  sandbox: no `..` above it, no absolute path, no symlink out), lists a directory's files
  and directories (directories first, then by name; `offset`/`limit`, at most
  `LIST_MAX`), and previews a file as UTF-8 text (up to `PREVIEW_MAX_BYTES`) or a
  supported image as base64 (up to `IMAGE_MAX_BYTES`); errors carry OpenClaw's
  `details.type` (`workspace_path_invalid`, `workspace_path_not_found`,
  `workspace_file_not_found`, `workspace_file_too_large`, `workspace_file_unsupported`).

An agent unknown to the serving generation is `agent "x" not found`. All disk work runs in a
worker thread.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import stat
import tempfile
import threading
from base64 import b64encode
from pathlib import Path
from typing import Any, Final

import trio

from runtime.protocol import (
    AgentsFilesGetParams,
    AgentsFilesListParams,
    AgentsFilesSetParams,
    AgentsWorkspaceGetParams,
    AgentsWorkspaceListParams,
    invalid_request,
    opt,
)
from runtime.tools import SandboxError, ensure_workspace, resolve_in_workspace

from ._context import Call, MethodTable

__all__ = ["agent_id_of", "agent_workspace", "register", "write_identity"]

AGENT_FILES: Final = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md", "MEMORY.md")
"""The files `agents.files.*` reads and writes (OpenClaw's bootstrap files)."""
LISTED_FILES: Final = tuple(n for n in AGENT_FILES if n != "IDENTITY.md")
EXPECTED_ABSENT: Final = frozenset({"SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md"})
"""Files a new workspace may well not have (listed `expectedAbsent` when missing)."""
FILE_MAX_BYTES: Final = 2 * 1024 * 1024
PREVIEW_MAX_BYTES: Final = 256 * 1024
IMAGE_MAX_BYTES: Final = 5 * 1024 * 1024
LIST_DEFAULT: Final = 250
LIST_MAX: Final = 500
IMAGE_TYPES: Final = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".avif": "image/avif",
    ".heic": "image/heic",
    ".heif": "image/heif",
}
_IDENTITY_LABELS: Final = (
    ("name", "Name"),
    ("theme", "Theme"),
    ("emoji", "Emoji"),
    ("avatar", "Avatar"),
)
_write_lock = threading.Lock()
"""One agent-file write at a time (a compare-and-set reads, compares and writes under it)."""


def register(methods: MethodTable) -> None:
    methods.add("agents.files.list", agents_files_list, AgentsFilesListParams)
    methods.add("agents.files.get", agents_files_get, AgentsFilesGetParams)
    methods.add("agents.files.set", agents_files_set, AgentsFilesSetParams, scope="operator.admin")
    methods.add("agents.workspace.list", agents_workspace_list, AgentsWorkspaceListParams)
    methods.add("agents.workspace.get", agents_workspace_get, AgentsWorkspaceGetParams)


class _Unsafe(Exception):
    """A file that is not a regular file with one link."""


class _Conflict(Exception):
    def __init__(self, current: str | None) -> None:
        self.current = current


# --- the agent and its workspace -----------------------------------------------------------


_VALID_ID: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def agent_id_of(raw: str) -> str | None:
    """`raw` as an agent id, as OpenClaw makes one from a name: lower-cased, each run of other
    characters a `-`, no leading or trailing `-`, at most 64; None when nothing is left."""
    out: list[str] = []
    for ch in raw.strip().lower():
        if ch in _VALID_ID:
            out.append(ch)
        elif not out or out[-1] != "-":
            out.append("-")
    return "".join(out).strip("-")[:64].rstrip("-") or None


def _agent(call: Call, raw: str) -> str:
    generation = call.gateway.actors.supervisor.generation
    agent_id = agent_id_of(raw)
    if agent_id is None or agent_id not in generation.agents:
        raise invalid_request(f'agent "{raw}" not found')
    return agent_id


async def agent_workspace(call: Call, agent_id: str, *, create: bool) -> Path:
    """The agent's workspace directory as the serving generation sets it (the configured
    one, else the state dir's `workspaces/<id>`); created when `create`. A checkpoint."""
    generation = call.gateway.actors.supervisor.generation
    spec = generation.agents.get(agent_id)
    configured = spec.workspace if spec is not None else None
    default = call.gateway.process.state_dir / "workspaces" / agent_id

    def where() -> Path:
        path = Path(os.path.abspath(os.path.expanduser(configured))) if configured else default
        return ensure_workspace(path) if create else path

    return await trio.to_thread.run_sync(where)


# --- reading and writing one file ----------------------------------------------------------


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_regular(path: Path, limit: int) -> tuple[bytes, os.stat_result] | None:
    """A regular file's bytes (None when missing). Raises `_Unsafe` for a symlink, a hard
    link or anything not a regular file, `OverflowError` when over `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise _Unsafe from exc
        raise
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            raise _Unsafe
        if info.st_size > limit:
            raise OverflowError(info.st_size)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OverflowError(len(data))
    return data, info


def _entry(
    workspace: Path, name: str, found: tuple[bytes, os.stat_result] | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "path": str(workspace / name)}
    if found is None:
        entry["missing"] = True
        if name in EXPECTED_ABSENT:
            entry["expectedAbsent"] = True
        return entry
    data, info = found
    entry.update(missing=False, size=len(data), updatedAtMs=int(info.st_mtime * 1000))
    return entry


def _list_files(workspace: Path) -> list[dict[str, Any]]:
    files = []
    for name in LISTED_FILES:
        try:
            found = _read_regular(workspace / name, FILE_MAX_BYTES)
        except (_Unsafe, OverflowError, OSError):
            found = None
        if found is None and name == "BOOTSTRAP.md":
            continue  # setup is done (or never began): OpenClaw hides it then
        files.append(_entry(workspace, name, found))
    return files


def _get_file(workspace: Path, name: str) -> dict[str, Any]:
    try:
        found = _read_regular(workspace / name, FILE_MAX_BYTES)
    except OverflowError:
        raise invalid_request(f'agent file "{name}" is over {FILE_MAX_BYTES} bytes') from None
    except (_Unsafe, NotADirectoryError):
        raise invalid_request(f'unsafe workspace file "{name}"') from None
    entry = _entry(workspace, name, found)
    if found is not None:
        data = found[0]
        try:
            entry["content"] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise invalid_request(f'agent file "{name}" is not UTF-8 text') from None
    return entry


def _current_hash(path: Path) -> str | None:
    found = _read_regular(path, FILE_MAX_BYTES)
    return None if found is None else _digest(found[0])


def _replace(path: Path, data: bytes) -> None:
    """Write `data` as `path` atomically (a temporary file beside it, then a rename)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _set_file(workspace: Path, name: str, content: str, expected: str | None) -> dict[str, Any]:
    data = content.encode("utf-8")
    path = workspace / name
    with _write_lock:
        try:
            current = _current_hash(path)
        except OverflowError:
            current = None
        if expected is not None and current != expected.lower():
            raise _Conflict(current)
        if os.path.islink(path) or (os.path.lexists(path) and not path.is_file()):
            raise _Unsafe
        _replace(path, data)
    info = os.stat(path)
    return {
        "name": name,
        "path": str(path),
        "missing": False,
        "size": len(data),
        "updatedAtMs": int(info.st_mtime * 1000),
        "content": content,
    }


# --- IDENTITY.md ---------------------------------------------------------------------------


def identity_text(existing: str | None, identity: dict[str, str]) -> str:
    """`IDENTITY.md` with `identity`'s fields as `- Label: value` lines: each replaces the
    line with its label (duplicates dropped), or is added after the last identity line or
    the heading; everything else is kept."""
    lines = (
        existing.replace("\r\n", "\n").split("\n")
        if existing
        else ["# IDENTITY.md - Agent Identity", ""]
    )

    def label_of(line: str) -> str | None:
        body = line.strip()
        if not body.startswith("-") or ":" not in body:
            return None
        return body.lstrip("- ").split(":", 1)[0].strip("*_` ").lower()

    for field, label in _IDENTITY_LABELS:
        value = identity.get(field)
        if not value:
            continue
        at = [i for i, line in enumerate(lines) if label_of(line) == field]
        if at:
            lines[at[0]] = f"- {label}: {value}"
            for i in reversed(at[1:]):
                del lines[i]
            continue
        known = [
            i for i, line in enumerate(lines) if label_of(line) in {f for f, _ in _IDENTITY_LABELS}
        ]
        heading = next((i for i, line in enumerate(lines) if line.strip().startswith("#")), None)
        index = known[-1] + 1 if known else (0 if heading is None else heading + 1)
        while not known and heading is not None and index < len(lines) and not lines[index].strip():
            index += 1
        lines.insert(index, f"- {label}: {value}")
    return "\n".join(lines)


async def write_identity(workspace: Path, identity: dict[str, str]) -> None:
    """Merge `identity` into the workspace's `IDENTITY.md` (`identity_text`). A checkpoint."""
    if not identity:
        await trio.lowlevel.checkpoint()
        return

    def write() -> None:
        path = workspace / "IDENTITY.md"
        with _write_lock:
            try:
                found = _read_regular(path, FILE_MAX_BYTES)
            except (_Unsafe, OverflowError):
                raise invalid_request('unsafe workspace file "IDENTITY.md"') from None
            existing = None if found is None else found[0].decode("utf-8", "replace")
            _replace(path, identity_text(existing, identity).encode("utf-8"))

    await trio.to_thread.run_sync(write)


# --- the methods ---------------------------------------------------------------------------


def _file_name(raw: str) -> str:
    name = raw.strip()
    if name not in AGENT_FILES:
        raise invalid_request(f'unsupported file "{name}"')
    return name


async def agents_files_list(call: Call, params: AgentsFilesListParams) -> dict[str, Any]:
    agent_id = _agent(call, params.agentId)
    workspace = await agent_workspace(call, agent_id, create=False)
    files = await trio.to_thread.run_sync(_list_files, workspace)
    return {"agentId": agent_id, "workspace": str(workspace), "files": files}


async def agents_files_get(call: Call, params: AgentsFilesGetParams) -> dict[str, Any]:
    agent_id = _agent(call, params.agentId)
    name = _file_name(params.name)
    workspace = await agent_workspace(call, agent_id, create=False)
    file = await trio.to_thread.run_sync(_get_file, workspace, name)
    return {"agentId": agent_id, "workspace": str(workspace), "file": file}


async def agents_files_set(call: Call, params: AgentsFilesSetParams) -> dict[str, Any]:
    agent_id = _agent(call, params.agentId)
    name = _file_name(params.name)
    if len(params.content.encode("utf-8", "surrogatepass")) > FILE_MAX_BYTES:
        raise invalid_request(f"content: over {FILE_MAX_BYTES} bytes", path="content")
    workspace = await agent_workspace(call, agent_id, create=True)
    try:
        file = await trio.to_thread.run_sync(
            _set_file, workspace, name, params.content, opt(params.expectedHash)
        )
    except _Conflict as exc:
        details: dict[str, Any] = {"type": "agent_file_conflict", "name": name}
        if exc.current:
            details["currentHash"] = exc.current
        raise invalid_request(f'agent file "{name}" changed since it was read', **details) from None
    except _Unsafe:
        raise invalid_request(f'unsafe workspace file "{name}"') from None
    return {"ok": True, "agentId": agent_id, "workspace": str(workspace), "file": file}


def _workspace_error(kind: str, message: str, **details: Any) -> Exception:
    return invalid_request(message, type=kind, **details)


def _browse_path(workspace: Path, raw: str | None) -> tuple[str, Path]:
    """A browser path (`a/b`, "" for the root) and where it is; refused outside."""
    text = (raw or "").replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise _workspace_error(
            "workspace_path_invalid", "path must be workspace-relative", path=raw or ""
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    relative = "/".join(parts)
    if not relative:
        return "", Path(os.path.realpath(workspace))
    try:
        return relative, resolve_in_workspace(workspace, relative, for_write=False)
    except SandboxError:
        raise _workspace_error(
            "workspace_path_invalid", "path escapes the agent workspace", path=raw or ""
        ) from None


def _list_dir(workspace: Path, raw: str | None, offset: int, limit: int) -> dict[str, Any]:
    relative, where = _browse_path(workspace, raw)
    if not relative and not where.exists():
        return {"path": "", "entries": [], "totalEntries": 0, "offset": 0}  # nothing yet
    if not where.is_dir():
        raise _workspace_error(
            "workspace_path_not_found", "workspace directory not found", path=relative
        )
    entries: list[dict[str, Any]] = []
    with os.scandir(where) as it:
        for item in it:
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            kind = (
                "directory"
                if stat.S_ISDIR(info.st_mode)
                else "file"
                if stat.S_ISREG(info.st_mode)
                else None
            )
            if kind is None:
                continue  # symlinks, devices, sockets: not browsed
            entry: dict[str, Any] = {
                "path": f"{relative}/{item.name}" if relative else item.name,
                "name": item.name,
                "kind": kind,
                "updatedAtMs": int(info.st_mtime * 1000),
            }
            if kind == "file":
                entry["size"] = info.st_size
            entries.append(entry)
    entries.sort(key=lambda e: (e["kind"] != "directory", e["name"].lower(), e["name"]))
    start = min(offset, len(entries))
    result: dict[str, Any] = {
        "path": relative,
        "entries": entries[start : start + min(limit, LIST_MAX)],
        "totalEntries": len(entries),
        "offset": start,
    }
    if relative:
        parent = relative.rpartition("/")[0]
        result["parentPath"] = parent
    return result


def _preview(workspace: Path, raw: str) -> dict[str, Any]:
    relative, where = _browse_path(workspace, raw)
    if not relative:
        raise _workspace_error(
            "workspace_file_not_found", "workspace file not found", path=relative
        )
    mime = IMAGE_TYPES.get(os.path.splitext(relative)[1].lower())
    limit = IMAGE_MAX_BYTES if mime else PREVIEW_MAX_BYTES
    try:
        found = _read_regular(where, limit)
    except OverflowError as exc:
        raise _workspace_error(
            "workspace_file_too_large",
            "workspace file is too large to preview",
            maxBytes=limit,
            path=relative,
            size=int(exc.args[0]),
        ) from None
    except (_Unsafe, OSError):
        found = None
    if found is None:
        raise _workspace_error(
            "workspace_file_not_found", "workspace file not found", path=relative
        )
    data, info = found
    file: dict[str, Any] = {
        "path": relative,
        "name": relative.rpartition("/")[2],
        "size": len(data),
        "updatedAtMs": int(info.st_mtime * 1000),
    }
    if mime:
        return {**file, "mimeType": mime, "encoding": "base64", "content": b64encode(data).decode()}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _workspace_error(
            "workspace_file_unsupported",
            "workspace file is not UTF-8 text or a supported image",
            path=relative,
        ) from None
    kind = mimetypes.guess_type(relative)[0] or "text/plain"
    return {**file, "mimeType": kind, "encoding": "utf8", "content": text}


async def agents_workspace_list(call: Call, params: AgentsWorkspaceListParams) -> dict[str, Any]:
    agent_id = _agent(call, params.agentId)
    workspace = await agent_workspace(call, agent_id, create=False)
    offset = opt(params.offset) or 0
    limit = opt(params.limit) or LIST_DEFAULT
    listing = await trio.to_thread.run_sync(_list_dir, workspace, opt(params.path), offset, limit)
    return {"agentId": agent_id, **listing}


async def agents_workspace_get(call: Call, params: AgentsWorkspaceGetParams) -> dict[str, Any]:
    agent_id = _agent(call, params.agentId)
    workspace = await agent_workspace(call, agent_id, create=False)
    file = await trio.to_thread.run_sync(_preview, workspace, params.path)
    return {"agentId": agent_id, "file": file}
