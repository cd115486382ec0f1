"""What the hub keeps is bounded: its replay buffers in bytes for the whole gateway (the
oldest frames, of the runs that finished longest ago first, go, and a replay that no longer
reaches back says `gap`), and the remote runs it routes by the connections still there."""

from __future__ import annotations

from actors.runs._hub import RELAY_AGENT, REPLAY_PER_RUN, EventHub


def _run(hub: EventHub, run_id: str, deltas: int, *, piece: str = "x" * 100) -> None:
    hub.open_run(run_id, f"agent:main:{run_id}")
    hub.emit_agent(run_id, "lifecycle", {"phase": "start"})
    text = ""
    for _ in range(deltas):
        text += piece
        hub.emit_agent(run_id, "assistant", {"text": text, "delta": piece})
    hub.emit_agent(run_id, "lifecycle", {"phase": "end"})


def test_replay_bytes_stay_within_the_bound_and_the_oldest_runs_go_first() -> None:
    hub = EventHub(replay_max_bytes=2_000_000)
    for i in range(40):
        _run(hub, f"r{i}", 100)  # cumulative text: ~0.5 MB of frames a run
        hub.close_run(f"r{i}")
        assert hub.statistics().replay_bytes <= 2_000_000
    newest = hub.replay("r39", 0, full=False)
    assert newest is not None and not newest.gap and len(newest.frames) == 102
    oldest = hub.replay("r0", 0, full=False)
    assert oldest is not None and oldest.gap and oldest.frames == [] and oldest.ended
    assert oldest.last_seq == 102  # the run is still known, its frames are not


def test_one_run_larger_than_the_bound_keeps_its_newest_frames() -> None:
    hub = EventHub(replay_max_bytes=300_000)
    _run(hub, "big", 200)
    assert hub.statistics().replay_bytes <= 300_000
    tail = hub.replay("big", 190, full=False)
    assert tail is not None and not tail.gap and len(tail.frames) == 12
    whole = hub.replay("big", 0, full=False)
    assert whole is not None and whole.gap


def test_the_count_bounds_still_apply_and_the_byte_total_follows_them() -> None:
    hub = EventHub()
    _run(hub, "long", REPLAY_PER_RUN + 50, piece="y")
    hub.close_run("long")
    stats = hub.statistics()
    assert 0 < stats.replay_bytes < 64 * 1024 * 1024
    for i in range(300):  # more than RETAINED_FINISHED_RUNS
        _run(hub, f"s{i}", 1)
        hub.close_run(f"s{i}")
    assert hub.replay("long", 0, full=False) is None
    small = hub.statistics().replay_bytes
    assert small < stats.replay_bytes  # the forgotten runs' bytes were given back


def _emit(hub: EventHub, run_id: str, frames: int) -> None:
    for _ in range(frames):
        hub.emit_agent(run_id, "assistant", {"delta": "x" * 900})  # frames of one size


def _kept(hub: EventHub, run_id: str) -> int:
    replay = hub.replay(run_id, 0, full=True)
    assert replay is not None
    return len(replay.frames)


def test_active_runs_lose_their_oldest_frames_first_and_a_refilled_run_goes_last() -> None:
    probe = EventHub()
    probe.open_run("p", "agent:main:p")
    _emit(probe, "p", 1)
    frame = probe.statistics().replay_bytes
    hub = EventHub(replay_max_bytes=int(7.5 * frame))  # 7 frames fit
    for run_id in ("a", "b", "c"):
        hub.open_run(run_id, "agent:main:k")
    _emit(hub, "a", 3)
    _emit(hub, "b", 3)
    _emit(hub, "c", 1)
    assert [_kept(hub, r) for r in "abc"] == [3, 3, 1]
    _emit(hub, "c", 3)  # the oldest active run gives its frames first, down to none
    assert [_kept(hub, r) for r in "abc"] == [0, 3, 4]
    _emit(hub, "a", 1)  # a holds frames again: it goes last, b's older frame goes
    assert [_kept(hub, r) for r in "abc"] == [1, 2, 4]
    assert hub.statistics().replay_bytes <= 7.5 * frame


class _Conn:
    def __init__(self, conn_id: str) -> None:
        self.conn_id = conn_id
        self.wants_tool_events = False
        self.frames: list[bytes] = []

    def push_event(self, frame: bytes) -> None:
        self.frames.append(frame)


def test_a_connection_that_leaves_forgets_the_remote_runs_only_it_waited_for() -> None:
    """Runs of other nodes started from here are kept for their connections until the run's
    close is relayed; a connection that leaves first takes its runs with it (they were kept
    until 100,000 had piled up), not those another connection still waits for."""
    hub = EventHub()
    gone, staying = _Conn("c-gone"), _Conn("c-staying")
    for conn in (gone, staying):
        hub.attach(conn, scoped=True, can_read=True)
    for i in range(50):
        hub.expect_remote(f"gone-{i}", gone)
    hub.expect_remote("shared", gone)
    hub.expect_remote("shared", staying)
    assert hub.statistics().remote_runs == 51
    hub.detach(gone)
    assert hub.statistics().remote_runs == 1
    hub.deliver_remote(RELAY_AGENT, "shared", "agent:main:x", b"frame", b"frame")
    assert staying.frames == [b"frame"] and gone.frames == []
