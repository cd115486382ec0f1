"""Retries and the LLM idle watchdog around one model turn.

`stream_with_retry` wraps `ModelProvider.stream`:

- A retryable `ProviderError` (rate limit, overloaded, timeout, network, server) raised
  before the first delta was yielded starts a new attempt, after a bounded exponential
  backoff with jitter, or after the provider's Retry-After when that is longer. At most
  ``max_attempts`` attempts; a Retry-After longer than ``max_retry_after`` is not waited for
  (the error is raised at once, for the caller to fail over).
- Once a delta was yielded, any error is raised as is: a retry would repeat output the
  consumer already has. Context overflow, auth and bad requests are never retried.
- The idle watchdog: when no delta arrives within ``idle_timeout`` seconds, the attempt is
  cancelled (which closes its HTTP stream) and `IdleTimeoutError` (a ``ProviderError`` of
  kind ``timeout``, "LLM idle timeout: no chunk for Ns") is raised. That error is final,
  never retried here: the window is the run's patience, and the agent decides what a
  stalled turn means (compaction, fail over). Pings and other events that carry no delta
  do not count as chunks: the window is measured in deltas. `resolve_idle_timeout` turns
  the config (``agents.defaults.llm.idleTimeoutSeconds``, ``timeoutSeconds``) into the window.
- ``watchdog`` (optional): a cancel scope the caller holds around its whole iteration
  (whose loop body must not await); the caller may create it armed with
  ``watchdog_deadline``. Its deadline is pushed forward as deltas arrive instead of
  entering a scope per delta (and only when it would otherwise fall within the window, so
  a burst of deltas moves it once); it fires after ``idle_timeout`` to ``idle_timeout`` ×
  1.02 (at most +0.5 s) of silence. When the current run's pacer is driven (a gateway's,
  `_pacer`), its timer watches instead (the scope's deadline set aside) and it fires
  ``idle_timeout`` to 1 ms after. The caller's scope catches the cancellation and the
  caller raises `IdleTimeoutError`.
"""

from __future__ import annotations

import itertools
import logging
import math
import random
from collections.abc import AsyncIterator

import attrs
import trio

from ..logs._oplog import log_event
from ._pacer import IdleWatch, pacer_driven, watch_idle
from ._types import ModelDelta, ModelProvider, ModelRequest, ProviderError

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "IdleTimeoutError",
    "backoff_delay",
    "resolve_idle_timeout",
    "stream_with_retry",
    "watchdog_deadline",
]

DEFAULT_IDLE_TIMEOUT = 60.0
"""The idle window when neither ``agents.defaults.llm.idleTimeoutSeconds`` nor
``agents.defaults.timeoutSeconds`` is configured."""

_rng = random.Random()
log = logging.getLogger("clawlane.providers")
WATCHDOG_SLACK = 0.02
"""How late (a share of the window, at most `WATCHDOG_SLACK_MAX` s) the caller-held watchdog
may fire; never early."""
WATCHDOG_SLACK_MAX = 0.5


class IdleTimeoutError(ProviderError):
    """The LLM idle watchdog fired: no delta arrived within ``window`` seconds.

    Kind ``timeout``, message ``"LLM idle timeout: no chunk for Ns"``. `stream_with_retry`
    never retries it: the window is the run's patience; the agent decides what follows.
    """

    def __init__(self, window: float) -> None:
        super().__init__("timeout", f"LLM idle timeout: no chunk for {window:g}s")
        self.window = window


def resolve_idle_timeout(
    idle_timeout_seconds: float | None,
    provider_timeout_seconds: float | None = None,
    *,
    run_timeout_seconds: float | None = None,
    cron: bool = False,
) -> float | None:
    """The idle window of a turn, or ``None`` for no watchdog.

    - ``idle_timeout_seconds`` (``agents.defaults.llm.idleTimeoutSeconds``): used when set;
      0 disables the watchdog.
    - Unset: ``run_timeout_seconds`` (``agents.defaults.timeoutSeconds``) when configured
      (0: none), else 60 s; cron runs with neither configured have no watchdog.
    - A provider's ``timeoutSeconds`` extends an enabled window, never shortens it (a slow
      local model configured with a long read timeout is not cut off by the default).
    """
    window: float | None
    if idle_timeout_seconds is not None:
        window = float(idle_timeout_seconds) if idle_timeout_seconds > 0 else None
    elif run_timeout_seconds is not None:
        window = float(run_timeout_seconds) if run_timeout_seconds > 0 else None
    else:
        window = None if cron else DEFAULT_IDLE_TIMEOUT
    if window is None:
        return None
    if provider_timeout_seconds is not None and provider_timeout_seconds > window:
        window = float(provider_timeout_seconds)
    return window


def watchdog_deadline(idle_timeout: float) -> float:
    """An idle watchdog scope's first deadline, to create it armed (`stream_with_retry`);
    none when the current run's pacer is driven (its watch arms on the first iteration)."""
    if pacer_driven():
        return math.inf
    return (
        trio.current_time() + idle_timeout + min(idle_timeout * WATCHDOG_SLACK, WATCHDOG_SLACK_MAX)
    )


def backoff_delay(
    retry: int, *, base_delay: float, max_delay: float, rng: random.Random | None = None
) -> float:
    """Seconds before retry number ``retry`` (1 for the first): "equal jitter", uniform in
    ``[c/2, c]`` with ``c = min(max_delay, base_delay * 2**(retry-1))``."""
    ceiling = min(max_delay, base_delay * 2.0 ** min(retry - 1, 32))
    return ceiling / 2 + (rng or _rng).random() * ceiling / 2


