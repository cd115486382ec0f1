"""OpenClaw's presence (`system-presence`, the `presence` event, `hello-ok.snapshot.presence`):
the gateway itself, then each connected UI client (`PRESENCE_MODES`: the Control UI, the
terminal UI; one-shot CLI calls and backends do not appear).

In a cluster every node's part is in every node's list, as OpenClaw's Control UI
shows one gateway's clients in its Instances view, whichever worker it reached. A node's
part is its own gateway entry (with its node id as `instanceId`) and its UI clients' entries,
plus the device ids of all its connections (`device.pair.list` marks a device `connected`
wherever it is connected). A node tells its part to the other nodes (`Router.tell_all`,
rate-limited to one notice per `TELL_INTERVAL_S` whatever the churn, each the whole part,
so a lost one is repaired by the next), and to a node that joins; it forgets a node's part
when that node is gone or starts again (a new process has no connections yet).

Bounds: at most `MAX_CLIENT_ENTRIES` client entries in the list (this node's first), at most
`MAX_NODE_DEVICES` device ids per node's part.
"""

from __future__ import annotations

import platform
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import attrs
import trio

from actors import EventHub

__all__ = ["MAX_CLIENT_ENTRIES", "PRESENCE_MODES", "Presence"]

PRESENCE_MODES: Final = frozenset({"webchat", "ui"})
"""Clients that appear in presence (the UIs; one-shot CLI calls and backends do not)."""
MAX_CLIENT_ENTRIES: Final = 200
MAX_NODE_DEVICES: Final = 10_000
TELL_INTERVAL_S: Final = 0.2

Note = dict[str, Any]


class _Client(Protocol):
    client_id: str
    client_mode: str
    instance_id: str
    device_id: str | None
    role: str
    scopes: frozenset[str]


@attrs.frozen
class _Part:
    """What another node told of its presence."""

    entries: list[dict[str, Any]]
    devices: frozenset[str]


class Presence:
    """This gateway's presence list and its version (see the module docstring)."""

    def __init__(self, hub: EventHub, connections: Mapping[str, _Client], version: str) -> None:
        self.hub = hub
        self.connections = connections
        self.software = version
        self.version = 0
        """`stateVersion.presence`: grows with every change of the list."""
        self.node_id: str | None = None
        self._parts: dict[str, _Part] = {}
        self._dirty = trio.Event()

    # --- the list ----------------------------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        """The list: the gateways (this one first), then the clients (this node's first)."""
        now = int(time.time() * 1000)
        own = self._own_entries(now)
        gateways, clients = own[:1], own[1:]
        for part in self._parts.values():
            gateways.extend(e for e in part.entries if e.get("reason") == "self")
            clients.extend(e for e in part.entries if e.get("reason") != "self")
        return gateways + clients[:MAX_CLIENT_ENTRIES]

    def device_ids(self) -> set[str]:
        """The devices connected to this node or (in a cluster) to any other."""
        found = {c.device_id for c in self.connections.values() if c.device_id}
        for part in self._parts.values():
            found |= part.devices
        return found

    def _own_entries(self, now: int) -> list[dict[str, Any]]:
        host = socket.gethostname()
        text = f"Gateway: {host} · clawlane {self.software} · mode gateway"
        me: dict[str, Any] = {
            "host": host,
            "version": self.software,
            "platform": platform.system().lower(),
            "mode": "gateway",
            "reason": "self",
            "text": text if self.node_id is None else f"{text} · node {self.node_id}",
            "ts": now,
        }
        if self.node_id is not None:
            me["instanceId"] = self.node_id
        shown = [c for c in self.connections.values() if c.client_mode in PRESENCE_MODES]
        return [me, *(_client_entry(c, now) for c in shown[:MAX_CLIENT_ENTRIES])]

    # --- changes -----------------------------------------------------------------------------

    def changed(self, *, shown: bool = True) -> None:
        """This node's part changed: its UI clients (`shown`: the list changed, tell this
        node's readers) or only the devices connected (for the other nodes)."""
        if shown:
            self._bump()
        self._dirty.set()

    def _bump(self) -> None:
        self.version += 1
        self.hub.broadcast("presence", {"presence": self.entries()}, readers_only=True)

    def part(self) -> Note:
        """This node's part, as a notice to the other nodes."""
        devices = sorted({c.device_id for c in self.connections.values() if c.device_id})
        return {"presence": self._own_entries(int(time.time() * 1000)), "devices": devices}

    def on_part(self, node: str, note: Note) -> None:
        """Another node told its part."""
        entries = [e for e in note.get("presence") or () if isinstance(e, dict)]
        devices = [d for d in note.get("devices") or () if isinstance(d, str)]
        part = _Part(entries[: MAX_CLIENT_ENTRIES + 1], frozenset(devices[:MAX_NODE_DEVICES]))
        before = self._parts.get(node)
        self._parts[node] = part
        if before is None or _shape(before.entries) != _shape(part.entries):
            self._bump()

    def on_node(self, node: str, how: str, tell: Callable[[str, Note], None]) -> None:
        """A node `joined` (first seen), said `hello` (its process started) or is `gone`:
        tell it this node's part, forget what an old process of it told."""
        if how in ("hello", "gone") and self._parts.pop(node, None) is not None:
            self._bump()
        if how in ("hello", "joined"):
            tell(node, self.part())

    async def run_telling(self, tell_all: Callable[[Note], None]) -> None:
        """Tell the other nodes this node's part after each change, at most once per
        `TELL_INTERVAL_S` (a rate limit: changes in between go out together). Until
        cancelled."""
        while True:
            await self._dirty.wait()
            self._dirty = trio.Event()
            tell_all(self.part())
            await trio.sleep(TELL_INTERVAL_S)


def _client_entry(conn: _Client, now: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"mode": conn.client_mode or "cli", "reason": "connect", "ts": now}
    if conn.client_id:
        entry["deviceFamily"] = conn.client_id
    if conn.instance_id:
        entry["instanceId"] = conn.instance_id
    if conn.device_id:
        entry["deviceId"] = conn.device_id
    if conn.scopes:
        entry["scopes"] = sorted(conn.scopes)
        entry["roles"] = [conn.role]
    return entry


def _shape(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries without their time (a part told again unchanged changes nothing)."""
    return [{k: v for k, v in e.items() if k != "ts"} for e in entries]
