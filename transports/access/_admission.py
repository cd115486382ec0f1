"""Admission limits before a client is authenticated, as OpenClaw sets them.

- `PreauthBudget`: at most N sockets per client address (default 32) that are not
  authenticated yet. A socket counts from accept until its `connect` succeeds or it closes,
  so half-sent upgrades count too; one more is answered HTTP 503 "Too many unauthenticated
  sockets" and closed before anything of it is read.
- `AuthRateLimiter`: failed authentication attempts per client address and credential kind
  (`shared-secret`, `device-token`), in a sliding window (`gateway.auth.rateLimit`: default
  10 failures in 60 s lock the address out for 5 minutes; the answer is `AUTH_RATE_LIMITED`
  with `retryAfterMs`). Loopback addresses are exempt from the lockout (unless
  `exemptLoopback: false`) but each failure there is answered after an escalating delay
  (250 ms doubling to 5 s), so a local brute force gets nowhere fast. Browser connections on
  loopback are keyed by their origin in a second limiter with no exemption (OpenClaw's
  `browser-origin:` keys). The table is bounded (10,000 keys).

Times come from trio's clock (so tests can run them on a virtual one).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable
from typing import Final

import attrs
import trio

DEFAULT_MAX_PREAUTH_PER_ADDRESS: Final = 32
SCOPE_SHARED_SECRET: Final = "shared-secret"
SCOPE_DEVICE_TOKEN: Final = "device-token"
BROWSER_ORIGIN_PREFIX: Final = "browser-origin:"
LOOPBACK_DELAY_BASE_MS: Final = 250
LOOPBACK_DELAY_MAX_MS: Final = 5_000
_LOOPBACK_HISTORY: Final = math.ceil(math.log2(LOOPBACK_DELAY_MAX_MS / LOOPBACK_DELAY_BASE_MS)) + 1
MAX_ENTRIES: Final = 10_000


def http_refusal(status: int, reason: str, body: str) -> bytes:
    """A complete `HTTP/1.1` refusal that closes the connection (plain text body)."""
    data = body.encode("utf-8")
    return (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(data)}\r\n\r\n"
    ).encode("ascii") + data


class PreauthSlot:
    """One unauthenticated socket's place in its address's budget."""

    __slots__ = ("_budget", "_key", "released")

    def __init__(self, budget: PreauthBudget, key: str) -> None:
        self._budget = budget
        self._key = key
        self.released = False

    def release(self) -> None:
        """Give the place back (idempotent): on a successful `connect`, or on close."""
        if not self.released:
            self.released = True
            self._budget._release(self._key)


class PreauthBudget:
    def __init__(self, limit: int = DEFAULT_MAX_PREAUTH_PER_ADDRESS) -> None:
        self.limit = max(1, limit)
        self._counts: dict[str, int] = {}
        self.refused = 0

    def acquire(self, address: str) -> PreauthSlot | None:
        """A slot for a new socket from `address`, or None when its budget is spent."""
        key = address.strip() or "unknown"
        count = self._counts.get(key, 0)
        if count >= self.limit:
            self.refused += 1
            return None
        self._counts[key] = count + 1
        return PreauthSlot(self, key)

    def in_use(self, address: str) -> int:
        return self._counts.get(address.strip() or "unknown", 0)

    def _release(self, key: str) -> None:
        count = self._counts.get(key, 0)
        if count <= 1:
            self._counts.pop(key, None)
        else:
            self._counts[key] = count - 1


def is_loopback_address(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


@attrs.frozen
class RateCheck:
    allowed: bool
    retry_after_ms: int = 0


@attrs.define
class _Entry:
    attempts: list[float] = attrs.field(factory=list)
    locked_until: float | None = None


def _now_ms() -> float:
    return trio.current_time() * 1000


class AuthRateLimiter:
    """Failed auth attempts per (credential kind, client key); see the module docstring."""

    def __init__(
        self,
        *,
        max_attempts: int = 10,
        window_ms: int = 60_000,
        lockout_ms: int = 300_000,
        exempt_loopback: bool = True,
        max_entries: int = MAX_ENTRIES,
        is_local: Callable[[str], bool] = is_loopback_address,
    ) -> None:
        self.max_attempts = max(1, max_attempts)
        self.window_ms = window_ms
        self.lockout_ms = lockout_ms
        self.exempt_loopback = exempt_loopback
        self.max_entries = max_entries
        self._is_local = is_local
        self._entries: dict[str, _Entry] = {}
        self._penalty_until: dict[str, float] = {}
        self._overflow_until: float | None = None

    def _exempt(self, key: str) -> bool:
        return self.exempt_loopback and self._is_local(key)

    def _refresh(self, entry: _Entry, now: float) -> None:
        if entry.locked_until is not None and now >= entry.locked_until:
            entry.locked_until = None
            entry.attempts.clear()
        cutoff = now - self.window_ms
        entry.attempts = [t for t in entry.attempts if t > cutoff]

    def check(self, key: str, scope: str) -> RateCheck:
        """Whether `key` may try a credential of `scope` now. Not a checkpoint."""
        if self._exempt(key):
            return RateCheck(True)
        now = _now_ms()
        entry = self._entries.get(f"{scope}:{key}")
        if entry is None:
            if self._overflow_until is not None and now < self._overflow_until:
                if len(self._entries) >= self.max_entries:
                    self._prune(now)
                if len(self._entries) >= self.max_entries:
                    return RateCheck(False, int(self._overflow_until - now))
            return RateCheck(True)
        self._refresh(entry, now)
        if entry.locked_until is None and len(entry.attempts) >= self.max_attempts:
            entry.locked_until = now + self.lockout_ms
        if entry.locked_until is not None and now < entry.locked_until:
            return RateCheck(False, math.ceil(entry.locked_until - now))
        return RateCheck(len(entry.attempts) < self.max_attempts)

    def record_failure(self, key: str, scope: str) -> None:
        """Count one failed attempt. Not a checkpoint."""
        now = _now_ms()
        exempt = self._exempt(key)
        entry_key = f"{scope}:{key}"
        entry = self._entries.get(entry_key)
        if entry is None:
            if not self._make_room(now):
                self._overflow_until = max(self._overflow_until or 0, now + self.lockout_ms)
                return
            entry = self._entries[entry_key] = _Entry()
        if not exempt and entry.locked_until is not None and now < entry.locked_until:
            return
        self._refresh(entry, now)
        entry.attempts.append(now)
        if exempt:
            del entry.attempts[:-_LOOPBACK_HISTORY]
        elif len(entry.attempts) >= self.max_attempts:
            entry.locked_until = now + self.lockout_ms

    async def record_failure_and_delay(self, key: str, scope: str) -> None:
        """Count a failure; for an exempt (loopback) key, wait out its escalating penalty
        before returning (a failure never ends before an earlier one of the same key).
        A checkpoint; cancellation ends the wait."""
        self.record_failure(key, scope)
        if not self._exempt(key):
            await trio.lowlevel.checkpoint()
            return
        entry_key = f"{scope}:{key}"
        entry = self._entries.get(entry_key)
        failures = len(entry.attempts) if entry is not None else 1
        penalty = min(LOOPBACK_DELAY_BASE_MS * 2 ** min(failures - 1, 30), LOOPBACK_DELAY_MAX_MS)
        deadline = max(self._penalty_until.get(entry_key, 0.0), _now_ms() + penalty)
        self._penalty_until[entry_key] = deadline
        try:
            await trio.sleep_until(deadline / 1000)
        finally:
            if self._penalty_until.get(entry_key, 0.0) <= _now_ms():
                self._penalty_until.pop(entry_key, None)

    def reset(self, key: str, scope: str) -> None:
        self._entries.pop(f"{scope}:{key}", None)

    def _prune(self, now: float) -> None:
        for k, entry in list(self._entries.items()):
            if entry.locked_until is not None and now < entry.locked_until:
                continue
            self._refresh(entry, now)
            if not entry.attempts:
                del self._entries[k]

    def _make_room(self, now: float) -> bool:
        if len(self._entries) < self.max_entries:
            return True
        self._prune(now)
        if len(self._entries) < self.max_entries:
            return True
        for k, entry in self._entries.items():
            if entry.locked_until is None or now >= entry.locked_until:
                del self._entries[k]
                return True
        return False

    @property
    def size(self) -> int:
        return len(self._entries)


def browser_origin_key(origin: str) -> str:
    return f"{BROWSER_ORIGIN_PREFIX}{origin.strip().lower()}"
