"""Runs of a session start in the order their requests were received: on fresh and warm
sessions, on the fast and the general path, for `agent`, `chat.send` and `sessions.send`,
on one connection and across several (in the order the gateway's readers received them).

Over real sockets against a real gateway: many trials of pipelined requests (0 out of
order), and a property test (hypothesis) over the real mechanism: any interleaving of
requests over sessions and connections keeps per-session FIFO order."""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings

from actors import SessionActor
from tests.conftest import local_config, running_gateway
from tests.e2e._raw import Raw, raw_client, warm
from transports.server._connection import ClientConnection
from transports.server._gateway import Gateway

METHODS = ("agent", "chat.send", "sessions.send")


def order_config() -> Any:
    # Every message its own turn, at once: the order of turns is the order of runs.
    return local_config(
        messages__queue__mode="followup",
        messages__queue__debounceMs=0,
        messages__queue__cap=1000,
        agents__defaults__maxConcurrent=64,
    )


def params_for(method: str, session: str, run_id: str, extra: dict[str, Any]) -> dict[str, Any]:
    message = f"[[deltas:1]] {run_id}"
    if method == "agent":
        return {"message": message, "idempotencyKey": run_id, "sessionKey": session, **extra}
    if method == "chat.send":
        return {
            "message": message,
            "idempotencyKey": run_id,
            "sessionKey": session,
            "queueMode": "followup",
        }
    return {"message": message, "idempotencyKey": run_id, "key": session}


