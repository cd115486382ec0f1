"""The workspace's bootstrap files (`AGENTS.md`, `SOUL.md`, `TOOLS.md`, `IDENTITY.md`,
`USER.md`, `HEARTBEAT.md`, `BOOTSTRAP.md`, `MEMORY.md`) and the project context section of the
system prompt rendered from them: each file cut to `bootstrapMaxChars` (head 70 %, tail 20 %)
and all together to the total cap.

`load_bootstrap_files` does blocking file I/O (`_prompt.prepare_prompt` runs it in a worker
thread); nothing here raises for missing or unreadable files: they are reported instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from ..hooks._internal import BootstrapFile

__all__ = [
    "BOOTSTRAP_FILENAMES",
    "DEFAULT_BOOTSTRAP_MAX_CHARS",
    "DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS",
    "InjectedFile",
    "load_bootstrap_files",
    "render_project_context",
    "truncate_bootstrap",
]

BOOTSTRAP_FILENAMES: Final = (
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "HEARTBEAT.md",
    "BOOTSTRAP.md",
    "MEMORY.md",
)
DEFAULT_BOOTSTRAP_MAX_CHARS: Final = 20_000
DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS: Final = 150_000
_READ_LIMIT: Final = 2 * 1024 * 1024  # bytes read of one bootstrap file at most
_MIN_FILE_CHARS: Final = 64  # below this a file is left out rather than cut to nothing


def _read_workspace_file(workspace: Path, path: Path) -> str | None:
    """`workspace` is already resolved (real path)."""
    if not os.path.lexists(path):  # the common case, and the cheap check
        return None
    try:
        real = path.resolve()
        if not real.is_relative_to(workspace) or not real.is_file():
            return None
        with real.open("rb") as f:
            data = f.read(_READ_LIMIT)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def load_bootstrap_files(
    workspace: Path, names: Sequence[str] = BOOTSTRAP_FILENAMES
) -> list[BootstrapFile]:
    """The workspace's bootstrap files, in `names` order; `content` None when a file is
    missing, unreadable, not a regular file, or a symlink out of the workspace.
    `MEMORY.md` falls back to `memory.md`. Blocking file I/O."""
    files: list[BootstrapFile] = []
    try:
        workspace = workspace.resolve()
    except OSError:
        return [
            BootstrapFile(name=name, path=str(workspace / name), content=None) for name in names
        ]
    for name in names:
        path = workspace / name
        content = _read_workspace_file(workspace, path)
        if content is None and name == "MEMORY.md":
            alternative = workspace / "memory.md"
            alt = _read_workspace_file(workspace, alternative)
            if alt is not None:
                path, content = alternative, alt
        files.append(BootstrapFile(name=name, path=str(path), content=content))
    return files


def truncate_bootstrap(content: str, max_chars: int, *, name: str = "file") -> tuple[str, bool]:
    """`content` cut to at most `max_chars`: its head and tail (70:20) around a marker saying
    that it was cut. Returns (text, truncated)."""
    if len(content) <= max_chars:
        return content, False
    marker = (
        f"\n\n[... {len(content)} characters of {name}, cut; read the file for all of it ...]\n\n"
    )
    room = max_chars - len(marker)
    if room < 10:
        return content[: max(0, max_chars)], True
    head = room * 7 // 9  # 70 % head, 20 % tail of the room the marker leaves
    tail = room * 2 // 9
    return content[:head] + marker + (content[-tail:] if tail else ""), True


@attrs.frozen
class InjectedFile:
    """One bootstrap file as the prompt got it."""

    name: str
    path: str
    missing: bool
    raw_chars: int
    injected_chars: int
    truncated: bool


def render_project_context(
    files: Sequence[BootstrapFile],
    *,
    max_chars: int = DEFAULT_BOOTSTRAP_MAX_CHARS,
    total_max_chars: int = DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS,
) -> tuple[str, list[InjectedFile]]:
    """The project context section and what each file contributed. Missing files are left
    out (and reported); once the total cap is spent, later files are left out too."""
    blocks: list[str] = []
    report: list[InjectedFile] = []
    remaining = max(0, total_max_chars)
    for f in files:
        if f.content is None:
            report.append(InjectedFile(f.name, f.path, True, 0, 0, False))
            continue
        raw = f.content.strip("\n")
        budget = min(max_chars, remaining)
        if not raw.strip() or budget < _MIN_FILE_CHARS:
            report.append(InjectedFile(f.name, f.path, False, len(raw), 0, bool(raw.strip())))
            continue
        text, truncated = truncate_bootstrap(raw, budget, name=f.name)
        remaining -= len(text)
        blocks.append(f"## {f.name}\n\n{text}")
        report.append(InjectedFile(f.name, f.path, False, len(raw), len(text), truncated))
    if not blocks:
        return "", report
    intro = ["# Project Context", "", "The following workspace files were loaded:"]
    if any(r.name.upper() == "SOUL.MD" and r.injected_chars for r in report):
        intro += ["", "SOUL.md is present: embody the persona and tone it describes."]
    return "\n".join(intro) + "\n\n" + "\n\n".join(blocks), report
