"""OpenClaw 2026.9.6's heartbeat wake rules (`runtime.heartbeat._wake`) and the messages of a
woken heartbeat (`_event_prompts`), with times in epoch milliseconds."""

from __future__ import annotations

from runtime.heartbeat import (
    Deferral,
    SystemEventQueue,
    WakeIntent,
    WakePacing,
    build_cron_event_prompt,
    build_exec_event_prompt,
    idle_grace,
    is_cron_system_event,
    is_exec_completion_event,
    retain,
    retry_delay_s,
    should_defer,
)

MIN = 60_000


def test_the_first_event_wake_runs_and_later_ones_wait_for_the_next_due_heartbeat() -> None:
    pacing = WakePacing(interval_ms=30 * MIN)
    assert should_defer("event", pacing, 1_000_000) is None  # nothing ran yet here
    pacing.started(1_000_000)
    later = 1_000_000 + 5 * MIN
    assert should_defer("event", pacing, later) == Deferral("not-due", 1_000_000 + 30 * MIN)
    # Kept from an earlier deferral: only the 30 s spacing holds it.
    assert should_defer("event", pacing, later, retained=True) is None
    assert should_defer("event", pacing, 1_000_000 + 10_000, retained=True) == Deferral(
        "min-spacing", 1_000_000 + 30_000
    )
    # A wake-now and a tick are not held by the cadence.
    assert should_defer("immediate", pacing, later) is None
    assert should_defer("scheduled", pacing, later) is None


def test_without_a_cadence_event_wakes_keep_thirty_seconds_apart() -> None:
    pacing = WakePacing()
    pacing.started(0)
    assert should_defer("event", pacing, 10_000) == Deferral("min-spacing", 30_000)
    assert should_defer("event", pacing, 30_000) is None


def test_five_starts_in_a_minute_trip_the_flood_guard_for_all_but_manual_wakes() -> None:
    pacing = WakePacing()
    for t in (0, 10_000, 20_000, 30_000):
        pacing.started(t)
    assert should_defer("immediate", pacing, 35_000) is None  # four: not yet
    pacing.started(40_000)
    assert should_defer("manual", pacing, 41_000) is None
    for intent in ("immediate", "event", "scheduled"):
        # Until the oldest of the five is a minute old.
        assert should_defer(intent, pacing, 41_000) == Deferral("flood", 60_001)
    assert should_defer("immediate", pacing, 60_001) is None  # 0 s has left the window


def test_which_deferred_wakes_are_kept_and_when_busy_ones_run_again() -> None:
    not_due = Deferral("not-due", 1)
    assert retain("event", not_due) and retain("immediate", Deferral("flood", 1))
    assert not retain("scheduled", not_due)

    def retry(intent: WakeIntent, reason: str) -> tuple[float | None, bool]:
        return retry_delay_s(intent, reason, pure_poll=False), idle_grace(intent, reason)

    unscheduled: tuple[WakeIntent, ...] = ("manual", "immediate", "event")

    # OpenClaw's retry: a run going delays a scheduled wake by its idle grace (60 s, as a
    # deferred wake), any other wake by 1 s (its target blocked); a cron run in progress
    # delays every wake by 1 s; preempted and channel-not-ready, every wake by 60 s.
    for reason in ("requests-in-flight", "active-run"):
        assert retry("scheduled", reason) == (60.0, True)
        for intent in unscheduled:
            assert retry(intent, reason) == (1.0, False)
    for intent in (*unscheduled, "scheduled"):
        assert retry(intent, "cron-in-progress") == (1.0, False)
        assert retry(intent, "preempted") == retry(intent, "channel-not-ready") == (60.0, True)
    for reason in ("requests-in-flight", "cron-in-progress"):
        assert retry_delay_s("scheduled", reason, pure_poll=True) is None  # its next tick


def test_completion_events_are_recognised_and_told_as_openclaw_tells_them() -> None:
    done = "Exec completed (ab12cd34, code 0) :: built ok"
    failed = "Exec failed (ab12cd34, code 2)"
    assert is_exec_completion_event(done) and is_exec_completion_event("exec finished: x")
    assert not is_exec_completion_event("Deploy finished")
    assert is_cron_system_event("Water the plants")
    assert not is_cron_system_event(done) and not is_cron_system_event("HEARTBEAT_OK")
    prompt = build_exec_event_prompt([done])
    assert prompt.startswith("An async command you ran earlier has completed.")
    assert f"are:\n\n{done}\n\nPlease relay" in prompt
    quiet = build_exec_event_prompt(["Exec completed (ab12cd34, code 0)"])
    assert quiet.startswith("An async command completion event was triggered, but no command")
    missing = build_exec_event_prompt([failed])
    assert "Exec failed (ab12cd34, code 2) without captured stdout/stderr." in missing
    assert build_exec_event_prompt([done], deliver_to_user=False).endswith(
        "Do not mention, summarize, or reuse command output."
    )
    assert build_cron_event_prompt(["Water"], deliver_to_user=False) == (
        "A scheduled reminder has been triggered. The reminder content is:\n\nWater\n\n"
        "Handle this reminder internally. Do not relay it to the user unless explicitly "
        "requested."
    )


