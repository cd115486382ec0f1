"""No phantom runs: whatever fails between a run request and its run, the run is either
never registered or ended (terminal event, waiters woken); nothing stays active, the
session and the connection carry on, and shutdown is never held by a run.

Failures are injected at each step of the way (decoding the timeout, the journal write, its
commit, registering, opening the event stream, queueing, starting the session's task), on
the fast path, the general path, and for `chat.send`, over real sockets."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import actors._supervisor as supervisor_module
from actors import (
    EventHub,
    RunRecord,
    RunRegistry,
    SessionActor,
    Store,
    StoreError,
    Supervisor,
)
from tests.conftest import local_config, running_gateway
from tests.e2e._raw import Raw, hold_commits, raw_client, warm
from transports.server._gateway import Gateway


def boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected failure")


async def assert_nothing_active(gw: Gateway, raw: Raw, key: str) -> None:
    await trio.testing.wait_all_tasks_blocked()
    assert gw.registry.active() == []
    assert gw.hub.statistics().active_runs == 0
    assert gw.supervisor.order.statistics().tickets == 0
    rid = await raw.send("status", {})
    status = (await raw.response(rid))["payload"]
    assert status["clawlane"]["runs"]["active"] == 0
    rid = await raw.send("sessions.list", {})
    rows = (await raw.response(rid))["payload"]["sessions"]
    assert not any(r["hasActiveRun"] for r in rows)
    rid = await raw.send("chat.history", {"sessionKey": key})
    assert (await raw.response(rid))["payload"]["sessionInfo"]["hasActiveRun"] is False


async def still_works(raw: Raw, key: str, run_id: str) -> None:
    _, final = await raw.run({"message": "after", "idempotencyKey": run_id, "sessionKey": key})
    assert final["ok"] and final["payload"]["status"] == "ok", final


Patch = Callable[[pytest.MonkeyPatch], None]
INJECTIONS: dict[str, Patch] = {
    "open the event stream": lambda m: m.setattr(EventHub, "open_run", boom),
    "queue on the lane": lambda m: m.setattr(SessionActor, "enqueue", boom),
    "start the session task": lambda m: m.setattr(Supervisor, "restart_drain", boom),
    "register": lambda m: m.setattr(RunRegistry, "add", boom),
}


@pytest.mark.parametrize("step", list(INJECTIONS))
@pytest.mark.parametrize("method", ["agent-fast", "agent-general", "chat.send"])
async def test_a_failure_between_request_and_run_leaves_no_run_active(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, method: str
) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(20):
            async with raw_client(gw) as raw:
                key = "agent:main:p"
                if method != "agent-general":
                    await warm(raw, "p")  # agent on a loaded session: the fast path
                with monkeypatch.context() as m:
                    INJECTIONS[step](m)
                    if method == "chat.send":
                        params = {"message": "x", "idempotencyKey": "bad", "sessionKey": key}
                        rid = await raw.send("chat.send", params)
                    else:
                        rid = await raw.send(
                            "agent", {"message": "x", "idempotencyKey": "bad", "sessionKey": key}
                        )
                    answers = [await raw.response(rid)]
                    await trio.testing.wait_all_tasks_blocked()
                    answers = raw.responses(rid)
                assert not answers[-1]["ok"], answers
                assert "injected failure" in answers[-1]["error"]["message"]
                record = gw.registry.get("bad")
                assert record is None or record.ended
                if record is not None:  # registered, then ended: one terminal event
                    ends = [d for d in raw.lifecycle("bad") if d["phase"] in ("end", "error")]
                    assert len(ends) <= 1
                await assert_nothing_active(gw, raw, key)
                await still_works(raw, key, "good")
                await still_works(raw, key, "bad")  # its key was not left reserved


async def test_a_timeout_that_does_not_fit_a_float_is_refused_and_registers_nothing(
    tmp_path: Path,
) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(20):
            async with raw_client(gw) as raw:
                key = "agent:main:t"
                for fast in (False, True):
                    if fast:
                        await warm(raw, "t")
                    n, big = int(fast), "1" + "0" * 400
                    await raw.ws.send_message(
                        f'{{"type":"req","id":"big{n}","method":"agent","params":{{"message":"x",'
                        f'"idempotencyKey":"t{n}","sessionKey":"t","timeout":{big}}}}}'
                    )
                    res = await raw.response(f"big{int(fast)}")
                    assert not res["ok"] and res["error"]["code"] == "INVALID_REQUEST"
                    assert "timeout" in res["error"]["message"]
                    assert gw.registry.get(f"t{int(fast)}") is None
                await assert_nothing_active(gw, raw, key)
                await still_works(raw, key, "t-ok")


async def test_a_failed_journal_write_answers_unavailable_and_registers_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(20):
            async with raw_client(gw) as raw:
                key = "agent:main:j"
                await warm(raw, "j")
                store = gw.supervisor.store

                def refuse(*args: Any, **kwargs: Any) -> None:
                    raise StoreError("injected store failure")

                for method in ("agent", "chat.send"):
                    with monkeypatch.context() as m:
                        m.setattr(Store, "commit_nowait", refuse)
                        m.setattr(Store, "commit_durable", _async(refuse))
                        params = {
                            "message": "x",
                            "idempotencyKey": f"j-{method}",
                            "sessionKey": key,
                        }
                        rid = await raw.send(method, params)
                        res = await raw.response(rid)
                    assert not res["ok"] and res["error"]["code"] == "UNAVAILABLE"
                    assert gw.registry.get(f"j-{method}") is None
                    assert gw.registry.dedupe.get(f"agent:j-{method}") is None
                await assert_nothing_active(gw, raw, key)
                await still_works(raw, key, "j-agent")
                assert store.statistics().failed_commits == 0


def _async(fn: Callable[..., Any]) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        await trio.lowlevel.checkpoint()
        return fn(*args, **kwargs)

    return wrapper


async def test_a_request_cancelled_before_its_journal_commit_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(20):
            async with raw_client(gw) as raw:
                key = "agent:main:c"
                await warm(raw, "c")
                store = gw.supervisor.store
                release = hold_commits(store, monkeypatch)
                rid = await raw.send(
                    "agent", {"message": "x", "idempotencyKey": "c1", "sessionKey": key}
                )
                behind = await raw.send(
                    "agent", {"message": "y", "idempotencyKey": "c2", "sessionKey": key}
                )
                await trio.testing.wait_all_tasks_blocked()
                await raw.cancel(rid)
                await trio.testing.wait_all_tasks_blocked()
                release.set()
                final = await raw.response(behind, 2)  # the one behind it is not held back
                assert final["payload"]["status"] == "ok"
                assert raw.responses(rid) == [] and gw.registry.get("c1") is None
                await assert_nothing_active(gw, raw, key)
                await store.flush()
                journal = {r.run_id: r for r in await store.load_runs(since_ms=0)}
                assert journal["c1"].state == "error"  # a restart will not report it
                assert journal["c2"].state == "ok"


async def test_shutdown_ends_a_run_nobody_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run registered by a bug and never queued: shutdown ends it after its grace (one
    terminal event, waiters woken) instead of waiting for it."""
    monkeypatch.setattr(supervisor_module, "SHUTDOWN_GRACE_S", 0.2)
    with trio.fail_after(20):
        async with running_gateway(tmp_path, local_config()) as gw, raw_client(gw) as raw:
            await warm(raw, "o")
            orphan = RunRecord(
                run_id="orphan",
                session_key="agent:main:o",
                session_id="s",
                agent_id="main",
                accepted_at=0,
            )
            gw.registry.add(orphan)
            gw.hub.open_run("orphan", "agent:main:o", owner=next(iter(gw.connections.values())))
            waited: list[Any] = []

            async def wait() -> None:
                waited.append(await gw.registry.wait("orphan", 30))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait)
                await trio.testing.wait_all_tasks_blocked()
                await gw.supervisor.shutdown_runs()
        assert orphan.ended and orphan.status == "aborted" and waited == [orphan]
        assert gw.supervisor.statistics().runs_forced_end == 1


