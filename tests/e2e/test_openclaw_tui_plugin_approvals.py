"""OpenClaw's terminal UI resolves a plugin approval (issue 33, item 5), with the exact frames
the 2026.9.6 TUI sends (`dist/tui-*.mjs`, src/tui/tui-plugin-approvals.ts, and its gateway
client `gateway-chat-*.mjs`): it connects with the `plugin-approvals` cap and
`operator.approvals`, lists `plugin.approval.list {}` as its snapshot, takes
`plugin.approval.requested` events, shows one only when it parses (an id, a title, both
times) and belongs to its session (`matchesOwnedTuiSession`: the request's sessionKey and
agentId), answers with `plugin.approval.resolve {id, decision}` (an answer `{ok: false}` or
an error that is OpenClaw's stale one means "no longer pending"), and drops it on
`plugin.approval.resolved`. The run's `write` runs only after allow-once; a deny leaves no
file; the same answer again is accepted, another is the stale error the TUI recognises (its
"no longer pending").

Then the TUI itself (`openclaw tui` on Node 24 in a pseudo-terminal, skipped without it): its
first message makes the run's `write` ask; the overlay shows the approval (deny selected);
Up Up Enter allows once and the file is written, Enter alone denies and it is not."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import termios
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._openclaw import TUI_CONNECT, OpenClawClient, openclaw_client
from tests.e2e.test_openclaw_acp_approvals import bridge_env
from tests.e2e.test_openclaw_cli_grants import NODE, PACKAGE
from tests.e2e.test_plugin_approvals import WRITE, guard, marker

SESSION = "agent:main:main"
"""The TUI's session for the default agent."""
STALE = re.compile(
    r"\b(?:unknown or expired approval id|approval expired or not found|approval already resolved)\b",
    re.IGNORECASE,
)
"""What `isApprovalStaleError` (dist/approval-errors-*.mjs) matches in a message."""


