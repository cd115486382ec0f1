"""What the exec and process tests share: whether a pid still runs, read from the OS, the
`local` model's tool directives that drive a job through a turn, and a hook holding a tool's
result until the run is aborted (`HeldResult`).

Liveness is read from the OS (`os.kill(pid, 0)` and /proc) in a bounded loop: waiting for the
kernel, not for another task. A zombie counts as gone: it runs nothing, and whether it is
reaped promptly depends on this machine's init.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import trio

from transports import GatewayClient

__all__ = ["HeldResult", "assert_all_gone", "running", "tool_directive", "turn_text"]


class HeldResult:
    """An `after_tool_call` hook holding the first result of tool `name` (the call returned,
    its result not yet kept) until the run's abort cancels it; `held` is set once it holds."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.held = trio.Event()
        self._holding = True

    async def __call__(self, event: Any) -> None:
        if event.toolName == self.name and self._holding:
            self._holding = False
            self.held.set()
            await trio.sleep_forever()  # until the run's abort cancels it


def running(pid: int) -> bool:
    """Whether `pid` is a process that runs (neither gone nor a zombie)."""
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def assert_all_gone(pids: list[int], polls: int = 250) -> None:
    """Poll the OS (every 20 ms, at most `polls` times) until none of `pids` runs."""
    for _ in range(polls):
        if not any(running(pid) for pid in pids):
            break
        await trio.sleep(0.02)
    assert [pid for pid in pids if running(pid)] == []


def tool_directive(name: str, **args: Any) -> str:
    """The `local` model's directive to call tool `name` with `args`."""
    return f"[[tool:{name} {json.dumps(args)}]]"


async def turn_text(client: GatewayClient, key: str, message: str, run_id: str) -> str:
    """Run one turn of session `key` over the gateway; the text of its reply (it must end ok)."""
    final = await client.request(
        "agent",
        {"sessionKey": key, "message": message, "idempotencyKey": run_id},
        expect_final=True,
    )
    assert final["status"] == "ok", final
    return str(final["result"]["payloads"][0]["text"])