async def test_sigterm_exits_promptly_after_bad_requests(tmp_path: Path) -> None:
    """A gateway process: bad numbers and runs in flight, then SIGTERM: it exits 0."""
    state = tmp_path / "state"
    state.mkdir()
    config = state / "clawlane.json"
    config.write_text(json.dumps({"gateway": {"auth": {"mode": "none"}}}))
    argv = [
        sys.executable,
        "-c",
        "import sys; from transports.cli._main import main; sys.exit(main())",
        "gateway",
        "--port",
        "0",
        "--state-dir",
        str(state),
        "--config",
        str(config),
    ]
    from transports.loadtest._gateway import _read_listening_url

    log_path = tmp_path / "gateway.log"
    with trio.fail_after(60), log_path.open("wb") as log:
        proc = await trio.lowlevel.open_process(
            argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL
        )
        try:
            url = await _read_listening_url(proc, log_path)
            from tests.conftest import raw_handshake
            from transports.client._client import open_websocket

            async with open_websocket(url) as ws:
                await raw_handshake(ws, caps=["session-scoped-events"])
                for i, timeout in enumerate(["1" + "0" * 400, "1e400", "-1", "0"]):
                    await ws.send_message(
                        f'{{"type":"req","id":"b{i}","method":"agent","params":{{"message":'
                        f'"[[stall]] x","idempotencyKey":"k{i}","timeout":{timeout}}}}}'
                    )
                answered = 0
                while answered < 4:  # three refusals, then the stalling run's ack
                    frame = json.loads(await ws.get_message())
                    if frame.get("type") == "res":
                        answered += 1
            proc.send_signal(signal.SIGTERM)
            with trio.fail_after(15):
                code = await proc.wait()
            assert code == 0, log_path.read_text()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            assert proc.stdout is not None
            await proc.stdout.aclose()


