"""Helpers of the actors' tests: a hub subscriber that decodes what it gets, and submitting a run."""

from __future__ import annotations

from typing import Any

import msgspec

from actors import (
    RunRecord,
    RunRequest,
    Supervisor,
)


class Sink:
    """A hub subscriber that decodes what it gets."""

    def __init__(self, conn_id: str = "sink", tools: bool = False) -> None:
        self._id = conn_id
        self._tools = tools
        self.frames: list[dict[str, Any]] = []

    @property
    def conn_id(self) -> str:
        return self._id

    @property
    def wants_tool_events(self) -> bool:
        return self._tools

    def push_event(self, frame: bytes) -> None:
        self.frames.append(msgspec.json.decode(frame))

    def agent(self, run_id: str) -> list[dict[str, Any]]:
        return [
            f["payload"]
            for f in self.frames
            if f["event"] == "agent" and f["payload"]["runId"] == run_id
        ]


async def submit(sup: Supervisor, key: str, run_id: str, message: str, **kw: Any) -> RunRecord:
    actor = await sup.session(f"agent:main:{key}", "main")
    assert actor.row is not None
    record = RunRecord(
        run_id=run_id,
        session_key=actor.key,
        session_id=actor.row.sessionId,
        agent_id="main",
        accepted_at=0,
    )
    sup.registry.add(record)
    sup.hub.open_run(run_id, actor.key, session_id=actor.row.sessionId, agent_id="main")
    sup.submit(actor, RunRequest(record=record, message=message, **kw))
    return record
