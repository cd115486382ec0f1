"""PostgreSQL cut under a cluster of two gateways (in this process, sharing Redis) as a node
takes a session's lease or loads its row: the request is answered the store's outage
(`UNAVAILABLE`, retryable, naming PostgreSQL), the node and its connections carry on, and
once the link heals the next request takes the lease (its fencing token recorded) and loads
the session.

Skipped, saying why, only when Redis or PostgreSQL cannot be reached."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import StoreError
from tests._tcp_proxy import open_tcp_proxy
from tests.actors._databases import pg_url
from tests.conftest import client_auth, gateway_url, open_client
from tests.e2e.test_cluster_nodes import ADMIN, two_nodes
from transports import GatewayRequestError, open_gateway_client

__all__ = ["pg_url"]  # the fixture, used by name


def _through(pg: str, port: int) -> str:
    parts = urllib.parse.urlsplit(pg)
    user = f"{parts.username}@" if parts.username else ""
    return parts._replace(netloc=f"{user}127.0.0.1:{port}").geturl()


async def _run(client: Any, session: str, run_id: str) -> dict[str, Any]:
    params = {"message": "hi", "idempotencyKey": run_id, "sessionKey": session}
    final: dict[str, Any] = await client.request("agent", params, expect_final=True, timeout=30)
    return final


def _assert_store_outage(exc: BaseException) -> None:
    assert isinstance(exc, GatewayRequestError), repr(exc)
    assert exc.code == "UNAVAILABLE", exc
    assert exc.message.startswith("the store is unavailable: "), exc.message
    assert "postgresql://" in exc.message and "internal error" not in exc.message


async def test_a_store_cut_as_a_node_takes_a_session_is_an_outage_and_heals(
    tmp_path: Path, pg_url: str
) -> None:
    server = urllib.parse.urlsplit(pg_url)
    with trio.fail_after(90):
        async with (
            open_tcp_proxy(server.hostname or "127.0.0.1", server.port or 5432) as proxy,
            two_nodes(tmp_path, _through(pg_url, proxy.port)) as nodes,
        ):
            a, b = nodes
            assert a.gw.router is not None and b.gw.router is not None
            frames: list[dict[str, Any]] = []
            async with (
                open_gateway_client(
                    gateway_url(a.gw), on_frame=frames.append, scopes=ADMIN, **client_auth(a.gw)
                ) as ca,
                open_client(b.gw, scopes=ADMIN) as cb,
            ):
                assert (await _run(ca, "before", "before-1"))["status"] == "ok"
                proxy.cut()
                # new sessions on both nodes: each takes the lease, and cannot record its
                # fencing token; twice on a, at once
                errors: list[BaseException] = []

                async def refused(client: Any, session: str, run_id: str) -> None:
                    with pytest.raises(GatewayRequestError) as info:
                        await _run(client, session, run_id)
                    errors.append(info.value)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(refused, ca, "fresh", "fresh-1")
                    nursery.start_soon(refused, ca, "fresh", "fresh-2")
                    nursery.start_soon(refused, cb, "fresh-b", "fresh-b-1")
                assert len(errors) == 3
                for exc in errors:
                    _assert_store_outage(exc)
                failed = [f for f in frames if f.get("ok") is False]
                assert failed and all(f["error"]["retryable"] is True for f in failed)
                key = a.gw.supervisor.resolve_key("fresh", None)
                assert key not in a.gw.router.leases.held  # not adopted: the next one does
                assert not a.stopped.is_set() and not b.stopped.is_set()
                proxy.heal()
                assert (await _run(ca, "fresh", "fresh-3"))["status"] == "ok"
                assert (await _run(cb, "fresh-b", "fresh-b-2"))["status"] == "ok"
                assert (await _run(ca, "before", "before-2"))["status"] == "ok"
                lease = a.gw.router.leases.held[key]
                # the fencing token was recorded: a write with an older one is refused
                actor = a.gw.supervisor.peek_session(key)
                assert actor is not None and actor.fence is not None
                assert actor.fence.token == lease.token


async def test_a_session_whose_load_fails_in_a_cut_is_loaded_by_the_next_request(
    tmp_path: Path, pg_url: str
) -> None:
    """Requests waiting on a session whose row could not be read get the `StoreError`
    (never an internal error): each tries the load itself, and the next one after the cut
    loads it."""
    server = urllib.parse.urlsplit(pg_url)
    with trio.fail_after(90):
        async with (
            open_tcp_proxy(server.hostname or "127.0.0.1", server.port or 5432) as proxy,
            two_nodes(tmp_path, _through(pg_url, proxy.port)) as nodes,
        ):
            a = nodes[0]
            async with open_client(a.gw, scopes=ADMIN) as ca:
                assert (await _run(ca, "loaded", "loaded-1"))["status"] == "ok"
            sup = a.gw.supervisor
            key = sup.resolve_key("loaded", None)
            sup.drop_session(key)
            proxy.cut()
            errors: list[BaseException] = []

            async def load() -> None:
                with pytest.raises(StoreError) as info:
                    await sup.session(key, "main")
                errors.append(info.value)

            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(load)
            assert len(errors) == 3 and all("postgresql://" in str(e) for e in errors)
            assert sup.peek_session(key) is None
            proxy.heal()
            actor = await sup.session(key, "main")
            assert actor.row is not None and not actor.created
