"""Device pairing across a cluster: two gateways in this process with state dirs of their
own (as on two machines), one PostgreSQL schema and one Redis. A device asks to pair on
node A, is approved through node B, and then connects with its device token on either node
from a remote address (no silent pairing to lean on). Skipped, saying why, only when Redis
or PostgreSQL cannot be reached."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.devices._device_auth import DeviceIdentity
from runtime.model._config import Config
from tests.actors._cluster_nodes import REDIS_URL, drop_prefix, require_redis
from tests.actors._databases import pg_url
from tests.conftest import gateway_url, local_config, open_client, running_gateway
from tests.e2e._events import next_event
from transports import GatewayAuthError, GatewayClient, open_gateway_client
from transports.server._gateway import Gateway

__all__ = ["pg_url"]  # the fixture, used by name

REMOTE = "127.0.0.2"
TOKEN = "cluster-pairing-test-token"
SCOPES = ["operator.read"]


def node_config(pg: str, prefix: str, node_id: str, **extra: Any) -> Config:
    """A node on PostgreSQL and Redis with token auth (`extra`: more, as `local_config`
    takes it)."""
    return local_config(
        **extra,
        gateway__auth={"mode": "token", "token": TOKEN},
        storage={"backend": "postgres", "postgres": {"url": pg}},
        cluster={"redis": {"url": REDIS_URL, "keyPrefix": prefix}, "nodeId": node_id},
    )


@asynccontextmanager
async def two_nodes(tmp_path: Path, pg: str) -> AsyncIterator[tuple[Gateway, Gateway]]:
    """Nodes A and B, each treating 127.0.0.2 as a remote client address."""
    await require_redis()
    prefix = f"clawlane-test:{secrets.token_hex(6)}:"
    remote = frozenset({REMOTE})
    try:
        async with (
            running_gateway(
                tmp_path / "a", node_config(pg, prefix, "node-a"), remote_peer_addresses=remote
            ) as a,
            running_gateway(
                tmp_path / "b", node_config(pg, prefix, "node-b"), remote_peer_addresses=remote
            ) as b,
        ):
            yield a, b
    finally:
        await drop_prefix(prefix)


def remote_device(
    gw: Gateway, device: DeviceIdentity, *, token: str = TOKEN, device_token: str | None = None
) -> AbstractAsyncContextManager[GatewayClient]:
    return open_gateway_client(
        gateway_url(gw),
        token=token,
        client_id="cli",
        mode="cli",
        device=device,
        device_token=device_token,
        scopes=SCOPES,
        local_address=REMOTE,
    )


async def test_a_device_approved_through_one_node_connects_to_another(
    tmp_path: Path, pg_url: str
) -> None:
    device = DeviceIdentity.generate()
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as (a, b):
            with pytest.raises(GatewayAuthError) as asked:
                async with remote_device(a, device):
                    pass
            assert asked.value.code == "NOT_PAIRED"
            request_id = asked.value.details["requestId"]
            async with open_client(b) as admin:  # an operator on the other node
                listing = await admin.request("device.pair.list", {})
                assert [p["requestId"] for p in listing["pending"]] == [request_id]
                approved = await admin.request("device.pair.approve", {"requestId": request_id})
                assert approved["device"]["deviceId"] == device.device_id
            async with remote_device(a, device) as first:
                token = first.device_token
                assert token and first.hello["auth"]["scopes"] == SCOPES
            # the device token alone (no shared token) is a credential on node B too
            async with remote_device(b, device, token="", device_token=token) as again:
                assert again.device_token == token
                assert (await again.request("sessions.list", {}))["count"] == 0
            for node in (a, b):
                assert node.pairing.paired(device.device_id) is not None
            # the cluster's records are in PostgreSQL: no node wrote a pairing file
            assert not (tmp_path / "a" / "state" / "devices" / "pairing.json").exists()


async def test_pairing_events_and_a_removal_reach_every_node(tmp_path: Path, pg_url: str) -> None:
    """An operator on node B sees the pairing events of a device asking on node A, and
    removing the device through B closes its connection on A (the connections of a device
    whose pairing went away close on every node, as on one)."""
    device = DeviceIdentity.generate()
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as (a, b), open_client(b) as admin:
            with pytest.raises(GatewayAuthError) as asked:
                async with remote_device(a, device):
                    pass
            request_id = asked.value.details["requestId"]
            requested = await next_event(admin, "device.pair.requested")
            assert requested["requestId"] == request_id
            assert requested["deviceId"] == device.device_id
            async with open_client(a) as admin_a:
                await admin_a.request("device.pair.approve", {"requestId": request_id})
            resolved = await next_event(admin, "device.pair.resolved")
            assert resolved["requestId"] == request_id and resolved["decision"] == "approved"
            async with remote_device(a, device) as paired:
                removed = await admin.request("device.pair.remove", {"deviceId": device.device_id})
                assert removed["deviceId"] == device.device_id
                async for _ in paired.events:  # until node A closes the connection
                    pass
                assert paired.closed is not None and paired.closed.code == 1008
                assert paired.closed.reason == "device-pair-removed"