def _trimmed(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def tui_parse(payload: Any) -> dict[str, Any] | None:
    """`parseTuiPluginApproval`: what the TUI makes of an event or list entry (None: it
    ignores it)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("request"), dict):
        return None
    request = payload["request"]
    approval_id = _trimmed(payload.get("id"))
    title = _trimmed(request.get("title"))
    created, expires = payload.get("createdAtMs"), payload.get("expiresAtMs")
    if not approval_id or not title or not isinstance(created, int) or not created:
        return None
    if not isinstance(expires, int) or not expires:
        return None
    return {"id": approval_id, "title": title, "request": request}


def tui_owns(approval: dict[str, Any], session: str = SESSION, agent: str = "main") -> bool:
    """`matchesOwnedTuiSession` for an `agent:<id>:<rest>` key: the request's sessionKey is
    the TUI's session and its agentId (when given) the TUI's agent."""
    request = approval["request"]
    owner = str(request.get("agentId") or "").lower()
    key = str(request.get("sessionKey") or "")
    return (not owner or owner == agent) and key.lower() == session.lower()


async def tui_sends_the_write(tui: OpenClawClient) -> str:
    run_id = str(uuid.uuid4())
    ack = await tui.call(
        "chat.send",
        {"sessionKey": SESSION, "message": WRITE, "deliver": False, "idempotencyKey": run_id},
    )
    assert ack == {"runId": run_id, "status": "started"}
    return run_id


async def approval_shown(tui: OpenClawClient) -> dict[str, Any]:
    """The approval the TUI would show: from the event, and the same from its refresh."""
    payload = await tui.until(lambda e, p: e == "plugin.approval.requested")
    shown = tui_parse(payload)
    assert shown is not None and tui_owns(shown), payload
    assert shown["request"]["toolName"] == "write"
    assert shown["request"]["allowedDecisions"] == ["allow-once", "allow-always", "deny"]
    snapshot = [tui_parse(entry) for entry in await tui.call("plugin.approval.list", {})]
    assert [a["id"] for a in snapshot if a is not None and tui_owns(a)] == [shown["id"]]
    return shown


async def resolve_as_the_tui(tmp_path: Path, decision: str) -> dict[str, Any]:
    """A run in the TUI's session raises the plugin approval; the TUI answers `decision`.
    The run's final chat event."""
    async with running_gateway(tmp_path, local_config(messages__queue__debounceMs=0)) as gw:
        guard(gw)
        async with openclaw_client(gw, TUI_CONNECT) as tui:
            assert await tui.call("plugin.approval.list", {}) == []
            run_id = await tui_sends_the_write(tui)
            shown = await approval_shown(tui)
            assert not marker(tmp_path).exists(), "the tool ran before the approval"
            answer = await tui.call(
                "plugin.approval.resolve", {"id": shown["id"], "decision": decision}
            )
            assert answer.get("ok") is not False
            resolved = await tui.until(
                lambda e, p: e == "plugin.approval.resolved" and p["id"] == shown["id"]
            )
            assert resolved["decision"] == decision
            final = await tui.chat_final(run_id)
            same = await tui.call(
                "plugin.approval.resolve", {"id": shown["id"], "decision": decision}
            )
            assert same == {"ok": True}  # the same answer again is idempotent, as OpenClaw's
            other = "deny" if decision != "deny" else "allow-once"
            stale = await tui.call(
                "plugin.approval.resolve", {"id": shown["id"], "decision": other}, ok=False
            )
            assert stale["code"] == "INVALID_REQUEST" and STALE.search(stale["message"]), stale
            assert await tui.call("plugin.approval.list", {}) == []
    return final


def text(final: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in final["message"]["content"])


async def test_the_tui_allows_once_and_the_tool_runs(tmp_path: Path) -> None:
    with trio.fail_after(40):
        final = await resolve_as_the_tui(tmp_path, "allow-once")
    assert final["state"] == "final" and "write:" in text(final)
    assert marker(tmp_path).read_text() == "ran"


async def test_the_tui_denies_and_the_tool_does_not_run(tmp_path: Path) -> None:
    with trio.fail_after(40):
        final = await resolve_as_the_tui(tmp_path, "deny")
    assert final["state"] == "final" and "denied by the operator" in text(final)
    assert not marker(tmp_path).exists()


# --- the TUI itself -------------------------------------------------------------------------

TOKEN = "tui-approvals-token"
UP, ENTER = b"\x1b[A", b"\r"
_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


class Terminal:
    """The TUI's pseudo-terminal: keys in, the screen's text (escapes removed) out."""

    def __init__(self, master: int) -> None:
        self.stream = trio.lowlevel.FdStream(master)
        self.raw = bytearray()
        self._changed = trio.Event()

    @property
    def text(self) -> str:
        return _ESCAPES.sub(b"", bytes(self.raw)).decode(errors="replace")

    async def reader(self) -> None:
        while True:
            try:
                data = await self.stream.receive_some(65536)
            except (OSError, trio.ClosedResourceError):  # EIO: the TUI exited
                return
            if not data:
                return
            self.raw.extend(data)
            self._changed.set()
            self._changed = trio.Event()

    async def shows(self, words: str, after: int = 0) -> int:
        """Wait until the screen has shown `words` past offset `after` of the raw output;
        the raw length then."""
        while words not in _ESCAPES.sub(b"", bytes(self.raw[after:])).decode(errors="replace"):
            await self._changed.wait()
        return len(self.raw)

    async def key(self, key: bytes, then: str) -> None:
        """Press `key` and wait for the screen to show `then`."""
        mark = len(self.raw)
        await self.stream.send_all(key)
        await self.shows(then, mark)


def open_terminal() -> tuple[int, int]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    return master, slave


async def run_the_tui(tmp_path: Path, keys: list[tuple[bytes, str]]) -> tuple[str, Any]:
    """`openclaw tui` in a pseudo-terminal, sending the write as its first message; when the
    plugin approval's overlay shows (deny selected), press `keys`, each waiting for what the
    screen shows after it. The screen's text and the approval's history record."""
    config = local_config(messages__queue__debounceMs=0)
    async with running_gateway(tmp_path, config, token=TOKEN) as gw:
        guard(gw)
        port = gw.listeners[0].socket.getsockname()[1]
        env = {**bridge_env(tmp_path / "openclaw-home"), "TERM": "xterm-256color"}
        argv = [str(NODE), str(PACKAGE / "openclaw.mjs"), "tui", "--session", "main"]
        argv += ["--url", f"ws://127.0.0.1:{port}", "--token", TOKEN, "--message", WRITE]
        master, slave = open_terminal()
        try:
            process = await trio.lowlevel.open_process(
                argv, env=env, stdin=slave, stdout=slave, stderr=slave
            )
        finally:
            os.close(slave)
        screen = Terminal(master)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(screen.reader)
                await screen.shows("Write a file")
                mark = await screen.shows("→ Deny")  # the overlay, deny selected
                assert not marker(tmp_path).exists(), "the tool ran before the approval"
                for key, then in keys:
                    await screen.key(key, then)
                await screen.shows("idle", mark)
                async with open_client(gw, token=TOKEN) as admin:
                    history = await admin.request("approval.history", {"kind": "plugin"})
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                process.kill()
                await process.wait()
                await screen.stream.aclose()
    return screen.text, history


def skip_without_openclaw() -> None:
    if not NODE.exists() or not (PACKAGE / "openclaw.mjs").exists():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")


async def test_the_real_tui_allows_once_and_the_tool_runs(tmp_path: Path) -> None:
    skip_without_openclaw()
    with trio.fail_after(90):
        keys = [
            (UP, "→ Always allow"),
            (UP, "→ Allow once"),  # moving onto an allow arms it: one Enter resolves
            (ENTER, "plugin approval: allowed once"),
        ]
        text, history = await run_the_tui(tmp_path, keys)
    assert "plugin approval: allowed once" in text
    assert "Tool: write" in text and "Plugin: guard" in text
    assert marker(tmp_path).read_text() == "ran"
    [item] = history["items"]
    assert item["decision"] == "allow-once"


async def test_the_real_tui_denies_and_the_tool_does_not_run(tmp_path: Path) -> None:
    skip_without_openclaw()
    with trio.fail_after(90):
        text, history = await run_the_tui(tmp_path, [(ENTER, "plugin approval: denied")])
    assert "plugin approval: denied" in text
    assert not marker(tmp_path).exists()
    [item] = history["items"]
    assert item["decision"] == "deny"
