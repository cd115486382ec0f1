"""Heartbeats on a cluster of two gateways (this process, one PostgreSQL, one Redis): a
heartbeat runs on the node that owns its session, and both nodes show the same ones.

- the cadence's tick, fired by the node running cron, runs on the node that owns the
  heartbeat's session, which keeps its lease; a `system-event` sent through the other node
  is queued on the owner and read by that heartbeat;
- a `wake` through the other node runs its heartbeat on the owner; `last-heartbeat` answers
  the same through either node, and `set-heartbeats` turns them off on both;
- `set-heartbeats` is stored for the cluster: a node that starts after it, or starts again,
  follows it; the whole cluster starting again has them on, as OpenClaw's gateway restarted;
- a cron `systemEvent` job, fired on the node running cron, is queued on the session's owner
  and its heartbeat runs there (`wakeMode: "now"`, the firing waiting for it), or waits
  there for the session's next turn (`next-heartbeat`); the session does not move.

The model is the `local` one (it answers `You said: <message>`, or its `[[...]]`
directives). Cross-node state is polled with a bound (`wait_for`): what it reads changes in
other nodes' tasks and in Redis. Skipped, saying why, when Redis or PostgreSQL cannot be
reached.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import trio

from tests.actors._cluster_nodes import drop_prefix, require_redis
from tests.actors._databases import pg_url
from tests.conftest import open_client, running_gateway
from tests.e2e.test_cluster_nodes import (
    ADMIN,
    Node,
    holders,
    node_config,
    two_nodes,
    wait_for,
)
from tests.e2e.test_sessions_chat import Watch
from transports import Gateway, GatewayClient

__all__ = ["pg_url"]  # the fixture, used by name

KEY = "agent:main:main"


def _beats(gw: Gateway) -> Any:
    beats = gw.supervisor.heartbeats
    assert beats is not None
    return beats


def _owns(node: Node, key: str = KEY) -> bool:
    router = node.gw.router
    return router is not None and key in router.leases.held


async def _lease_owner(gw: Gateway, key: str = KEY) -> str | None:
    assert gw.router is not None
    holder = await gw.router.cluster.leases.holder(f"session:{key}")
    return None if holder is None else holder.owner


async def _cron_and_other(nodes: list[Node]) -> tuple[Node, Node]:
    await wait_for(lambda: len(holders(nodes, "cron")) == 1, "a cron owner", timeout_s=5)
    [cron] = holders(nodes, "cron")
    [other] = [n for n in nodes if n is not cron]
    # its scheduler starts after it took the job (cron.* is unavailable until then)
    await wait_for(lambda: cron.gw.cron is not None, "the cron scheduler", timeout_s=5)
    return cron, other


async def _take(client: GatewayClient, run_id: str) -> None:
    """A turn in `KEY` through `client`'s node, which takes the session's lease."""
    final = await client.request(
        "agent",
        {"sessionKey": KEY, "message": "hello", "idempotencyKey": run_id},
        expect_final=True,
    )
    assert final["status"] == "ok", final


async def _same_last_heartbeat(a: GatewayClient, b: GatewayClient) -> dict[str, Any]:
    """`last-heartbeat` through both nodes, once they agree (a tick may land between the
    two requests: asked again, at most 50 times)."""
    for _ in range(50):
        first, second = await a.request("last-heartbeat", {}), await b.request("last-heartbeat", {})
        if first is not None and first == second:
            return dict(first)
        await trio.sleep(0.05)
    raise AssertionError(f"last-heartbeat differs: {first} != {second}")


async def test_the_cron_nodes_tick_runs_on_the_sessions_owner_with_the_event_sent_elsewhere(
    tmp_path: Path, pg_url: str
) -> None:
    w = Watch()
    beat = {"every": "1s"}
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url, agents__defaults__heartbeat=beat) as nodes:
            cron, owner = await _cron_and_other(nodes)
            async with (
                open_client(owner.gw, scopes=ADMIN) as at_owner,
                open_client(cron.gw, scopes=ADMIN, on_event=w) as at_cron,
            ):
                await _take(at_owner, "take")
                assert _owns(owner) and not _owns(cron)
                ticks_sent = _beats(cron.gw).sent
                # Queued through the node running cron, which does not own the session:
                # the text waits on the owner, for its next turn.
                text = "Disk check pending on host-7"
                assert await at_cron.request("system-event", {"text": text}) == {"ok": True}
                queue = owner.gw.supervisor.services.system_events
                assert queue.has(KEY)
                assert not cron.gw.supervisor.services.system_events.has(KEY)
                # The next tick is fired by the cron node, sent to the owner and run there,
                # reading the text: its alert reaches the cron node's client too.
                event = await w.until(
                    lambda e, p: e == "heartbeat" and text in (p.get("preview") or "")
                )
                assert (event["status"], event["reason"]) == ("skipped", "no-route")
                assert _beats(owner.gw).runs == 1 and _beats(cron.gw).runs == 0
                assert _beats(cron.gw).sent > ticks_sent
                assert not queue.has(KEY)
                # The session stayed where it was.
                assert _owns(owner) and not _owns(cron)
                assert await _lease_owner(cron.gw) == owner.gw.node.node_id  # type: ignore[union-attr]
                last = await _same_last_heartbeat(at_cron, at_owner)
                assert last["ts"] >= event["ts"]


async def test_a_wake_through_another_node_runs_on_the_owner_and_set_heartbeats_reaches_both(
    tmp_path: Path, pg_url: str
) -> None:
    w = Watch()
    beat = {"every": "0m", "prompt": "[[reply:HEARTBEAT_OK]]"}
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url, agents__defaults__heartbeat=beat) as nodes:
            owner, other = nodes
            async with (
                open_client(owner.gw, scopes=ADMIN) as at_owner,
                open_client(other.gw, scopes=ADMIN, on_event=w) as at_other,
            ):
                await _take(at_owner, "take")
                request = {"mode": "now", "text": "look now", "sessionKey": KEY}
                assert await at_other.request("wake", request) == {"ok": True}
                event = await w.until(lambda e, p: e == "heartbeat")
                assert (event["status"], event["reason"]) == ("ok-token", "wake")
                assert _beats(owner.gw).runs == 1 and _beats(other.gw).runs == 0
                assert _owns(owner) and not _owns(other)
                assert await _same_last_heartbeat(at_other, at_owner) == event
                # Off through one node: off on both (a wake through the other is skipped).
                assert await at_owner.request("set-heartbeats", {"enabled": False}) == {
                    "ok": True,
                    "enabled": False,
                }
                await wait_for(lambda: not _beats(other.gw).enabled, "off there", timeout_s=5)
                await at_other.request("wake", {**request, "text": "again"})
                off = await w.until(lambda e, p: e == "heartbeat" and p.get("reason") == "disabled")
                assert off["status"] == "skipped"
                assert _beats(owner.gw).runs == 1 and _beats(other.gw).runs == 0


async def _fire(client: GatewayClient, w: Watch, mode: str, text: str) -> dict[str, Any]:
    """A `systemEvent` job into the main session, run now through `client` (the cron node's
    client, `w` its events): its `finished` cron event."""
    job = await client.request(
        "cron.add",
        {
            "name": text,
            "schedule": {"kind": "every", "everyMs": 3_600_000},
            "sessionTarget": "main",
            "wakeMode": mode,
            "payload": {"kind": "systemEvent", "text": text},
        },
    )
    await client.request("cron.run", {"id": job["id"], "mode": "force"})
    finished: dict[str, Any] = await w.until(
        lambda e, p: e == "cron" and p["action"] == "finished" and p["jobId"] == job["id"]
    )
    return finished


async def test_a_cron_system_event_is_queued_and_told_on_the_sessions_owner(
    tmp_path: Path, pg_url: str
) -> None:
    w = Watch()
    beat = {"every": "0m", "target": "none"}
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url, agents__defaults__heartbeat=beat) as nodes:
            cron, owner = await _cron_and_other(nodes)
            async with (
                open_client(owner.gw, scopes=ADMIN) as at_owner,
                open_client(cron.gw, scopes=ADMIN, on_event=w) as at_cron,
            ):
                await _take(at_owner, "take")
                # wakeMode now: the firing waits for the heartbeat, which runs on the owner
                # and reads the text there.
                finished = await _fire(at_cron, w, "now", "Water the plants")
                assert finished["status"] == "ok", finished
                assert _beats(owner.gw).runs == 1 and _beats(cron.gw).runs == 0
                event = await w.until(
                    lambda e, p: e == "heartbeat" and "Water the plants" in (p.get("preview") or "")
                )
                assert (event["status"], event["reason"]) == ("skipped", "target-none")
                assert _owns(owner) and not _owns(cron)
                # next-heartbeat, no cadence: the text waits on the owner for the next turn.
                finished = await _fire(at_cron, w, "next-heartbeat", "Stand up and stretch")
                assert finished["status"] == "ok", finished
                queued = owner.gw.supervisor.services.system_events.peek(KEY)
                assert [(e.text, e.context_key) for e in queued] == [
                    ("Stand up and stretch", f"cron:{finished['jobId']}")
                ]
                assert not cron.gw.supervisor.services.system_events.has(KEY)
                assert _owns(owner) and not _owns(cron)
                assert await _lease_owner(cron.gw) == owner.gw.node.node_id  # type: ignore[union-attr]
                final = await at_cron.request(
                    "agent",
                    {"sessionKey": KEY, "message": "hello", "idempotencyKey": "next"},
                    expect_final=True,
                )
                text = final["result"]["payloads"][0]["text"]
                assert text.startswith("You said: System: [") and "Stand up and stretch" in text
                assert _beats(owner.gw).runs == 1 and _owns(owner) and not _owns(cron)


async def test_a_cron_event_whose_owner_dies_before_answering_goes_to_the_next_owner(
    tmp_path: Path, pg_url: str
) -> None:
    """The owner takes the event and stops without answering (a crash: what it queued goes
    with it): the cron node sends it to the session's next owner, itself here, and the
    firing succeeds (it failed naming the gone node)."""
    w = Watch()
    beat = {"every": "0m", "target": "none"}
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url, agents__defaults__heartbeat=beat) as nodes:
            cron, owner = await _cron_and_other(nodes)
            async with open_client(owner.gw, scopes=ADMIN) as at_owner:
                await _take(at_owner, "take")
            assert owner.gw.router is not None and owner.gw.router.beats is not None
            taken = trio.Event()
            on_note = owner.gw.router.beats.on_note

            def swallow(note: dict[str, Any]) -> bool:
                if note.get("beat") == "deliver":
                    taken.set()  # taken, never queued nor answered
                    return True
                return on_note(note)

            owner.gw.router.beats.on_note = swallow  # type: ignore[method-assign]
            async with (
                open_client(cron.gw, scopes=ADMIN, on_event=w) as at_cron,
                trio.open_nursery() as nursery,
            ):
                fired: list[dict[str, Any]] = []

                async def fire() -> None:
                    fired.append(await _fire(at_cron, w, "next-heartbeat", "Feed the cat"))

                nursery.start_soon(fire)
                await taken.wait()
                await owner.close()  # gone before its answer
            [finished] = fired
            assert finished["status"] == "ok", finished
            queued = cron.gw.supervisor.services.system_events.peek(KEY)
            assert [e.text for e in queued] == ["Feed the cat"]
            assert _owns(cron)


async def test_set_heartbeats_is_followed_by_a_node_that_starts_later_not_by_a_new_cluster(
    tmp_path: Path, pg_url: str
) -> None:
    await require_redis()
    prefix = f"clawlane-test:{secrets.token_hex(6)}:"
    beat = {"every": "0m", "prompt": "[[reply:HEARTBEAT_OK]]"}

    def config(node_id: str) -> Any:
        return node_config(pg_url, prefix, node_id, agents__defaults__heartbeat=beat)

    w = Watch()
    request = {"mode": "now", "text": "look now", "sessionKey": KEY}
    try:
        with trio.fail_after(60):
            async with running_gateway(tmp_path / "a", config("node-a")) as a:
                async with open_client(a, scopes=ADMIN) as at_a:
                    off = await at_a.request("set-heartbeats", {"enabled": False})
                    assert off == {"ok": True, "enabled": False}
                # node-b starts after it: off from its start, without a notice.
                async with (
                    running_gateway(tmp_path / "b", config("node-b")) as b,
                    open_client(b, scopes=ADMIN, on_event=w) as at_b,
                ):
                    assert not _beats(b).enabled
                    assert await at_b.request("wake", request) == {"ok": True}
                    skipped = await w.until(lambda e, p: e == "heartbeat")
                    assert (skipped["status"], skipped["reason"]) == ("skipped", "disabled")
                    assert _beats(a).runs == 0 and _beats(b).runs == 0
                # node-b starts again while node-a runs: still off.
                async with running_gateway(tmp_path / "b2", config("node-b")) as again:
                    assert not _beats(again).enabled
            # The whole cluster stopped: a node starting alone starts it afresh, heartbeats
            # on (OpenClaw's gateway starts again with them on), and stores it so.
            async with running_gateway(tmp_path / "c", config("node-c")) as c:
                assert _beats(c).enabled
                async with running_gateway(tmp_path / "d", config("node-d")) as d:
                    assert _beats(d).enabled
    finally:
        await drop_prefix(prefix)
