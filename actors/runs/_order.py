"""Submission order: the order of a session's runs is fixed when a request is received.

A connection's reader takes a `Ticket` for a request's session key the moment it decodes
the request, before anything waits (a session row to load, a durable write to commit). The
request's handler may then take as long as it needs, on a task of its own or in a commit
callback; when it is ready to place its run on the session's lane, it waits for its turn:
every ticket taken earlier for that key has been used or released. So five requests sent
back to back for a session that does not exist yet reach its lane in the order they were
sent, whichever of their handlers finishes its preparation first, and so do requests of
several connections, in the order their readers received them.

Two ways to use a ticket, one per kind of caller:

- `when_due(action)`: a callback caller (the `agent` fast path) hands over a synchronous
  action; it runs at once when the ticket is due, else when the earlier ones are done. The
  ticket is released right after it.
- `await turn()` then `release()`: a task waits for its turn, does its (synchronous) part
  and releases the ticket (in a `finally`).

Every ticket must end released (`release` is idempotent): a ticket that is never released
holds back every later request of its session. A ticket that will not be used (a repeated
idempotency key, a request that failed validation) is released at once.

Not thread-safe; one trio thread. Nothing here is a checkpoint except `turn`.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable

import attrs
import trio

log = logging.getLogger("clawlane.order")


@attrs.frozen
class OrderStatistics:
    """`keys`: sessions with tickets outstanding; `tickets`: tickets not yet released;
    `deferred`: requests ready to run that wait for an earlier request of their session."""

    keys: int
    tickets: int
    deferred: int


class Ticket:
    """A place in one session's submission order. Made by `SubmissionOrder.reserve`."""

    __slots__ = ("_action", "_event", "_order", "_released", "key", "seq")

    def __init__(self, order: SubmissionOrder, key: str, seq: int) -> None:
        self.key = key
        self.seq = seq
        """The ticket's number in this process (all keys): the order requests were received."""
        self._order = order
        self._released = False
        self._action: Callable[[], None] | None = None
        self._event: trio.Event | None = None

    @property
    def released(self) -> bool:
        return self._released

    @property
    def due(self) -> bool:
        """Every earlier ticket of this key has been released (this one is the head)."""
        return self._order._head(self.key) is self

    def when_due(self, action: Callable[[], None]) -> None:
        """Run `action` (synchronous; it must not raise) when this ticket is due, now if it
        is; then release the ticket. On a released ticket `action` runs at once. A ticket
        handed an action is released by it: do not release it otherwise. Not a
        checkpoint."""
        if self._released or self.due:
            self._run(action)
            return
        self._action = action
        self._order._deferred += 1

    async def turn(self) -> None:
        """Wait until this ticket is due. A checkpoint; cancellable (the ticket stays
        taken: release it)."""
        if self._released or self.due:
            await trio.lowlevel.checkpoint()
            return
        event = self._event = trio.Event()
        await event.wait()

    def release(self) -> None:
        """Give the place up (or mark it used); later tickets may go. Idempotent; not a
        checkpoint."""
        if self._released:
            return
        self._released = True
        self._order._advance(self.key)

    def _run(self, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception:
            log.exception("a submission for %s failed", self.key)
        finally:
            self.release()


class SubmissionOrder:
    """The tickets of every session with requests on their way to its lane."""

    def __init__(self) -> None:
        self._queues: dict[str, collections.deque[Ticket]] = {}
        self._advancing: set[str] = set()
        self._deferred = 0
        self._seq = 0

    def reserve(self, key: str) -> Ticket:
        """A ticket behind every ticket of `key` taken so far. Not a checkpoint."""
        self._seq += 1
        ticket = Ticket(self, key, self._seq)
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = collections.deque()
        queue.append(ticket)
        return ticket

    def outstanding(self, key: str) -> int:
        """Tickets of `key` not yet released."""
        return sum(1 for t in self._queues.get(key, ()) if not t.released)

    def _head(self, key: str) -> Ticket | None:
        queue = self._queues.get(key)
        while queue and queue[0].released:
            queue.popleft()
        return queue[0] if queue else None

    def _advance(self, key: str) -> None:
        """Drop released tickets from the head; run or wake the next due one."""
        if key in self._advancing:
            return  # an action releasing tickets: the loop below goes on with them
        self._advancing.add(key)
        try:
            while True:
                head = self._head(key)
                if head is None:
                    self._queues.pop(key, None)
                    return
                action, head._action = head._action, None
                if action is not None:
                    self._deferred -= 1
                    head._run(action)
                    continue
                if head._event is not None:
                    head._event.set()
                return
        finally:
            self._advancing.discard(key)

    def statistics(self) -> OrderStatistics:
        return OrderStatistics(
            keys=len(self._queues),
            tickets=sum(1 for q in self._queues.values() for t in q if not t.released),
            deferred=self._deferred,
        )
