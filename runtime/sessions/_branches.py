"""A transcript's branches: its tips, the active one, and where a rewind or fork cuts it.

A transcript is a tree (each entry's `parentId`); the session runs on the branch that ends
at its last entry (`branch_path`). Moving to another branch never rewrites or deletes an
entry: it appends a *branch marker* (a `custom` entry of type `BRANCH_MARKER`, never part of
the model context) whose parent is where the session continues from: the entry before a
user message (`sessions.rewind`: that message and everything after it stay, on a side
branch) or another branch's tip (`sessions.branches.switch`). The next run's entries chain
onto the marker, so the model sees exactly the chosen branch.

- `branch_tips(entries)`: each branch's tip (a message entry no other message continues
  from), with OpenClaw's `{leafEntryId, headline, messageCount, updatedAt, active}`.
- `cut_before_user_message(entries, entry_id)`: where a rewind or a fork at a user message
  continues from (its parent; None for the root) and that message's text (the editor text
  OpenClaw hands back). Raises `BranchError` with OpenClaw's messages: `message entry not
  found`, `entry is not a user message`, `message entry is not on the active path`.
- `check_switch(entries, leaf_id)`: `BranchError` unless `leaf_id` is a tip of another branch
  (`branch entry not found`, `entry is not a branch tip`, `branch is already active`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..llm._types import UserMessage
from ..protocol import ClawlaneError
from ._sessions import CustomEntry, MessageEntry, TranscriptEntry, branch_path

__all__ = [
    "BRANCH_MARKER",
    "BranchError",
    "branch_messages",
    "branch_tips",
    "check_switch",
    "cut_before_user_message",
    "message_text",
]

BRANCH_MARKER: Final = "clawlane.branch"
HEADLINE_MAX: Final = 120


class BranchError(ClawlaneError, ValueError):
    """A rewind, fork or branch switch names an entry it cannot use (the message says why)."""


def _is_marker(entry: TranscriptEntry) -> bool:
    return isinstance(entry, CustomEntry) and entry.customType == BRANCH_MARKER


def message_text(message: Any) -> str:
    """A message's text (its text parts joined)."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content.strip()
    return " ".join(getattr(c, "text", "") for c in content if hasattr(c, "text")).strip()


def branch_messages(entries: Sequence[TranscriptEntry]) -> list[MessageEntry]:
    """The message entries of the active branch, root first."""
    return [e for e in branch_path(entries) if isinstance(e, MessageEntry)]


def _path_to(by_id: dict[str, TranscriptEntry], entry: TranscriptEntry) -> list[TranscriptEntry]:
    path: list[TranscriptEntry] = []
    seen: set[str] = set()
    node: TranscriptEntry | None = entry
    while node is not None and node.id not in seen:
        seen.add(node.id)
        path.append(node)
        node = by_id.get(node.parentId) if node.parentId is not None else None
    path.reverse()
    return path


def branch_tips(entries: Sequence[TranscriptEntry]) -> list[dict[str, Any]]:
    """Each branch's tip, oldest first (see the module docstring)."""
    by_id = {e.id: e for e in entries}
    continued: set[str] = set()
    for entry in entries:
        if isinstance(entry, MessageEntry):
            # every entry above a message is continued by it
            node = by_id.get(entry.parentId) if entry.parentId is not None else None
            while node is not None and node.id not in continued:
                continued.add(node.id)
                node = by_id.get(node.parentId) if node.parentId is not None else None
    active = branch_messages(entries)
    active_id = active[-1].id if active else None
    tips = []
    for entry in entries:
        if not isinstance(entry, MessageEntry) or entry.id in continued:
            continue
        messages = [e for e in _path_to(by_id, entry) if isinstance(e, MessageEntry)]
        users = [m for m in messages if isinstance(m.message, UserMessage)]
        headline = message_text(users[-1].message if users else entry.message)
        tips.append(
            {
                "leafEntryId": entry.id,
                "headline": headline[:HEADLINE_MAX] or "(no text)",
                "messageCount": len(messages),
                "updatedAt": entry.timestamp,
                "active": entry.id == active_id,
            }
        )
    return tips


def cut_before_user_message(
    entries: Sequence[TranscriptEntry], entry_id: str
) -> tuple[str | None, str]:
    """Where a rewind or fork at user message `entry_id` continues from, and its text."""
    entry = next((e for e in entries if e.id == entry_id), None)
    if entry is None or _is_marker(entry):
        raise BranchError(f"message entry not found: {entry_id}")
    if not isinstance(entry, MessageEntry) or not isinstance(entry.message, UserMessage):
        raise BranchError(f"entry is not a user message: {entry_id}")
    if all(e.id != entry_id for e in branch_path(entries)):
        raise BranchError(f"message entry is not on the active path: {entry_id}")
    return entry.parentId, message_text(entry.message)


def check_switch(entries: Sequence[TranscriptEntry], leaf_id: str) -> None:
    """Raise `BranchError` unless `leaf_id` is the tip of a branch that is not active."""
    tips = {t["leafEntryId"]: t for t in branch_tips(entries)}
    if all(e.id != leaf_id for e in entries):
        raise BranchError(f"branch entry not found: {leaf_id}")
    tip = tips.get(leaf_id)
    if tip is None:
        raise BranchError(f"entry is not a branch tip: {leaf_id}")
    if tip["active"]:
        raise BranchError(f"branch is already active: {leaf_id}")
