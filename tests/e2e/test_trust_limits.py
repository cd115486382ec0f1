"""Admission limits (unauthenticated sockets per address, failed auth per address) and
scopes exactly as OpenClaw grants them. Over real sockets; 127.0.0.2 stands for a remote
address where a gateway is told so (`remote_peer_addresses`)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import connect_params, local_config, open_client, running_gateway
from tests.e2e._trust import Answer, connect_once, http_answer, port_of, request, upgrade_request

REMOTE = "127.0.0.2"


async def _half_upgrade(port: int, local: str = "127.0.0.1") -> trio.SocketStream:
    stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=local)
    await stream.send_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
    return stream


async def test_unauthenticated_sockets_are_capped_per_address_with_503(gateway) -> None:
    port = port_of(gateway)
    with trio.fail_after(30):
        async with open_client(gateway):  # an authenticated one does not count
            held = [await _half_upgrade(port) for _ in range(32)]
            await trio.testing.wait_all_tasks_blocked()
            assert gateway.preauth.in_use("127.0.0.1") == 32
            for _ in range(2):  # a half-sent one and a complete upgrade alike
                stream = await trio.open_tcp_stream("127.0.0.1", port)
                async with stream:
                    await stream.send_all(upgrade_request(port))
                    answer = await http_answer(stream)
                head, _, body = answer.partition(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 503 Service Unavailable")
                assert body == b"Too many unauthenticated sockets"
            # Another address has its own budget.
            other = await connect_once(gateway, local_address=REMOTE)
            assert other.ok
            # A socket that goes away gives its place back; a connect that succeeds too.
            await held.pop().aclose()
            await trio.testing.wait_all_tasks_blocked()
            assert gateway.preauth.in_use("127.0.0.1") == 31
            assert (await connect_once(gateway)).ok
            await trio.testing.wait_all_tasks_blocked()
            assert gateway.preauth.in_use("127.0.0.1") == 31
            for stream in held:
                await stream.aclose()
            await trio.testing.wait_all_tasks_blocked()
            assert gateway.preauth.in_use("127.0.0.1") == 0
            assert gateway.preauth.refused == 2


def _wrong(gw: Any, token: str = "wrong") -> Any:
    return lambda ch: connect_params(gw, ch, client_id="cli", mode="cli", device=None, token=token)


async def test_failed_auth_is_rate_limited_per_remote_address(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, remote_peer_addresses=frozenset({REMOTE})) as gw:
        with trio.fail_after(30):
            for _ in range(10):
                answer = await connect_once(gw, _wrong(gw), local_address=REMOTE)
                assert answer.detail_code == "AUTH_TOKEN_MISMATCH"
                assert answer.error["message"].startswith("unauthorized: gateway token mismatch")
            for params in (_wrong(gw), _wrong(gw, gw.auth.token or "")):  # even the right one
                limited = await connect_once(gw, params, local_address=REMOTE)
                assert limited.error["message"] == (
                    "unauthorized: too many failed authentication attempts (retry later)"
                )
                assert limited.error["retryable"] is True
                assert 290_000 < limited.error["retryAfterMs"] <= 300_000
                assert limited.error["details"] == {
                    "code": "AUTH_RATE_LIMITED",
                    "authReason": "rate_limited",
                    "canRetryWithDeviceToken": False,
                    "recommendedNextStep": "wait_then_retry",
                }
                assert limited.close_code == 1008
            # Another address is not affected.
            assert (await connect_once(gw)).ok


async def test_loopback_is_not_locked_out_but_each_failure_waits_longer(gateway) -> None:
    with trio.fail_after(30):
        took = []
        for _ in range(3):
            start = time.monotonic()
            answer = await connect_once(gateway, _wrong(gateway))
            took.append(time.monotonic() - start)
            assert answer.detail_code == "AUTH_TOKEN_MISMATCH"
        assert took[0] >= 0.24 and took[1] >= 0.49 and took[2] >= 0.99, took
        start = time.monotonic()
        assert (await connect_once(gateway)).ok  # the right token: at once, and it resets
        assert time.monotonic() - start < 0.5
        start = time.monotonic()
        await connect_once(gateway, _wrong(gateway))
        assert 0.24 <= time.monotonic() - start < 0.5


async def test_browser_origins_on_loopback_are_rate_limited(tmp_path: Path) -> None:
    origin = "https://ui.example"
    config = local_config(gateway__controlUi__allowedOrigins=[origin])
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            answers = [await connect_once(gw, _wrong(gw), origin=origin) for _ in range(11)]
            assert [a.detail_code for a in answers[:10]] == ["AUTH_TOKEN_MISMATCH"] * 10
            assert answers[10].detail_code == "AUTH_RATE_LIMITED"
            # The same machine without a browser origin is a different key.
            assert (await connect_once(gw)).ok


async def _scoped(gw: Any, scopes: list[str] | None, **kw: Any) -> Answer:
    local = kw.pop("local", None)

    def params(ch: dict[str, Any]) -> dict[str, Any]:
        p = connect_params(gw, ch, scopes=scopes or [], **kw)
        if scopes is None:
            del p["scopes"]
        return p

    async def probe(ws: Any) -> None:
        for method in ("health", "sessions.list", "config.set", "device.pair.list"):
            res = await request(ws, method, {})  # config.set: admin, refused for its params
            forbidden = not res["ok"] and res["error"]["code"] == "FORBIDDEN"
            probes[method] = res["error"]["message"] if forbidden else "ok"

    probes: dict[str, str] = {}
    answer = await connect_once(gw, params, then=probe, local_address=local)
    object.__setattr__(answer, "res", {**answer.res, "probes": probes})
    return answer


@pytest.mark.parametrize(
    ("scopes", "granted", "allowed"),
    [
        (None, [], {"health"}),
        ([], [], {"health"}),
        (["operator.read"], ["operator.read"], {"health", "sessions.list"}),
        (["operator.write"], ["operator.write"], {"health", "sessions.list"}),
        (
            ["operator.admin"],
            ["operator.admin"],
            {"health", "sessions.list", "config.set", "device.pair.list"},
        ),
        (["operator.pairing"], ["operator.pairing"], {"health", "device.pair.list"}),
    ],
    ids=["no-field", "empty", "read", "write", "admin", "pairing"],
)
async def test_exactly_the_requested_scopes_are_granted(gateway, scopes, granted, allowed) -> None:
    with trio.fail_after(10):
        answer = await _scoped(gateway, scopes)
    assert answer.ok and answer.hello["auth"]["scopes"] == granted  # nothing added
    probes = answer.res["probes"]
    assert {m for m, r in probes.items() if r == "ok"} == allowed
    for method, result in probes.items():
        if method not in allowed:
            assert re.fullmatch(r"missing scope: operator\.\w+", result), result


async def test_device_less_clients_get_scopes_only_on_openclaws_local_paths(tmp_path: Path) -> None:
    admin = ["operator.admin"]
    async with running_gateway(tmp_path, remote_peer_addresses=frozenset({REMOTE})) as gw:
        with trio.fail_after(20):
            cases = {
                "cli": await _scoped(gw, admin, client_id="cli", mode="cli", device=None),
                "backend": await _scoped(
                    gw, admin, client_id="gateway-client", mode="backend", device=None
                ),
                "test": await _scoped(gw, admin, device=None),
                "remote cli": await _scoped(
                    gw, admin, client_id="cli", mode="cli", device=None, local=REMOTE
                ),
            }
    granted = {name: a.hello["auth"]["scopes"] for name, a in cases.items()}
    assert granted == {"cli": admin, "backend": admin, "test": [], "remote cli": []}


async def test_a_node_role_may_only_ask_for_health(gateway) -> None:
    from runtime.devices._device_auth import DeviceIdentity

    async def probe(ws: Any) -> None:
        assert (await request(ws, "health"))["ok"] is True
        res = await request(ws, "sessions.list", {})
        assert res["error"] == {"code": "INVALID_REQUEST", "message": "unauthorized role: node"}

    device = DeviceIdentity.generate()

    def node(ch: dict[str, Any]) -> dict[str, Any]:
        return connect_params(gateway, ch, device=device, scopes=[], role="node")

    with trio.fail_after(10):
        answer = await connect_once(gateway, node, then=probe)
        assert answer.ok and answer.hello["auth"] == {
            "role": "node",
            "scopes": [],
            "deviceToken": answer.hello["auth"]["deviceToken"],
            "issuedAtMs": answer.hello["auth"]["issuedAtMs"],
        }

        def claims_node(ch: dict[str, Any]) -> dict[str, Any]:
            return {**connect_params(gateway, ch, device=device, scopes=[]), "role": "node"}

        # Signed as an operator, claiming node: the signature covers the role.
        assert (await connect_once(gateway, claims_node)).detail_code == (
            "DEVICE_AUTH_SIGNATURE_INVALID"
        )
        bogus = await connect_once(
            gateway, lambda ch: {**connect_params(gateway, ch), "role": "admin"}
        )
        assert bogus.error == {"code": "INVALID_REQUEST", "message": "invalid role"}
        assert bogus.close_code == 1008


async def test_a_long_reply_in_small_deltas_is_coalesced_and_a_short_one_is_not(
    gateway,
) -> None:
    from tests.e2e._events import recorder_events

    events, on_event = recorder_events()
    words = " ".join(f"w{i:05d}" for i in range(32 * 1024 // 7))  # 32 KiB, 256 deltas
    with trio.fail_after(30):
        async with open_client(gateway, on_event=on_event) as client:
            for rid, message in (("long", f"[[chars:128]] {words}"), ("short", "hi [[deltas:3]]")):
                await client.request(
                    "agent", {"message": message, "idempotencyKey": rid}, expect_final=True
                )
    for rid in ("long", "short"):
        stream = [p for (e, p, _s) in events if e == "agent" and p["runId"] == rid]
        assert [p["seq"] for p in stream] == list(range(1, len(stream) + 1))
        assert stream[0]["stream"] == stream[-1]["stream"] == "lifecycle"
        text = [p["data"] for p in stream if p["stream"] == "assistant"]
        assert "".join(d["delta"] for d in text) == text[-1]["text"]
        if rid == "short":
            assert len(text) == 3  # a short reply streams piece by piece
            continue
        assert text[-1]["text"] == "You said: " + words
        # 256 model deltas; the events after the first 4 KiB are at most one per 150 ms
        assert len(text) < 256 // 4
        assert sum(len(d["text"]) for d in text) < 32 * len(text[-1]["text"])


async def test_finished_runs_finals_are_bounded_in_bytes_and_a_repeat_never_reruns(
    gateway,
) -> None:
    reg = gateway.registry
    reg.finals_max_bytes = 80 * 1024
    words = " ".join(f"w{i:05d}" for i in range(32 * 1024 // 7))  # a 32 KiB reply
    with trio.fail_after(30):
        async with open_client(gateway, on_event=lambda *a: None) as client:
            for i in range(6):
                await client.request(
                    "agent",
                    {"message": f"[[chars:4096]] {words}", "idempotencyKey": f"b{i}"},
                    expect_final=True,
                )
                assert reg.statistics().final_bytes <= 80 * 1024
            started = reg.metrics.started
            first = await client.request(
                "agent", {"message": "again", "idempotencyKey": "b0"}, expect_final=True
            )
            last = await client.request(
                "agent", {"message": "again", "idempotencyKey": "b5"}, expect_final=True
            )
            assert reg.metrics.started == started  # answered from the cache, not run again
    assert first["status"] == "ok" and first["result"]["payloads"] == []
    assert first["result"]["meta"]["payloadsDropped"] is True
    assert last["result"]["payloads"] == [{"text": "You said: " + words}]
    assert "payloadsDropped" not in last["result"]["meta"]
