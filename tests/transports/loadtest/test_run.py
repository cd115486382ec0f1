"""`clawlane loadtest` at small scale: its counts against a real gateway, and that it
actually notices lost, duplicated and reordered events."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest
import trio

from tests.conftest import gateway_url
from transports.cli._main import main as cli_main
from transports.loadtest._conn import LoadtestError, LoadtestOptions, _Conn, _Loadtest, _Track
from transports.loadtest._run import run_loadtest
from transports.server._gateway import Gateway
from transports.websocket._codec import client_frame

_enc = msgspec.json.Encoder()


async def test_spawned_gateway_runs_every_run_and_loses_nothing() -> None:
    options = LoadtestOptions(
        sessions=3,
        connections=2,
        runs_per_session=2,
        deltas=3,
        subscribers_per_run=1,
        spawn=True,
        progress=False,
    )
    with trio.fail_after(60):
        report = await run_loadtest(options)
    assert report.runs == 3 * 2 == report.runs_expected
    assert report.runs_failed == 0 and report.errors == {}
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0)
    assert report.unexpected == 0 and report.conn_seq_gaps == 0
    assert report.chat_terminal_missing == 0
    # lifecycle start + 3 deltas + lifecycle end, seen by the owner and by one subscriber
    assert report.events == 6 * (3 + 2) * 2
    assert report.chat_events >= 6 * 2  # at least the terminal chat event per run and viewer
    assert report.subscribers == 1
    assert report.subscriber_mode in ("subscribe", "unscoped+filter")
    assert report.gateway_pid == os.getpid()
    assert report.gateway_peak_rss_bytes is not None and report.gateway_peak_rss_bytes > 0
    assert report.clean


async def test_against_a_running_gateway_by_url(gateway: Gateway) -> None:
    options = LoadtestOptions(
        url=gateway_url(gateway),
        token=gateway.auth.token,
        sessions=2,
        connections=1,
        runs_per_session=3,
        deltas=2,
        gateway_pid=os.getpid(),
        progress=False,
    )
    with trio.fail_after(60):
        report = await run_loadtest(options)
    assert report.runs == 6 and report.clean
    assert report.events == 6 * 4
    assert report.latency_ms.max >= report.latency_ms.p50 >= 0
    stats = gateway.hub.statistics()
    assert stats.events_emitted >= 6 * 4


async def test_unreachable_gateway_is_a_loadtest_error() -> None:
    with trio.socket.socket() as sock:  # a free port nobody listens on
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with trio.fail_after(30), pytest.raises(LoadtestError, match="cannot reach"):
        await run_loadtest(
            LoadtestOptions(url=f"ws://127.0.0.1:{port}", sessions=1, progress=False)
        )


def test_cli_json_report_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(
        [
            "loadtest",
            "--spawn",
            "--sessions",
            "2",
            "--runs-per-session",
            "2",
            "--deltas",
            "2",
            "--connections",
            "1",
            "--json",
            "--no-progress",
        ]
    )
    out = capsys.readouterr().out.strip().splitlines()
    data = json.loads(out[-1])
    assert code == 0
    for key in (
        "runs",
        "runs_per_s",
        "events_per_s",
        "chat_events_per_s",
        "latency_ms",
        "lost",
        "duplicated",
        "out_of_order",
        "errors",
        "gateway_peak_rss_bytes",
    ):
        assert key in data
    assert set(data["latency_ms"]) == {"p50", "p95", "p99", "max"}
    assert data["runs"] == 4 and data["lost"] == data["duplicated"] == data["out_of_order"] == 0
    assert data["errors"] == {}


# --- the judge itself ----------------------------------------------------------------------


def _server_frame(obj: object) -> bytes:
    payload = _enc.encode(obj)
    assert len(payload) < 65_536
    head = (
        bytes((0x81, len(payload)))
        if len(payload) < 126
        else bytes((0x81, 126)) + len(payload).to_bytes(2, "big")
    )
    return head + payload


def _agent(run_id: str, seq: int, conn_seq: int, stream: str = "") -> dict[str, object]:
    stream = stream or ("lifecycle" if seq in (1, 4) else "assistant")
    return {
        "type": "event",
        "event": "agent",
        "payload": {
            "runId": run_id,
            "seq": seq,
            "stream": stream,
            "ts": 1,
            "data": {},
            "sessionKey": "agent:main:x",
        },
        "seq": conn_seq,
    }


def _chat_final(run_id: str, conn_seq: int) -> dict[str, object]:
    return {
        "type": "event",
        "event": "chat",
        "payload": {"runId": run_id, "sessionKey": "agent:main:x", "seq": 4, "state": "final"},
        "seq": conn_seq,
    }


def _judge(frames: list[dict[str, object]], ok_runs: list[str], *, chunk: int = 0) -> _Loadtest:
    lt = _Loadtest(LoadtestOptions(deltas=2, prefix="t-"), "ws://unused", None)
    conn = _Conn(lt, 0, subscriber=False)
    lt.owners = [conn]
    for run_id in ok_runs:
        conn.runs[run_id] = _Track()  # the owner registers a run when it starts it
    data = b"".join(_server_frame(f) for f in frames)
    if chunk:
        for i in range(0, len(data), chunk):
            conn._parse(data[i : i + chunk], 2.0)
    else:
        conn._parse(data, 2.0)
    lt.ok_runs = list(ok_runs)
    return lt


def test_a_clean_run_counts_nothing_even_split_into_single_bytes() -> None:
    frames = [_agent("t-a", s, s) for s in (1, 2, 3, 4)] + [_chat_final("t-a", 5)]
    lt = _judge(frames, ["t-a"], chunk=1)
    assert lt.tally() == (0, 0)
    assert (lt.duplicated, lt.out_of_order, lt.unexpected, lt.conn_seq_gaps) == (0, 0, 0, 0)
    assert lt.events == 4 and lt.chat_events == 1


def test_gaps_duplicates_and_reordering_are_counted() -> None:
    frames = [
        _agent("t-a", 1, 1),
        _agent("t-a", 3, 2),  # seq 2 comes late: out of order
        _agent("t-a", 2, 3),
        _agent("t-a", 2, 4),  # twice
        _agent("t-a", 9, 6),  # beyond 2 deltas + 2, and a frame seq gap (5 missing)
        _chat_final("t-a", 7),
        _agent("t-b", 1, 8),  # t-b misses 2, 3, 4 and its chat final
    ]
    lt = _judge(frames, ["t-a", "t-b"])
    lost, chat_missing = lt.tally()
    assert lost == 1 + 1  # t-a never got seq 4; t-b never got its end (at least 1 missing)
    assert chat_missing == 1
    assert lt.duplicated == 1
    assert lt.out_of_order == 1
    assert lt.unexpected == 1
    assert lt.conn_seq_gaps == 1


def test_a_run_with_coalesced_deltas_ends_at_its_lifecycle_end() -> None:
    frames = [
        _agent("t-a", 1, 1),
        _agent("t-a", 2, 2),  # both deltas in one event
        _agent("t-a", 3, 3, "lifecycle"),
        _chat_final("t-a", 4),
    ]
    lt = _judge(frames, ["t-a"])
    assert lt.tally() == (0, 0)
    assert (lt.duplicated, lt.out_of_order, lt.unexpected, lt.conn_seq_gaps) == (0, 0, 0, 0)
    assert lt.owners[0].runs["t-a"] is None  # complete and folded


def test_an_event_after_a_run_completed_is_a_duplicate() -> None:
    frames = [_agent("t-a", s, s) for s in (1, 2, 3, 4)] + [
        _chat_final("t-a", 5),
        _agent("t-a", 4, 6),
    ]
    lt = _judge(frames, ["t-a"])
    assert lt.tally() == (0, 0)
    assert lt.duplicated == 1


def test_other_clients_runs_are_ignored() -> None:
    lt = _judge([_agent("someone-else", 1, 1)], [])
    assert lt.events == 0 and lt.tally() == (0, 0)


def _driving(sessions: int, runs: int | None, **kw: object) -> tuple[_Loadtest, _Conn]:
    options = LoadtestOptions(sessions=sessions, deltas=2, prefix="t-", **kw)  # type: ignore[arg-type]
    lt = _Loadtest(options, "ws://unused", None)
    conn = _Conn(lt, 0, subscriber=False)
    lt.owners = [conn]
    lt.start_driving(1, None, runs)
    return lt, conn


def _answer(conn: _Conn, req_id: str, *, ok: bool = True) -> None:
    frame: dict[str, object] = {"type": "res", "id": req_id, "ok": ok}
    if ok:
        frame["payload"] = {"runId": "x", "status": "ok"}
    else:
        frame["error"] = {"code": "UNAVAILABLE", "message": "down"}
    conn._parse(_server_frame(frame), 2.0)


async def test_each_answer_sends_that_sessions_next_run_until_its_runs_are_done() -> None:
    lt, conn = _driving(2, 2)
    assert sorted(conn.pending) == ["r1", "r2"] and lt.in_flight == 2
    _answer(conn, "r2")
    assert sorted(conn.pending) == ["r1", "r3"]  # session 1's second run, at once
    assert lt.ok_runs == ["t-s1-0"] and "t-s1-1" in conn.runs
    _answer(conn, "r1", ok=False)
    _answer(conn, "r3")
    assert sorted(conn.pending) == ["r4"] and not lt.all_driven.is_set()
    _answer(conn, "r4")
    assert lt.all_driven.is_set() and lt.in_flight == 0 and not conn.pending
    assert (lt.runs_ok, lt.runs_failed, lt.errors) == (3, 1, {"UNAVAILABLE": 1})
    assert "t-s0-0" not in conn.runs  # a failed run is not judged for its events


async def test_a_lost_connection_fails_its_runs_and_ends_the_drive() -> None:
    lt, conn = _driving(3, None)
    conn._lost_connection()
    assert lt.all_driven.is_set() and lt.in_flight == 0
    assert lt.runs_failed == 3
    assert lt.errors["CONNECTION_CLOSED"] == 1 + 3  # the connection, then each of its runs


async def test_a_run_unanswered_for_run_timeout_is_given_up_and_its_session_goes_on(
    mock_clock: trio.testing.MockClock,
) -> None:
    lt, conn = _driving(1, 2, run_timeout=5.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lt.expire_runs)
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(4.0)
        await trio.testing.wait_all_tasks_blocked()
        assert list(conn.pending) == ["r1"] and lt.runs_failed == 0
        mock_clock.jump(2.5)
        await trio.testing.wait_all_tasks_blocked()
        assert lt.errors == {"TIMEOUT": 1} and "r2" in conn.pending
        _answer(conn, "r1")  # the late answer counts for nothing
        assert lt.runs_ok == 0 and lt.runs_failed == 1
        _answer(conn, "r2")
        assert lt.all_driven.is_set() and lt.runs_ok == 1
        nursery.cancel_scope.cancel()


def test_client_frames_are_masked_and_unmask_to_the_payload() -> None:
    for size in (0, 5, 125, 126, 1000, 70_000):
        payload = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
        frame = client_frame(payload)
        assert frame[0] == 0x81 and frame[1] & 0x80
        length = frame[1] & 0x7F
        offset = 2
        if length == 126:
            length, offset = int.from_bytes(frame[2:4], "big"), 4
        elif length == 127:
            length, offset = int.from_bytes(frame[2:10], "big"), 10
        key, body = frame[offset : offset + 4], frame[offset + 4 :]
        assert length == size == len(body)
        assert bytes(b ^ key[i % 4] for i, b in enumerate(body)) == payload


def test_loadtest_is_in_the_cli_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["loadtest", "--help"])
    text = capsys.readouterr().out
    for flag in (
        "--url",
        "--token",
        "--sessions",
        "--connections",
        "--runs-per-session",
        "--delta-delay-ms",
        "--deltas",
        "--duration",
        "--subscribers-per-run",
        "--json",
        "--spawn",
        "--gateway-pid",
    ):
        assert flag in text


def test_readme_documents_the_loadtest() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert "clawlane loadtest" in readme and "scripts/bench" in readme