async def test_params_nested_1000_deep_are_invalid_under_the_request_id(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(20):
            async with raw_client(gw) as raw:
                deep = "[" * 1000 + "]" * 1000
                for rid, method in (("deep1", "agent"), ("deep2", "status")):
                    await raw.ws.send_message(
                        f'{{"type":"req","id":"{rid}","method":"{method}",'
                        f'"params":{{"message":"x","idempotencyKey":"d","extra":{deep}}}}}'
                    )
                    res = await raw.response(rid)
                    assert not res["ok"] and res["error"]["code"] == "INVALID_REQUEST", res
                await assert_nothing_active(gw, raw, "agent:main:main")  # the connection lives on
                await still_works(raw, "agent:main:d", "d-ok")


async def test_a_lone_surrogate_is_answered_under_the_request_id(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(20):
            async with raw_client(gw) as raw:
                await raw.ws.send_message(
                    '{"type":"req","id":"sur","method":"agent",'
                    '"params":{"message":"a\\ud800b","idempotencyKey":"s1","sessionKey":"s"}}'
                )
                res = await raw.response("sur")
                assert res["error"]["code"] == "INVALID_REQUEST", res
                assert "surrogate" in res["error"]["message"]
                assert not raw.responses("invalid")
                assert gw.registry.get("s1") is None
                await still_works(raw, "agent:main:s", "s-ok")


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("agent", {"message": "x" * (4 * 1024 * 1024 + 1), "idempotencyKey": "m"}, "message"),
        ("agent", {"message": "é" * (2 * 1024 * 1024 + 1), "idempotencyKey": "m"}, "message"),
        (
            "chat.send",
            {"sessionKey": "k", "message": "x" * (4 << 20 | 1), "idempotencyKey": "m"},
            "message",
        ),
        ("sessions.send", {"key": "k", "message": "x" * (4 << 20 | 1)}, "message"),
        ("chat.inject", {"sessionKey": "k", "message": "x" * (4 << 20 | 1)}, "message"),
        ("agent", {"message": "x", "idempotencyKey": "i" * 257}, "idempotencyKey"),
        (
            "chat.send",
            {"sessionKey": "k", "message": "x", "idempotencyKey": "i" * 257},
            "idempotencyKey",
        ),
        ("agent", {"message": "x", "idempotencyKey": "m", "sessionKey": "s" * 513}, "sessionKey"),
        ("sessions.send", {"key": "s" * 513, "message": "x"}, "key"),
        ("sessions.delete", {"key": "s" * 513}, "key"),
    ],
)
async def test_oversized_messages_and_keys_are_invalid_naming_the_field(
    tmp_path: Path, method: str, params: dict[str, Any], field: str
) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(20):
            async with raw_client(gw) as raw:
                rid = await raw.send(method, params)
                res = await raw.response(rid)
                assert not res["ok"] and res["error"]["code"] == "INVALID_REQUEST", res
                assert res["error"]["details"]["field"] == field
                assert field in res["error"]["message"]
                assert gw.registry.active() == []
                await still_works(raw, "agent:main:ok", "ok")
