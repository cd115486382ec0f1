"""Importing another assistant's memory into an agent's memory files, as OpenClaw 2026.9.6's
`migrations.memory.plan` / `.apply` do with its two memory migration providers:

- `claude`: Claude Code's auto-memory, the Markdown files under `<claude home>/projects/*/memory/`
  (and the `autoMemoryDirectory` of its `settings.json`), `<claude home>` being
  `$CLAUDE_CONFIG_DIR` or `~/.claude`; each collection is copied to
  `memory/imports/claude-code/<project>-<id>/` of the agent's workspace.
- `hermes`: Hermes' `memories/MEMORY.md` and `memories/USER.md` (its home `$HERMES_HOME` or
  `~/.hermes`, with its `active_profile`), copied to `memory/imports/hermes/`.

Both look on this gateway host, as OpenClaw's do on its. A plan lists one item per file:
`planned`, or `conflict` when the target exists (`target exists`; with `overwrite` it is
planned, the old file backed up first) or is not a regular file. Its `planFingerprint` (SHA-256
over the agent, workspace, provider, `overwrite` and every item with its source file's hash)
changes when anything in it does, and `apply` refuses a stale one (OpenClaw's messages), as it
refuses items that are not in the plan and conflicts without `overwrite`. Items not selected
are `skipped`. The copies are ordinary memory files: the agent's index takes them in at its
next search. Each apply writes `report.json` (and the backups) under
`<state dir>/migration/<provider>/<time>/`.

Blocking (file I/O): callers run it in a worker thread. Errors a caller answers as bad
requests are `MigrationError`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import stat
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

__all__ = ["MigrationError", "apply_memory_import", "plan_memory_imports"]

MAX_ITEMS: Final = 2_000
MAX_SCAN_ENTRIES: Final = 20_000
MAX_FILE_BYTES: Final = 16 * 1024 * 1024
_EXISTS: Final = "target exists"
_NOT_REGULAR: Final = "target is not a regular file"
_CONFLICTS: Final = (
    "Conflicts were found. Re-run with --overwrite to replace conflicting targets after"
    " item-level backups."
)
_PROFILE: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class MigrationError(Exception):
    """The request cannot be carried out as asked (the message says why, as OpenClaw's)."""


@attrs.frozen
class Item:
    id: str
    status: str
    source: str
    target: str
    message: str
    details: dict[str, Any]
    reason: str | None = None
    digest: str = ""
    """The source file's SHA-256 when planned (folded into the plan's fingerprint)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "status": self.status}
        out.update(source=self.source, target=self.target, message=self.message)
        if self.reason is not None:
            out["reason"] = self.reason
        out["details"] = self.details
        return out


@attrs.frozen
class Detection:
    found: bool
    source: str
    confidence: str
    message: str
    items: list[Item] = attrs.field(factory=list)


@attrs.frozen
class Provider:
    id: str
    label: str
    description: str
    detect: Callable[[Path, bool, Mapping[str, str]], Detection]


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def _expand(raw: str, env: Mapping[str, str]) -> Path:
    return _home(env) / raw[2:] if raw.startswith("~/") else Path(raw)


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _item(
    item_id: str, source: Path, target: Path, message: str, details: dict[str, Any], **kw: Any
) -> Item:
    overwrite: bool = kw.pop("overwrite")
    try:
        st = target.lstat()
    except OSError:
        st = None
    not_regular = st is not None and not stat.S_ISREG(st.st_mode)
    conflict = not_regular or (st is not None and not overwrite)
    return Item(
        id=item_id,
        status="conflict" if conflict else "planned",
        source=str(source),
        target=str(target),
        message=message,
        details=details,
        reason=_NOT_REGULAR if not_regular else _EXISTS if conflict else None,
        digest=_digest(source),
    )


# --- Claude Code ----------------------------------------------------------------------------


def _markdown_files(root: Path, limit: int) -> list[str] | None:
    """The Markdown files under `root` (relative, sorted); None past the scan limits."""
    files: list[str] = []
    pending = [root]
    visited = 0
    while pending:
        current = pending.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            visited += 1
            if visited > MAX_SCAN_ENTRIES:
                return None
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False) and entry.name.lower().endswith(".md"):
                files.append(Path(entry.path).relative_to(root).as_posix())
                if len(files) > limit:
                    return None
    return sorted(files)


def _claude_collections(home: Path, env: Mapping[str, str]) -> list[tuple[str, str, Path]]:
    """(id, label, path) of each auto-memory directory with Markdown in it, by label."""
    candidates: list[tuple[str, Path]] = []
    projects = home / "projects"
    if projects.is_dir():
        for entry in sorted(projects.iterdir()):
            if entry.is_dir():
                candidates.append((entry.name, entry / "memory"))
    try:
        settings = json.loads((home / "settings.json").read_text())
    except (OSError, ValueError):
        settings = {}
    custom = settings.get("autoMemoryDirectory") if isinstance(settings, dict) else None
    if isinstance(custom, str) and custom.strip():
        raw = custom.strip()
        if not raw.startswith(("/", "~/")):
            raise MigrationError("Claude autoMemoryDirectory must be absolute or start with ~/.")
        path = _expand(raw, env)
        candidates.append((path.name or "custom", path))
    seen: set[str] = set()
    out: list[tuple[str, str, Path]] = []
    for label, path in candidates:
        if not path.is_dir() or not _markdown_files(path, MAX_ITEMS):
            continue
        canonical = os.path.realpath(path)
        if canonical in seen:
            continue
        seen.add(canonical)
        out.append((hashlib.sha256(canonical.encode()).hexdigest()[:10], label, path))
    return sorted(out, key=lambda c: c[1])


def _slug(label: str, collection: str) -> str:
    text = unicodedata.normalize("NFKD", label)
    text = re.sub(r"[^a-zA-Z0-9._-]+", "-", text).strip("._-")[:72]
    return f"{text or 'project'}-{collection}"


def _detect_claude(workspace: Path, overwrite: bool, env: Mapping[str, str]) -> Detection:
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    home = _expand(configured, env) if configured else _home(env) / ".claude"
    collections = _claude_collections(home, env) if home.is_dir() else []
    if not collections:
        return Detection(False, str(home), "low", "Claude state not found.")
    high = (home / "settings.json").exists() or (home / "CLAUDE.md").exists()
    items: list[Item] = []
    for collection, label, path in collections:
        root = workspace / "memory" / "imports" / "claude-code" / _slug(label, collection)
        files = _markdown_files(path, MAX_ITEMS - len(items))
        if files is None:
            raise MigrationError(
                f"Claude Code auto-memory exceeds the safe import limit of {MAX_ITEMS} Markdown"
                " files across all collections. Narrow or split the source memory before"
                " importing."
            )
        for rel in files:
            details = {
                "sourceType": "claude-auto-memory",
                "sourceLabel": "Claude Code auto-memory",
                "collectionId": collection,
                "collectionLabel": label,
                "collectionFileCount": len(files),
                "relativePath": rel,
            }
            items.append(
                _item(
                    f"memory:claude-auto:{collection}:{rel}",
                    path / rel,
                    root / rel,
                    "Copy Claude Code auto-memory Markdown into the OpenClaw memory index.",
                    details,
                    overwrite=overwrite,
                )
            )
    confidence = "high" if high else "medium"
    return Detection(True, str(home), confidence, "Claude state found.", items)


# --- Hermes ---------------------------------------------------------------------------------


def _hermes_root(env: Mapping[str, str]) -> Path:
    configured = env.get("HERMES_HOME", "").strip()
    if configured:
        root = _expand(configured, env)
        if env.get("HERMES_S6_SUPERVISED_CHILD", "").strip() or root.parent.name == "profiles":
            return root
    else:
        root = _home(env) / ".hermes"
        if env.get("HERMES_S6_SUPERVISED_CHILD", "").strip():
            return root
    try:
        active = (root / "active_profile").read_text().strip()
    except OSError:
        return root
    if not active or active == "default" or not _PROFILE.match(active):
        return root
    profile = root / "profiles" / active
    return profile if profile.is_dir() else root


def _detect_hermes(workspace: Path, overwrite: bool, env: Mapping[str, str]) -> Detection:
    root = _hermes_root(env)
    target = workspace / "memory" / "imports" / "hermes"
    items = [
        _item(
            f"memory:{name}",
            root / "memories" / name,
            target / name,
            "Copy Hermes memory into the OpenClaw memory index.",
            {
                "sourceType": "hermes-memory",
                "sourceLabel": f"Hermes {name}",
                "collectionId": "hermes",
                "collectionLabel": "Hermes",
                "relativePath": name,
            },
            overwrite=overwrite,
        )
        for name in ("MEMORY.md", "USER.md")
        if (root / "memories" / name).exists()
    ]
    if not items:
        return Detection(False, str(root), "low", "Hermes state not found.")
    return Detection(True, str(root), "high", "Hermes state found.", items)


PROVIDERS: Final = (
    Provider(
        "claude",
        "Claude",
        "Import Claude Code auto-memory, instructions, MCP servers, and skills.",
        _detect_claude,
    ),
    Provider(
        "hermes",
        "Hermes",
        "Import Hermes config, memories, skills, and supported credentials.",
        _detect_hermes,
    ),
)


# --- plan and apply -------------------------------------------------------------------------


def _summary(items: list[Item]) -> dict[str, int]:
    def count(status: str) -> int:
        return sum(1 for item in items if item.status == status)

    return {
        "total": len(items),
        "planned": count("planned"),
        "migrated": count("migrated"),
        "skipped": count("skipped"),
        "conflicts": count("conflict"),
        "errors": count("error"),
        "sensitive": 0,
    }


def _fingerprint(
    agent_id: str, workspace: Path, provider: str, overwrite: bool, items: list[Item]
) -> str:
    plan = {
        "version": 3,
        "agentId": agent_id,
        "workspace": str(workspace),
        "providerId": provider,
        "overwrite": overwrite,
        "items": [{**item.to_json(), "sha256": item.digest} for item in items],
    }
    return hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()


def _plan_one(
    provider: Provider, agent_id: str, workspace: Path, overwrite: bool, env: Mapping[str, str]
) -> tuple[dict[str, Any], Detection | None]:
    base = {"providerId": provider.id, "label": provider.label, "description": provider.description}
    try:
        found = provider.detect(workspace, overwrite, env)
    except MigrationError as exc:
        return {
            **base,
            "found": False,
            "error": str(exc),
            "summary": _summary([]),
            "items": [],
        }, None
    if not found.found:
        out = {**base, "found": False, "source": found.source, "confidence": found.confidence}
        return {**out, "message": found.message, "summary": _summary([]), "items": []}, found
    items = found.items
    out = {
        **base,
        "found": bool(items),
        "planFingerprint": _fingerprint(agent_id, workspace, provider.id, overwrite, items),
        "source": found.source,
        "target": str(workspace),
        "confidence": found.confidence,
        "message": found.message,
        "summary": _summary(items),
        "items": [item.to_json() for item in items],
    }
    if any(item.status == "conflict" for item in items):
        out["warnings"] = [_CONFLICTS]
    return out, found


def plan_memory_imports(
    agent_id: str, workspace: Path, *, overwrite: bool, env: Mapping[str, str]
) -> dict[str, Any]:
    """`migrations.memory.plan`'s result: `{agentId, workspace, providers}`. Blocking."""
    providers = [_plan_one(p, agent_id, workspace, overwrite, env)[0] for p in PROVIDERS]
    return {"agentId": agent_id, "workspace": str(workspace), "providers": providers}


def apply_memory_import(
    agent_id: str,
    workspace: Path,
    *,
    provider_id: str,
    fingerprint: str,
    item_ids: list[str],
    overwrite: bool,
    report_root: Path,
    env: Mapping[str, str],
) -> dict[str, Any]:
    """`migrations.memory.apply`'s result: the selected items copied (see the module
    docstring). Raises `MigrationError`. Blocking."""
    provider = next((p for p in PROVIDERS if p.id == provider_id), None)
    if provider is None:
        raise MigrationError("unknown memory migration provider")
    planned, found = _plan_one(provider, agent_id, workspace, overwrite, env)
    if found is None or planned.get("planFingerprint") != fingerprint:
        raise MigrationError("memory migration plan changed; refresh the plan before importing")
    selectable = {i.id: i for i in found.items if i.status in ("planned", "conflict")}
    missing = [i for i in item_ids if i not in selectable]
    if missing:
        raise MigrationError(
            f"memory migration items changed; refresh the plan ({', '.join(missing)})"
        )
    if not overwrite and any(selectable[i].status == "conflict" for i in item_ids):
        raise MigrationError(
            "selected memory was already imported; enable replacement and refresh the plan"
        )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    report_dir = report_root / provider.id / stamp
    backups = report_dir / "backups"
    wanted = set(item_ids)
    items = [
        _copy(item, workspace, backups) if item.id in wanted else _skipped(item)
        for item in found.items
    ]
    result: dict[str, Any] = {
        "providerId": provider.id,
        "source": found.source,
        "target": str(workspace),
        "summary": _summary(items),
        "items": [item.to_json() for item in items],
    }
    if backups.exists():
        result["backupPath"] = str(backups)
    result["reportDir"] = str(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def _skipped(item: Item) -> Item:
    if item.status != "planned":
        return item
    return attrs.evolve(item, status="skipped", reason="not selected")


def _copy(item: Item, workspace: Path, backups: Path) -> Item:
    """Copy one item's file (the old target backed up first); its `migrated` or `error`."""
    source, target = Path(item.source), Path(item.target)
    try:
        st = source.lstat()
        if not stat.S_ISREG(st.st_mode):
            raise MigrationError("source is not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise MigrationError(f"source is larger than {MAX_FILE_BYTES} bytes")
        data = source.read_bytes()
        if hashlib.sha256(data).hexdigest() != item.digest:
            raise MigrationError("source changed since the plan; refresh the plan")
        if not os.path.realpath(target).startswith(os.path.realpath(workspace) + os.sep):
            raise MigrationError("the destination must stay in the agent's workspace")
        if target.is_file():
            backup = backups / target.relative_to(workspace)
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(target, backup)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.import")
        temp.write_bytes(data)
        os.replace(temp, target)
    except (OSError, MigrationError) as exc:
        return attrs.evolve(item, status="error", reason=str(exc))
    return attrs.evolve(item, status="migrated", reason=None)
