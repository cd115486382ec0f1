"""`sessions.files.list` and `sessions.files.get` (operator.read): the files a session's runs
read and changed, and its workspace to browse, as OpenClaw 2026.9.6's Control UI shows
them (the session's Files panel).

A session's files are those its active branch's tool calls name (OpenClaw's rule: `read`
reads a file; `write`, `edit` and `apply_patch`, by its `*** Add/Update/Delete File:` and
`*** Move to:` lines, change one; `path`, `file_path`, `filePath` or `file` in the
arguments), modified ones first, then by path. The workspace is the session's agent's.

- `list {sessionKey, agentId?, path?, search?}`: `{sessionKey, root, gitCheckout, files:
  [{path, name, kind, missing, workspacePath?, size?, updatedAtMs?}], browser}`: `browser`
  lists the directory `path` of the workspace (at most 250 entries, `truncated` past
  them; directories first), or with `search` the files and directories whose path holds
  it (at most 500, looking at 5,000 entries, skipping `.git`, `node_modules` and other
  build directories); each entry marked `sessionKind` (`read`, `modified`, `mixed` for a
  directory) when the session touched it.
- `get {sessionKey, path, agentId?}`: `{sessionKey, root, file}` with its content: text
  (UTF-8, `hash` its SHA-256), an image (PNG, JPEG, GIF, WebP, AVIF: base64) or
  `previewKind: unsupported`. Larger than 256 KiB: `INVALID_REQUEST` "session file is too
  large to preview"; absent, outside the workspace or reached through a link out of it:
  "session file not found" (OpenClaw's `details.type` with each).

Confined: every path is resolved (links too) and must stay inside the workspace; a file
with more than one hard link is not read. An unknown session is `INVALID_REQUEST`.
"""

from __future__ import annotations

import base64
import codecs
import hashlib
import os
import re
import stat as stat_mod
from pathlib import Path
from typing import Annotated, Any, Final

import msgspec
import trio
from msgspec import UNSET, Meta, UnsetType

from runtime.llm import AssistantMessage, ToolCallContent
from runtime.protocol import GatewayError, invalid_request, opt
from runtime.sessions import branch_messages

from ._context import Call, MethodTable
from ._submit import agent_spec, key_of

__all__ = ["register"]

MAX_PREVIEW_BYTES: Final = 262_144
MAX_BROWSER_ENTRIES: Final = 250
MAX_SEARCH_ENTRIES: Final = 500
MAX_SEARCH_VISITED: Final = 5_000
MAX_FILES: Final = 1_000
_SNIFF_BYTES: Final = 4_100
SEARCH_SKIP_DIRS: Final = frozenset(
    {".git", ".hg", ".next", ".turbo", ".yarn", "coverage", "dist", "node_modules"}
)
_PATCH_FILE: Final = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_PATCH_MOVE: Final = re.compile(r"^\*\*\* Move to: (.+)$", re.MULTILINE)
_IMAGES: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_Key = Annotated[str, Meta(min_length=1)]


class FilesListParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    sessionKey: _Key
    agentId: _Key | UnsetType = UNSET
    path: str | UnsetType = UNSET
    search: str | UnsetType = UNSET


class FilesGetParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    sessionKey: _Key
    path: _Key
    agentId: _Key | UnsetType = UNSET


def register(methods: MethodTable) -> None:
    read = "operator.read"
    methods.add("sessions.files.list", files_list, FilesListParams, scope=read)
    methods.add("sessions.files.get", files_get, FilesGetParams, scope=read)


def _files_error(kind: str, message: str, **details: Any) -> GatewayError:
    return GatewayError("INVALID_REQUEST", message, details={"type": kind, **details})


# --- what the session touched ----------------------------------------------------------------


def _path_arg(args: dict[str, Any]) -> str | None:
    for name in ("path", "file_path", "filePath", "file"):
        value = args.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def touched_files(messages: list[Any]) -> dict[str, str]:
    """Path -> `read` | `modified`, from the assistant messages' tool calls."""
    files: dict[str, str] = {}

    def add(path: str | None, kind: str) -> None:
        if not path or files.get(path) == "modified":
            return
        if (path in files and kind == "modified") or (path not in files and len(files) < MAX_FILES):
            files[path] = kind

    for message in messages:
        if not isinstance(message, AssistantMessage):
            continue
        for block in message.content:
            if not isinstance(block, ToolCallContent):
                continue
            name, args = block.name.lower(), block.arguments
            if name == "read":
                add(_path_arg(args), "read")
            elif name in ("write", "edit"):
                add(_path_arg(args), "modified")
            elif name == "apply_patch" and isinstance(args.get("input"), str):
                for match in (
                    *_PATCH_FILE.finditer(args["input"]),
                    *_PATCH_MOVE.finditer(args["input"]),
                ):
                    add(match.group(1).strip(), "modified")
    return files


