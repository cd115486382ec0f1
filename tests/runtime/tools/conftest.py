"""The tools' tests share a workspace and a tool context that allows no messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.tools import ToolContext, ensure_workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return ensure_workspace(tmp_path / "ws")


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    async def send_message(text: str) -> None:
        raise AssertionError(f"unexpected message {text!r}")

    return ToolContext(
        workspace=workspace,
        agent_id="main",
        session_key="agent:main:main",
        session_id="s-1",
        run_id="run-1",
        on_update=lambda partial: None,
        send_message=send_message,
    )
