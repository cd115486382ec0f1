"""What OpenClaw's Control UI shows of a cluster, whichever node it reached: two gateways in
this process (own state dirs, as on two machines), one PostgreSQL schema and one Redis.

- presence: a UI client on node A is in the presence of node B (its `presence` events,
  `system-presence`), beside both gateways; gone from it when the client leaves;
- `device.pair.list` on B marks a device connected to A `connected`;
- user preferences set through B are A's (read back, `users.prefs.changed` to A's clients,
  compare-and-set across the nodes).

Skipped, saying why, only when Redis or PostgreSQL cannot be reached."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from runtime.devices._device_auth import DeviceIdentity
from runtime.model._config import Config
from tests.actors._cluster_nodes import drop_prefix, require_redis
from tests.actors._databases import pg_url
from tests.conftest import gateway_url, running_gateway
from tests.e2e._events import next_event
from tests.e2e._openclaw import CONTROL_UI_CONNECT, UI_ORIGIN, OpenClawClient, openclaw_client
from tests.e2e.test_cluster_pairing import TOKEN, node_config
from transports import GatewayClient, open_gateway_client
from transports.server._gateway import Gateway

__all__ = ["pg_url"]  # the fixture, used by name


def ui_node(pg: str, prefix: str, node_id: str) -> Config:
    """A node the Control UI (served from `UI_ORIGIN`) may connect to."""
    return node_config(pg, prefix, node_id, gateway__controlUi={"allowedOrigins": [UI_ORIGIN]})


@asynccontextmanager
async def two_nodes(tmp_path: Path, pg: str) -> AsyncIterator[tuple[Gateway, Gateway]]:
    await require_redis()
    prefix = f"clawlane-test:{secrets.token_hex(6)}:"
    try:
        async with (
            running_gateway(tmp_path / "a", ui_node(pg, prefix, "node-a")) as a,
            running_gateway(tmp_path / "b", ui_node(pg, prefix, "node-b")) as b,
        ):
            yield a, b
    finally:
        await drop_prefix(prefix)


def terminal_ui(gw: Gateway, device: DeviceIdentity) -> Any:
    """OpenClaw's terminal UI as presence sees it (mode `ui`), on a device of its own."""
    return open_gateway_client(
        gateway_url(gw),
        token=TOKEN,
        client_id="openclaw-tui",
        mode="ui",
        device=device,
        scopes=["operator.read", "operator.write"],
    )


def listed(payload: dict[str, Any], device_id: str) -> bool:
    return any(e.get("deviceId") == device_id for e in payload["presence"])


async def connected_flag(ui: OpenClawClient, device_id: str) -> bool:
    found = await ui.call("device.pair.list", {})
    return any(d["deviceId"] == device_id and d["connected"] for d in found["paired"])


async def test_the_control_ui_on_one_node_sees_the_clients_of_every_node(
    tmp_path: Path, pg_url: str
) -> None:
    device = DeviceIdentity.generate()
    with trio.fail_after(60):
        async with (
            two_nodes(tmp_path, pg_url) as (a, b),
            openclaw_client(b, CONTROL_UI_CONNECT) as ui,
        ):
            async with terminal_ui(a, device) as tui:
                await tui.request("status", {})
                joined = await ui.until(
                    lambda e, p: e == "presence" and listed(p, device.device_id)
                )
                gateways = {
                    e.get("instanceId") for e in joined["presence"] if e["reason"] == "self"
                }
                assert gateways == {"node-a", "node-b"}
                assert joined["presence"][0]["instanceId"] == "node-b"  # the one asked first
                answered = await ui.call("system-presence", {})
                assert any(e.get("deviceId") == device.device_id for e in answered)
                assert await connected_flag(ui, device.device_id)
                seen = {id(p) for _e, p in ui.events}  # the events before it leaves
            await ui.until(
                lambda e, p: (
                    e == "presence" and id(p) not in seen and not listed(p, device.device_id)
                )
            )
            assert not await connected_flag(ui, device.device_id)


async def test_preferences_set_through_one_node_are_every_nodes(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with (
            two_nodes(tmp_path, pg_url) as (a, b),
            openclaw_client(b, CONTROL_UI_CONNECT) as ui,
            terminal_ui(a, DeviceIdentity.generate()) as other,
        ):
            assert await ui.call("users.prefs.set", {"entries": {"ui.theme": "dark"}}) == {
                "status": "ok"
            }
            changed = await next_event(other, "users.prefs.changed")
            assert changed == {"entries": {"ui.theme": "dark"}}
            got = await other.request("users.prefs.get", {"keys": ["ui.theme"]})
            assert got == {"status": "ok", "entries": {"ui.theme": "dark"}}
            assert await set_theme(other, "light", expected="dark") == {"status": "ok"}
            stale = await ui.call(
                "users.prefs.set",
                {"entries": {"ui.theme": "blue"}, "expectedEntries": {"ui.theme": "dark"}},
            )
            assert stale == {"status": "conflict"}
            assert (await ui.call("users.prefs.get", {}))["entries"] == {"ui.theme": "light"}


async def set_theme(client: GatewayClient, theme: str, *, expected: str) -> Any:
    return await client.request(
        "users.prefs.set",
        {"entries": {"ui.theme": theme}, "expectedEntries": {"ui.theme": expected}},
    )


async def test_a_node_lists_the_gateway_of_a_node_started_after_it(
    tmp_path: Path, pg_url: str
) -> None:
    """Node b, started after a, tells a its part after its hello (a hello makes a forget
    what b's former process told): told before, it was forgotten, and a UI on a never
    listed b until something changed on b (OpenClaw's Instances view, `--workers 2`)."""

    def both(entries: list[dict[str, Any]]) -> bool:
        gateways = {e.get("instanceId") for e in entries if e.get("reason") == "self"}
        return gateways == {"node-a", "node-b"}

    with trio.fail_after(30):
        async with (
            two_nodes(tmp_path, pg_url) as (a, _b),
            openclaw_client(a, CONTROL_UI_CONNECT) as ui,
        ):
            if not both(ui.hello["snapshot"]["presence"]):
                await ui.until(lambda e, p: e == "presence" and both(p["presence"]))
            assert both(await ui.call("system-presence", {}))