def test_the_queue_gives_up_the_events_a_heartbeat_tells_and_keeps_the_others() -> None:
    queue = SystemEventQueue()
    queue.enqueue("k", "Deploy finished")
    queue.enqueue("k", "Water the plants", context_key="cron:p")
    queue.enqueue("k", "Exec completed (a1, code 0) :: ok", context_key="exec:a1")
    queue.take("k", [e for e in queue.peek("k") if is_exec_completion_event(e.text)])
    assert [e.text for e in queue.peek("k")] == ["Deploy finished", "Water the plants"]
    queue.discard("k", "cron:p", "  Water the plants ")
    assert [e.text for e in queue.peek("k")] == ["Deploy finished"]
    queue.take("k", queue.peek("k"))
    assert not queue.has("k") and len(queue) == 0


def test_held_events_stay_queued_past_a_turn_until_taken_or_released() -> None:
    queue = SystemEventQueue()
    queue.enqueue("k", "Deploy finished")
    queue.enqueue("k", "Water the plants", context_key="cron:p")
    told = [e for e in queue.peek("k") if is_cron_system_event(e.text) and e.context_key]
    queue.hold("k", told)
    # The heartbeat's own turn reads the others as System: lines; the told one stays.
    assert "Deploy finished" in queue.prepend("k", "poll")
    assert queue.peek("k") == told and queue.drain("k") == []
    queue.release("k", told)  # its run failed: the next turn reads it
    assert "Water the plants" in queue.prepend("k", "hi") and not queue.has("k")
    queue.enqueue("k", "Exec completed (a1, code 0) :: ok", context_key="exec:a1")
    told = queue.peek("k")
    queue.hold("k", told)
    queue.take("k", told)  # its run ended ok
    assert not queue.has("k") and queue.prepend("k", "hi") == "hi"


def test_no_turn_reads_a_background_commands_completion_only_a_heartbeat_tells_it() -> None:
    """As OpenClaw's reply admission (`drainFormattedSystemEvents` skips
    `isExecCompletionEvent`): a turn takes the other events and leaves the completions."""
    queue = SystemEventQueue()
    queue.enqueue("k", "Exec completed (a1, code 0) :: built ok", context_key="exec:a1")
    queue.enqueue("k", "Deploy finished")
    queue.enqueue("k", "Exec finished (node=n1 id=a2, node lost)", context_key="exec:a2")
    message = queue.prepend("k", "hello")
    assert message.endswith("] Deploy finished\n\nhello") and "Exec" not in message
    assert [e.context_key for e in queue.peek("k")] == ["exec:a1", "exec:a2"]
    assert queue.prepend("k", "again") == "again" and queue.drain("k") == []
    # A heartbeat tells them in its message and takes them once its run ended ok.
    told = [e for e in queue.peek("k") if is_exec_completion_event(e.text)]
    queue.hold("k", told)
    queue.take("k", told)
    assert not queue.has("k")


def test_a_polled_completion_is_taken_back_held_or_not_and_the_others_stay() -> None:
    """As OpenClaw's poll (`acknowledgeNotifyOnExit` removes the one event its job queued):
    the completion goes, whether a heartbeat's run holds it or not; the rest stays."""
    queue = SystemEventQueue()
    queue.enqueue("k", "Exec completed (a1, code 0) :: ok", context_key="exec:a1")
    queue.enqueue("k", "Deploy finished")
    queue.enqueue("k", "Exec failed (a2, code 1) :: no", context_key="exec:a2")
    told = [e for e in queue.peek("k") if is_exec_completion_event(e.text)]
    queue.hold("k", told)  # a heartbeat telling both runs
    assert queue.take_context("k", "exec:a1") == 1
    assert [e.context_key for e in queue.peek("k")] == [None, "exec:a2"]
    queue.release("k", told)  # that run failed: only a2 is left to tell
    assert queue.take_context("k", "exec:a1") == 0
    assert queue.take_context("k", "exec:a2") == 1
    assert [e.text for e in queue.peek("k")] == ["Deploy finished"]