# --- the workspace, confined -------------------------------------------------------------------


def _inside(root: Path, path: Path) -> bool:
    return path == root or root in path.parents


def _resolve(root: Path, raw: str) -> Path | None:
    """`raw` (absolute, or relative to the workspace) with its links resolved, if that
    stays inside `root` (itself resolved)."""
    try:
        candidate = Path(os.path.expanduser(raw))
        if not candidate.is_absolute():
            candidate = root / candidate
        resolved = candidate.resolve()
    except (OSError, RuntimeError, ValueError):  # a loop, a NUL, a name too long
        return None
    return resolved if _inside(root, resolved) else None


def _display(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else ""


def _entry(root: Path, raw: str, kind: str, *, content: bool = False) -> dict[str, Any]:
    base: dict[str, Any] = {"path": raw, "name": Path(raw).name or raw, "kind": kind}
    resolved = _resolve(root, raw)
    try:
        info = resolved.stat() if resolved is not None else None
    except OSError:
        info = None
    if resolved is None or info is None or not stat_mod.S_ISREG(info.st_mode):
        return {**base, "missing": True}
    entry: dict[str, Any] = {
        **base,
        "workspacePath": _display(root, resolved),
        "missing": False,
        "size": info.st_size,
        "updatedAtMs": int(info.st_mtime * 1000),
    }
    if content and info.st_size <= MAX_PREVIEW_BYTES:
        if info.st_nlink > 1:  # a hard link may reach a file outside the workspace
            return {**base, "missing": True}
        try:
            data = resolved.read_bytes()[: MAX_PREVIEW_BYTES + 1]
        except OSError:
            return {**base, "missing": True}
        _preview(entry, data)
    elif content:  # too large to show: only whether it would be text (`unsupported` if not)
        try:
            with resolved.open("rb") as f:
                prefix = f.read(_SNIFF_BYTES)
        except OSError:
            return {**base, "missing": True}
        image = _image_type(prefix)
        if image is not None or not _utf8_prefix(prefix):
            entry["previewKind"] = "unsupported"
            if image is not None:
                entry["mimeType"] = image
    return entry


def _utf8_prefix(data: bytes) -> bool:
    """Whether `data` starts a UTF-8 text (a character cut at its end allowed)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _image_type(data: bytes) -> str | None:
    for magic, mime in _IMAGES:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[4:12] in (b"ftypavif", b"ftypavis"):
        return "image/avif"
    return None


def _preview(entry: dict[str, Any], data: bytes) -> None:
    """The file's content as OpenClaw previews it (`applyInlineFilePreview`)."""
    image = _image_type(data)
    if image is not None:
        entry.update(
            mimeType=image,
            contentEncoding="base64",
            previewKind="image",
            content=base64.b64encode(data).decode(),
        )
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        entry["previewKind"] = "unsupported"
        return
    entry.update(
        mimeType="text/plain",
        contentEncoding="utf8",
        previewKind="text",
        content=text,
        hash=hashlib.sha256(data).hexdigest(),
    )


def _relevance(root: Path, files: dict[str, str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for raw, kind in files.items():
        resolved = _resolve(root, raw)
        if resolved is not None:
            found[_display(root, resolved)] = kind
    return found


def _session_kind(path: str, is_dir: bool, relevance: dict[str, str]) -> str | None:
    if not is_dir:
        return relevance.get(path)
    prefix = f"{path}/" if path else ""
    kinds = {k for p, k in relevance.items() if p.startswith(prefix) and p != path}
    return None if not kinds else kinds.pop() if len(kinds) == 1 else "mixed"


def _browser_entry(root: Path, path: Path, relevance: dict[str, str]) -> dict[str, Any] | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    if stat_mod.S_ISLNK(info.st_mode):  # a link is listed as what it reaches inside
        resolved = _resolve(root, str(path))
        if resolved is None:
            return None
        try:
            info = resolved.stat()
        except OSError:
            return None
    is_dir = stat_mod.S_ISDIR(info.st_mode)
    if not is_dir and not stat_mod.S_ISREG(info.st_mode):
        return None
    shown = _display(root, path)
    entry: dict[str, Any] = {
        "path": shown,
        "name": path.name,
        "kind": "directory" if is_dir else "file",
    }
    if not is_dir:
        entry["size"] = info.st_size
    entry["updatedAtMs"] = int(info.st_mtime * 1000)
    kind = _session_kind(shown, is_dir, relevance)
    if kind is not None:
        entry["sessionKind"] = kind
    return entry


def _sorted(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda e: (e["kind"] != "directory", e["name"].lower(), e["name"]))


def _children(path: Path) -> list[Path]:
    try:
        return sorted(path.iterdir(), key=lambda p: p.name)
    except OSError:
        return []


def _browse(root: Path, raw: str, relevance: dict[str, str]) -> dict[str, Any] | None:
    rel = raw.strip().strip("/")
    directory = _resolve(root, rel) if rel else root
    try:
        if directory is None or not directory.is_dir():
            return None
    except OSError:
        return None
    entries = []
    for child in _children(directory)[: MAX_BROWSER_ENTRIES + 1]:
        entry = _browser_entry(root, child, relevance)
        if entry is not None:
            entries.append(entry)
    shown = _display(root, directory)
    result: dict[str, Any] = {"path": shown}
    if shown:
        parent = Path(shown).parent.as_posix()
        result["parentPath"] = "" if parent == "." else parent
    result["entries"] = _sorted(entries[:MAX_BROWSER_ENTRIES])
    if len(entries) > MAX_BROWSER_ENTRIES:
        result["truncated"] = True
    return result


def _search(root: Path, query: str, relevance: dict[str, str]) -> dict[str, Any]:
    needle = query.lower()
    found: list[dict[str, Any]] = []
    visited = 0
    truncated = False
    stack = [root]
    while stack and not truncated:
        directory = stack.pop()
        for child in _children(directory):
            if len(found) >= MAX_SEARCH_ENTRIES or visited >= MAX_SEARCH_VISITED:
                truncated = True
                break
            visited += 1
            shown = _display(root, child)
            if needle in child.name.lower() or needle in shown.lower():
                entry = _browser_entry(root, child, relevance)
                if entry is not None:
                    found.append(entry)
            if child.is_dir() and not child.is_symlink() and child.name not in SEARCH_SKIP_DIRS:
                stack.append(child)
    result: dict[str, Any] = {"path": "", "search": query, "entries": _sorted(found)}
    if truncated:
        result["truncated"] = True
    return result


def _git_checkout(root: Path) -> bool:
    return any((p / ".git").exists() for p in (root, *root.parents))


def list_files(
    root: Path, files: dict[str, str], path: str | None, search: str | None
) -> dict[str, Any]:
    """The `list` answer's body (blocking: run in a worker thread)."""
    root = root.resolve()
    ordered = sorted(files.items(), key=lambda kv: (kv[1] != "modified", kv[0]))
    inside = [(p, k) for p, k in ordered if _resolve(root, p) is not None]
    relevance = _relevance(root, dict(inside))
    result: dict[str, Any] = {
        "root": str(root),
        "gitCheckout": _git_checkout(root),
        "files": [_entry(root, p, k) for p, k in inside],
    }
    query = (search or "").strip()
    browser = _search(root, query, relevance) if query else _browse(root, path or "", relevance)
    if browser is not None:
        result["browser"] = browser
    return result


def get_file(root: Path, files: dict[str, str], raw: str) -> tuple[str, dict[str, Any] | None]:
    """The workspace (resolved) and the `get` answer's file, or None when there is none to
    show (blocking)."""
    root = root.resolve()
    if raw in files:
        entry = _entry(root, raw, files[raw], content=True)
        return str(root), None if entry["missing"] else entry
    resolved = _resolve(root, raw)
    if resolved is None:
        return str(root), None
    shown = _display(root, resolved)
    kind = "modified" if _relevance(root, files).get(shown) == "modified" else "read"
    entry = _entry(root, shown, kind, content=True)
    return str(root), None if entry["missing"] else entry


# --- the methods ---------------------------------------------------------------------------


async def _session_files(
    call: Call, raw_key: str, agent_id: str | None
) -> tuple[str, Path, dict[str, str]]:
    sup = call.gateway.actors.supervisor
    key = key_of(call, raw_key, agent_id)
    row = await sup.store.get_session(key)
    if row is None:
        raise invalid_request(f"session not found: {raw_key}")
    agent = agent_spec(call, agent_id, key)
    root = await sup.workspace_for(agent.id, agent.workspace)
    messages = [e.message for e in branch_messages(await sup.store.load_entries(row.sessionId))]
    return key, root, touched_files(messages)


async def files_list(call: Call, params: FilesListParams) -> dict[str, Any]:
    _, root, files = await _session_files(call, params.sessionKey, opt(params.agentId))
    body = await trio.to_thread.run_sync(
        list_files, root, files, opt(params.path), opt(params.search)
    )
    return {"sessionKey": params.sessionKey, **body}


async def files_get(call: Call, params: FilesGetParams) -> dict[str, Any]:
    _, root, files = await _session_files(call, params.sessionKey, opt(params.agentId))
    shown_root, file = await trio.to_thread.run_sync(get_file, root, files, params.path)
    if file is None:
        raise _files_error("session_file_not_found", "session file not found", path=params.path)
    if "content" not in file and file.get("previewKind") != "unsupported":
        raise _files_error(
            "session_file_too_large",
            "session file is too large to preview",
            maxPreviewBytes=MAX_PREVIEW_BYTES,
            path=file["path"],
            size=file.get("size"),
        )
    return {"sessionKey": params.sessionKey, "root": shown_root, "file": file}
