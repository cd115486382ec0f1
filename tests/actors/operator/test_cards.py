"""`ProgressCards` and `progress_card`: a write replaces the whole card and counts a revision
(clears too), a conditional clear retires only a finished card at its revision, the
operators are told, the rules refuse what OpenClaw's refuse, and the tool's receipt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors import EventHub
from actors.operator import ProgressCards
from runtime.tools import ProgressCardError, ProgressCardTool, invoke_tool, normalize_card
from tests.actors.operator._conn import Conn, ctx
from tests.conftest import frame_checker

KEY = "agent:main:main"
READER = frozenset({"operator.read"})


def setup(*conns: Conn) -> ProgressCards:
    return ProgressCards(EventHub(), {c.conn_id: c for c in conns}, now_ms=lambda: 5)


def plan(*statuses: str) -> list[dict[str, str]]:
    return [{"step": f"step {i}", "status": s} for i, s in enumerate(statuses)]


async def test_each_write_replaces_the_card_and_the_operators_are_told() -> None:
    reader, other = Conn("a", READER), Conn("b", frozenset({"operator.questions"}))
    cards = setup(reader, other)
    first = cards.put(KEY, {"markdown": "note", "steps": plan("completed", "in_progress")})
    assert first == {
        "sessionKey": KEY,
        "revision": 1,
        "updatedAt": 5,
        "markdown": "note",
        "steps": plan("completed", "in_progress"),
    }
    frame_checker().validate("ProgressCard", first)
    second = cards.put(KEY, {"markdown": "only a note"})
    assert second is not None and "steps" not in second and second["revision"] == 2
    assert cards.put(KEY, {}) is None and cards.get(KEY) is None
    third = cards.put(KEY, {"markdown": "again"})
    assert third is not None and third["revision"] == 4  # the clear counted
    changed = reader.events("progressCard.changed")
    for payload in changed:
        frame_checker().validate("ProgressCardChangedEvent", payload)
    assert [p["revision"] for p in changed] == [1, 2, None, 4]
    assert other.frames == []


async def test_a_conditional_clear_retires_only_a_finished_card_at_its_revision() -> None:
    cards = setup()
    cards.put(KEY, {"steps": plan("completed", "pending")})
    assert cards.put(KEY, {}, expected_revision=1) == cards.get(KEY)  # unfinished: kept
    cards.put(KEY, {"steps": plan("completed", "completed")})
    assert cards.put(KEY, {}, expected_revision=1) == cards.get(KEY)  # stale: kept
    assert cards.put(KEY, {}, expected_revision=2) is None and cards.get(KEY) is None


@pytest.mark.parametrize(
    ("markdown", "steps", "error"),
    [
        ("x" * 8193, None, "progress card markdown exceeds 8192 UTF-8 bytes"),
        (None, plan(*["pending"] * 51), "plan can contain at most 50 steps"),
        (None, [{"step": "é" * 257, "status": "pending"}], "plan[0].step exceeds 512"),
        (None, [{"step": " \u200b ", "status": "pending"}], "plan[0].step must not be empty"),
        (None, [{"step": "a", "status": "done"}], "plan[0].status must be one of pending"),
        (None, plan("in_progress", "in_progress"), "at most one in_progress step"),
    ],
)
def test_a_card_that_breaks_the_rules_is_refused(
    markdown: str | None, steps: list[dict[str, str]] | None, error: str
) -> None:
    with pytest.raises(ProgressCardError, match=error.replace("[", r"\[").replace("]", r"\]")):
        normalize_card(markdown, steps)


def test_invisible_characters_are_removed_and_blank_parts_clear() -> None:
    assert normalize_card("a\u200bb\u202e", plan("pending")) == {
        "markdown": "ab",
        "steps": plan("pending"),
    }
    assert normalize_card("  \n", []) == {}


async def test_the_tool_writes_the_sessions_card_and_answers_a_receipt(tmp_path: Path) -> None:
    reader = Conn("a", READER)
    cards = setup(reader)
    tool = ProgressCardTool(cards)
    args: dict[str, Any] = {"plan": plan("completed", "in_progress", "pending")}
    updated = await invoke_tool(tool, args, ctx(tmp_path))
    assert updated.content[0].text == "Progress card updated (rev 1, 1/3 done)"  # type: ignore[union-attr]
    assert updated.details == {"revision": 1, "steps": {"completed": 1, "total": 3}}
    note = await invoke_tool(tool, {"markdown": "halfway"}, ctx(tmp_path))
    assert note.content[0].text == "Progress card updated (rev 2)"  # type: ignore[union-attr]
    assert note.details == {"revision": 2, "steps": None}
    cleared = await invoke_tool(tool, {}, ctx(tmp_path))
    assert cleared.content[0].text == "Progress card cleared"  # type: ignore[union-attr]
    assert cleared.details == {"revision": None, "steps": None}
    bad = await invoke_tool(tool, {"plan": plan("in_progress", "in_progress")}, ctx(tmp_path))
    assert bad.is_error and "at most one in_progress step" in bad.content[0].text  # type: ignore[union-attr]
    assert [p["revision"] for p in reader.events("progressCard.changed")] == [1, 2, None]


async def test_a_reset_clears_the_card_and_a_delete_forgets_it() -> None:
    reader = Conn("a", READER)
    cards = setup(reader)
    cards.reset(KEY)  # never had a card: nothing happens, nobody is told
    assert reader.frames == []
    cards.put(KEY, {"markdown": "work"})
    cards.reset(KEY)
    assert cards.get(KEY) is None
    assert [p["revision"] for p in reader.events("progressCard.changed")] == [1, None]
    cards.forget(KEY)
    fresh = cards.put(KEY, {"markdown": "new task"})
    assert fresh is not None and fresh["revision"] == 1 and len(cards) == 1


async def test_a_subagent_is_told_the_card_is_its_parents(tmp_path: Path) -> None:
    cards = setup()
    child = ctx(tmp_path, session_key="agent:main:subagent:1234")
    result = await invoke_tool(ProgressCardTool(cards), {"markdown": "x"}, child)
    assert result.is_error and "only in the parent session" in result.content[0].text  # type: ignore[union-attr]
    assert len(cards) == 0
