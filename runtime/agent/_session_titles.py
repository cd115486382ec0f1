"""The title `sessions_list`'s `includeDerivedTitles` gives a session, as OpenClaw 2026.9.6
derives one (`deriveSessionTitle`, and its `deriveGoalSessionTitle` fallback when no model
names the session): the label, else the display name, else a title made of the first user
message of the transcript. Pure functions.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ..sessions._sessions import SessionRow

__all__ = ["TITLED_ROWS", "derived_title"]

TITLED_ROWS: Final = 100
"""`includeDerivedTitles` titles the first 100 rows of a page."""

_TASK_VERBS: Final = frozenset(
    (
        "add",
        "analyze",
        "build",
        "check",
        "compare",
        "create",
        "debug",
        "design",
        "draft",
        "explain",
        "find",
        "fix",
        "give",
        "help",
        "implement",
        "investigate",
        "list",
        "make",
        "plan",
        "prepare",
        "recommend",
        "recover",
        "rename",
        "resume",
        "review",
        "summarize",
        "test",
        "update",
        "write",
    )
)
_HOST_ENVELOPES: Final = (
    "# agents.md instructions for ",
    "<environment_context>",
    "<permissions instructions>",
    "<skills_instructions>",
    "<apps_instructions>",
    "<plugins_instructions>",
    "<recommended_plugins>",
    "<external_openclaw_",
    "openclaw runtime context",
)
_TITLE_MAX: Final = 60


def _utf16_cut(text: str, units: int) -> str:
    """`text`'s first `units` UTF-16 code units, a split surrogate pair left out."""
    return text.encode("utf-16-le")[: 2 * units].decode("utf-16-le", errors="ignore")


def _goal_title(text: str) -> str | None:
    text = " ".join(text.split())
    if not text or text.lower().startswith(_HOST_ENVELOPES) or text.startswith("/"):
        return None
    goal = text
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        words = re.sub(r"^[\"'`(\[{]+", "", sentence).split()
        if words and words[0].lower() in _TASK_VERBS:
            goal = sentence.strip()
            break
    if goal[:1] == goal[:1].lower():
        goal = goal[:1].upper() + goal[1:]
    if len(goal.encode("utf-16-le")) <= 2 * _TITLE_MAX:
        return goal
    cut = _utf16_cut(goal, _TITLE_MAX - 1)
    space = cut.rfind(" ")
    return f"{cut[:space]}…" if space > _TITLE_MAX * 0.6 else f"{cut}…"


def derived_title(row: SessionRow, messages: list[dict[str, Any]] | None = None) -> str | None:
    """OpenClaw's `derivedTitle` of a session: its label, else its display name, else (from
    `messages`, its branch) a title made of the first user message among the first 100
    that no other session sent: the first sentence that starts with a task verb ("fix",
    "write", ...; else the whole text), whitespace collapsed, the first letter capitalized,
    at most 60 UTF-16 units (cut at a word past the 36th, then "…"); none for a slash
    command or a host envelope."""
    if row.label or row.displayName:
        return row.label or row.displayName
    for message in (messages or [])[:100]:
        provenance = message.get("provenance") or {}
        if message.get("role") != "user" or provenance.get("kind") == "inter_session":
            continue
        content = message.get("content")
        if isinstance(content, str):
            text = content
        else:
            text = " ".join(b.get("text", "") for b in content or () if isinstance(b, dict))
        if text.strip():
            return _goal_title(text)
    return None
