"""A connection as the operator desks see it, and a tool context of a run in `main`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from runtime.tools import ToolContext


@attrs.define(eq=False)
class Conn:
    """A connection as the questions see it; keeps the frames it is sent."""

    conn_id: str
    scopes: frozenset[str]
    role: str = "operator"
    frames: list[dict[str, Any]] = attrs.field(factory=list)

    @property
    def wants_tool_events(self) -> bool:
        return False

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes or "operator.admin" in self.scopes

    def push_event(self, frame: bytes) -> None:
        self.frames.append(json.loads(frame))

    def events(self, name: str) -> list[dict[str, Any]]:
        return [f["payload"] for f in self.frames if f["event"] == name]


def ctx(tmp_path: Path, session_key: str = "agent:main:main") -> ToolContext:
    async def send(text: str) -> None:
        raise AssertionError(text)

    return ToolContext(
        workspace=tmp_path,
        agent_id="main",
        session_key=session_key,
        session_id="s-1",
        run_id="run-1",
        on_update=lambda _p: None,
        send_message=send,
    )
