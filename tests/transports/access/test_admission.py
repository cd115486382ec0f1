"""Admission limits on a virtual clock: the per-address budget and the auth rate limiter."""

from __future__ import annotations

import trio

from transports.access._admission import AuthRateLimiter, PreauthBudget, browser_origin_key

SCOPE = "shared-secret"


def test_the_budget_counts_per_address_and_releases_once() -> None:
    budget = PreauthBudget(2)
    a, b = budget.acquire("10.0.0.1"), budget.acquire("10.0.0.1")
    assert a is not None and b is not None and budget.acquire("10.0.0.1") is None
    assert budget.acquire("10.0.0.2") is not None and budget.refused == 1
    a.release()
    a.release()  # idempotent
    assert budget.in_use("10.0.0.1") == 1 and budget.acquire("10.0.0.1") is not None


async def test_a_remote_address_is_locked_out_after_the_window_fills(autojump_clock) -> None:
    limiter = AuthRateLimiter(max_attempts=3, window_ms=60_000, lockout_ms=300_000)
    for _ in range(2):
        limiter.record_failure("203.0.113.9", SCOPE)
    assert limiter.check("203.0.113.9", SCOPE).allowed
    limiter.record_failure("203.0.113.9", SCOPE)
    locked = limiter.check("203.0.113.9", SCOPE)
    assert not locked.allowed and locked.retry_after_ms == 300_000
    assert limiter.check("203.0.113.9", "device-token").allowed  # a separate credential kind
    await trio.sleep(299)
    assert limiter.check("203.0.113.9", SCOPE).retry_after_ms == 1_000
    await trio.sleep(1)
    assert limiter.check("203.0.113.9", SCOPE).allowed


async def test_failures_outside_the_window_are_forgotten_and_success_resets(autojump_clock) -> None:
    limiter = AuthRateLimiter(max_attempts=2, window_ms=1_000, lockout_ms=5_000)
    limiter.record_failure("203.0.113.9", SCOPE)
    await trio.sleep(1.5)
    limiter.record_failure("203.0.113.9", SCOPE)
    assert limiter.check("203.0.113.9", SCOPE).allowed
    limiter.reset("203.0.113.9", SCOPE)
    limiter.record_failure("203.0.113.9", SCOPE)
    assert limiter.check("203.0.113.9", SCOPE).allowed


async def test_loopback_is_never_locked_out_but_waits_longer_each_time(autojump_clock) -> None:
    limiter = AuthRateLimiter(max_attempts=3)
    waits = []
    for _ in range(8):
        start = trio.current_time()
        await limiter.record_failure_and_delay("127.0.0.1", SCOPE)
        waits.append(round(trio.current_time() - start, 3))
        assert limiter.check("127.0.0.1", SCOPE).allowed
    assert waits == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    strict = AuthRateLimiter(max_attempts=3, exempt_loopback=False)
    for _ in range(3):
        await strict.record_failure_and_delay("127.0.0.1", SCOPE)
    assert not strict.check("127.0.0.1", SCOPE).allowed
    key = browser_origin_key("https://UI.example")
    assert key == "browser-origin:https://ui.example" and not limiter._exempt(key)


async def test_the_table_is_bounded(autojump_clock) -> None:
    limiter = AuthRateLimiter(max_attempts=1, lockout_ms=60_000, max_entries=4)
    for i in range(4):
        limiter.record_failure(f"203.0.113.{i}", SCOPE)  # each locked out
    limiter.record_failure("203.0.113.200", SCOPE)  # no room: everyone new waits
    assert limiter.size == 4
    assert not limiter.check("198.51.100.1", SCOPE).allowed
    await trio.sleep(61)
    limiter.record_failure("203.0.113.200", SCOPE)
    assert limiter.size <= 4 and limiter.check("198.51.100.1", SCOPE).allowed