async def stream_with_retry(
    provider: ModelProvider,
    request: ModelRequest,
    *,
    max_attempts: int = 3,
    base_delay: float = 0.5,
    max_delay: float = 8.0,
    idle_timeout: float | None = None,
    max_retry_after: float = 60.0,
    rng: random.Random | None = None,
    watchdog: trio.CancelScope | None = None,
) -> AsyncIterator[ModelDelta]:
    """`provider.stream(request)` with retries and the idle watchdog (see the module doc).

    An async generator: iterate it inside `contextlib.aclosing`. Every ``await`` on it is a
    checkpoint; cancelling the iterating task closes the current attempt's HTTP stream.
    ``idle_timeout`` of ``None`` (or <= 0) disables the watchdog; ``watchdog``: module doc.

    Raises:
        ProviderError: the last attempt's error, an error after output, or the idle timeout.
    """
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    window = idle_timeout if idle_timeout is not None and idle_timeout > 0 else None
    slack = min(window * WATCHDOG_SLACK, WATCHDOG_SLACK_MAX) if window is not None else 0.0
    for attempt in itertools.count(1):
        produced = False
        deltas = provider.stream(request)
        try:
            if window is None:
                async for delta in deltas:
                    produced = True
                    yield delta
                return
            if watchdog is not None and (watch := _watch(watchdog, window)) is not None:
                clock = trio.lowlevel.current_clock()
                try:
                    async for delta in deltas:
                        produced = True
                        yield delta
                        watch.last = clock.current_time()  # the consumer asks for the next
                finally:
                    watch.close()
                return
            if watchdog is not None:
                # A deadline moves only when due inside the window, then `slack` further
                # (module doc); the window restarts when the consumer asks for the next delta.
                clock = trio.lowlevel.current_clock()
                armed = _arm(watchdog, clock.current_time() + window, slack)
                async for delta in deltas:
                    produced = True
                    yield delta
                    due = clock.current_time() + window
                    if due > armed:
                        armed = watchdog.deadline = due + slack
                watchdog.deadline = math.inf  # closing the stream is not the model being silent
                return
            while True:
                # A cancel scope per delta (~5-10 us): it may not span the yield below.
                with trio.move_on_after(window) as scope:
                    try:
                        delta = await deltas.__anext__()
                    except StopAsyncIteration:
                        return
                if scope.cancelled_caught:
                    raise IdleTimeoutError(window)
                produced = True
                yield delta
        except ProviderError as exc:
            retries = _Retries(max_attempts, base_delay, max_delay, max_retry_after, rng)
            delay = retries.delay_after(exc, produced=produced, attempt=attempt)
            if delay is None:
                raise
            retries.log(provider, request, exc, attempt, delay)
        finally:
            await _aclose(deltas)
        if watchdog is not None:
            watchdog.deadline = math.inf  # a backoff is not the model being silent
        await trio.sleep(delay)


def _watch(watchdog: trio.CancelScope, window: float) -> IdleWatch | None:
    """The current run's pacer watching `watchdog` for `window` (the deadline its creator
    may have armed set aside), or None when no pacer is driven."""
    watch = watch_idle(watchdog, window)
    if watch is not None and watchdog.deadline != math.inf:
        watchdog.deadline = math.inf
    return watch


def _arm(watchdog: trio.CancelScope, due: float, slack: float) -> float:
    """The watchdog's deadline for an attempt's first delta, `due` (plus `slack`) unless the
    caller armed it already within the window (saves a move)."""
    armed = watchdog.deadline
    if not due <= armed < math.inf:
        armed = watchdog.deadline = due + slack
    return armed


@attrs.frozen
class _Retries:
    """The retry policy of one `stream_with_retry` call (made when an attempt fails)."""

    max_attempts: int
    base_delay: float
    max_delay: float
    max_retry_after: float
    rng: random.Random | None

    def delay_after(self, exc: ProviderError, *, produced: bool, attempt: int) -> float | None:
        """Seconds to wait before retrying after `exc`, or None when it is final: the idle
        timeout, an error after output, one not retryable, the last attempt's, or one whose
        Retry-After is longer than `max_retry_after`."""
        if isinstance(exc, IdleTimeoutError) or produced or not exc.retryable:
            return None
        if attempt >= self.max_attempts:
            return None
        delay = backoff_delay(
            attempt, base_delay=self.base_delay, max_delay=self.max_delay, rng=self.rng
        )
        if exc.retry_after is not None:
            if exc.retry_after > self.max_retry_after:
                return None
            delay = max(delay, exc.retry_after)
        return delay

    def log(
        self,
        provider: ModelProvider,
        request: ModelRequest,
        exc: ProviderError,
        attempt: int,
        delay: float,
    ) -> None:
        log_event(
            log,
            logging.INFO,
            "provider retry",
            provider=getattr(provider, "id", None),
            model=request.model,
            attempt=attempt + 1,
            maxAttempts=self.max_attempts,
            kind=exc.kind,
            delayMs=int(delay * 1000),
            error=exc.message,
        )


async def _aclose(deltas: AsyncIterator[ModelDelta]) -> None:
    # `ModelProvider.stream` is typed as an iterator but is an async generator: close it so
    # its HTTP response is released now, not when the garbage collector gets to it.
    aclose = getattr(deltas, "aclose", None)
    if aclose is not None:
        await aclose()