def record_execution(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The order in which each session's runs start executing (on its lane)."""
    started: dict[str, list[str]] = defaultdict(list)
    original = SessionActor._execute

    async def observed(self: SessionActor, req: Any) -> None:
        started[self.key].append(req.record.run_id)
        await original(self, req)

    monkeypatch.setattr(SessionActor, "_execute", observed)
    return started


def record_arrival(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The order in which the gateway's readers received run requests (their ids)."""
    received: list[str] = []
    original = ClientConnection._dispatch

    def observed(self: ClientConnection, text: str) -> None:
        original(self, text)
        frame = json.loads(text)
        if frame.get("method") in METHODS:
            received.append(frame["params"]["idempotencyKey"])

    monkeypatch.setattr(ClientConnection, "_dispatch", observed)
    return received


async def all_done(raw: Raw, run_ids: list[str]) -> None:
    for rid in run_ids:
        await raw.until(
            lambda f, rid=rid: (
                f["type"] == "event"
                and f["event"] == "agent"
                and f["payload"]["runId"] == rid
                and f["payload"]["data"].get("phase") in ("end", "error")
            )
        )


def start_order(raw: Raw) -> dict[str, list[str]]:
    """Per session, the runs in the order their lifecycle `start` arrived."""
    order: dict[str, list[str]] = defaultdict(list)
    for f in raw.frames:
        if f["type"] == "event" and f["event"] == "agent":
            p = f["payload"]
            if p["stream"] == "lifecycle" and p["data"].get("phase") == "start":
                order[p["sessionKey"]].append(p["runId"])
    return order


@pytest.mark.parametrize("method", METHODS)
async def test_pipelined_requests_on_new_sessions_start_in_the_order_sent(
    tmp_path: Path, method: str
) -> None:
    trials, per_session = 30, 5
    async with running_gateway(tmp_path, order_config()) as gw:
        with trio.fail_after(60):
            async with raw_client(gw) as raw:
                sent: dict[str, list[str]] = {}
                for t in range(trials):  # all back to back: no answer awaited in between
                    key = f"agent:main:fresh-{method}-{t}"
                    sent[key] = [f"{method}-{t}-r{i}" for i in range(per_session)]
                    for rid in sent[key]:
                        await raw.send(method, params_for(method, key, rid, {}))
                await all_done(raw, [rid for rids in sent.values() for rid in rids])
                got = start_order(raw)
                out_of_order = [k for k, rids in sent.items() if got[k] != rids]
                assert out_of_order == [], {k: got[k] for k in out_of_order[:3]}
                assert gw.registry.statistics().active_runs == 0
                assert gw.supervisor.order.statistics().tickets == 0


async def test_a_warm_session_keeps_the_order_across_the_fast_and_the_general_path(
    tmp_path: Path,
) -> None:
    """A label makes the fast path write the row with the run (a commit to wait for); a
    request without one right behind it must not overtake it, nor a `chat.send` (a task),
    nor a repeated-key request's neighbour."""
    async with running_gateway(tmp_path, order_config()) as gw:
        with trio.fail_after(60):
            async with raw_client(gw) as raw:
                key = "agent:main:warm"
                await warm(raw, "warm")
                plan = [
                    ("agent", {"label": "L1"}),
                    ("agent", {}),
                    ("chat.send", {}),
                    ("agent", {"label": "L2"}),
                    ("sessions.send", {}),
                    ("agent", {}),
                ]
                rids = [f"w{i}" for i in range(len(plan))]
                for rid, (method, extra) in zip(rids, plan, strict=True):
                    await raw.send(method, params_for(method, key, rid, extra))
                await all_done(raw, rids)
                assert start_order(raw)[key] == ["warm-warm", *rids]


async def test_requests_of_several_connections_keep_the_order_the_readers_got_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = record_execution(monkeypatch)
    received = record_arrival(monkeypatch)
    async with running_gateway(tmp_path, order_config()) as gw:
        with trio.fail_after(60):
            async with raw_client(gw) as a, raw_client(gw) as b, raw_client(gw) as c:
                conns = [a, b, c]
                keys = [f"agent:main:multi{i}" for i in range(4)]
                all_ids = []
                async with trio.open_nursery() as nursery:
                    for n, conn in enumerate(conns):

                        async def burst(conn: Raw = conn, n: int = n) -> None:
                            for i in range(12):
                                method = METHODS[(i + n) % 3]
                                rid = f"c{n}-{i}"
                                key = keys[(i * (n + 1)) % len(keys)]
                                await conn.send(method, params_for(method, key, rid, {}))

                        nursery.start_soon(burst)
                for n, conn in enumerate(conns):
                    ids = [f"c{n}-{i}" for i in range(12)]
                    all_ids += ids
                    await all_done(conn, ids)
                by_session = sessions_of(gw, all_ids)
                for key in keys:
                    expected = [rid for rid in received if by_session.get(rid) == key]
                    assert started[key] == expected


def sessions_of(gw: Gateway, run_ids: list[str]) -> dict[str, str]:
    found = {}
    for rid in run_ids:
        rec = gw.registry.get(rid)
        assert rec is not None and rec.status == "ok", (rid, rec)
        found[rid] = rec.session_key
    return found


# --- the property: any interleaving keeps per-session FIFO order ----------------------------

request = st.tuples(
    st.integers(0, 2),  # connection
    st.integers(0, 3),  # session
    st.sampled_from(METHODS),
    st.booleans(),  # a label (agent: the fast path writes the row with the run)
)


async def interleaving(
    requests: list[tuple[int, int, str, bool]], warm_sessions: list[bool], root: Path
) -> None:
    started: dict[str, list[str]] = defaultdict(list)
    received: list[str] = []
    execute, dispatch = SessionActor._execute, ClientConnection._dispatch

    async def observed_execute(self: SessionActor, req: Any) -> None:
        started[self.key].append(req.record.run_id)
        await execute(self, req)

    def observed_dispatch(self: ClientConnection, text: str) -> None:
        dispatch(self, text)
        data = json.loads(text)
        if data.get("method") in METHODS:
            received.append(data["params"]["idempotencyKey"])

    SessionActor._execute = observed_execute  # type: ignore[method-assign]
    ClientConnection._dispatch = observed_dispatch  # type: ignore[method-assign]
    try:
        async with running_gateway(root, order_config()) as gw:
            with trio.fail_after(60):
                async with raw_client(gw) as a, raw_client(gw) as b, raw_client(gw) as c:
                    conns = [a, b, c]
                    for s, is_warm in enumerate(warm_sessions):
                        if is_warm:
                            await warm(a, f"p{s}")
                    started.clear()
                    received.clear()
                    sent: list[tuple[Raw, str]] = []
                    for i, (conn_no, s, method, label) in enumerate(requests):
                        rid = f"p-{i}"
                        extra = {"label": f"L{i}"} if label and method == "agent" else {}
                        conn = conns[conn_no]
                        await conn.send(method, params_for(method, f"agent:main:p{s}", rid, extra))
                        sent.append((conn, rid))
                    for conn, rid in sent:
                        await all_done(conn, [rid])
                    keys = {f"agent:main:p{s}" for _, s, _, _ in requests}
                    by_session = sessions_of(gw, [rid for _, rid in sent])
                    for key in keys:
                        expected = [rid for rid in received if by_session.get(rid) == key]
                        assert started[key] == expected
                    assert gw.supervisor.order.statistics().tickets == 0
    finally:
        SessionActor._execute = execute  # type: ignore[method-assign]
        ClientConnection._dispatch = dispatch  # type: ignore[method-assign]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(request, min_size=1, max_size=24),
    st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_any_interleaving_of_requests_keeps_each_sessions_order(
    requests: list[tuple[int, int, str, bool]], warm_sessions: list[bool]
) -> None:
    with tempfile.TemporaryDirectory() as root:
        trio.run(interleaving, requests, warm_sessions, Path(root))


async def test_a_stop_phrase_takes_effect_in_its_place(tmp_path: Path) -> None:
    """`chat.send` "stop" right behind messages to a new session aborts them: they are on
    the lane by the time it takes effect (before, the stop could overtake them and they
    ran after it)."""
    async with running_gateway(tmp_path, order_config()) as gw:
        with trio.fail_after(30):
            async with raw_client(gw) as raw:
                key = "agent:main:stopped"
                rids = [f"s{i}" for i in range(3)]
                for rid in rids:
                    await raw.send(
                        "chat.send",
                        {
                            "message": f"[[stall]] {rid}",
                            "idempotencyKey": rid,
                            "sessionKey": key,
                            "queueMode": "followup",
                        },
                    )
                stop = await raw.send(
                    "chat.send", {"message": "stop", "idempotencyKey": "stop", "sessionKey": key}
                )
                res = await raw.response(stop)
                assert res["ok"] and sorted(res["payload"]["runIds"]) == rids
                await all_done(raw, rids)
                assert gw.registry.statistics().active_runs == 0
                for rid in rids:
                    record = gw.registry.get(rid)
                    assert record is not None and record.status == "aborted"
