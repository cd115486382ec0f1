"""Writes that wait while the store's channel is full, fed to it in order.

A run's end, a recovery report or a refused run's journal row hands its `WriteGroup` over
without blocking (`WriteBacklog.commit`): it goes straight onto the store's channel
(`Store.commit_nowait`) unless the channel is full or earlier writes are already waiting;
then it waits here, behind them, and one task (`feed`) hands the waiting groups to the
store as the channel frees up, so writes of one session reach the store in the order they
were made.

The backlog is not bounded in count: each entry is a write its run has already decided and
holds in memory, and refusing it would lose something acknowledged. Its length is reported
(`len()`, the supervisor's `persist_backlog`, `/metrics`' `clawlane_store_backlog`) so that
an operator sees a store that cannot keep up.
"""

from __future__ import annotations

import collections

import trio

from .._errors import StoreError
from ._ops import WriteGroup
from ._store import Store

__all__ = ["WriteBacklog"]


class WriteBacklog:
    """The writes waiting for room on `store`'s channel (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._waiting: collections.deque[WriteGroup] = collections.deque()
        self._wake = trio.Event()

    def __len__(self) -> int:
        return len(self._waiting)

    def commit(self, group: WriteGroup) -> None:
        """Hand `group` to the store now, or behind the writes already waiting. Its
        `on_commit` hears the outcome (at once, with the error, when the store is closed).
        Not a checkpoint. Raises `StoreError` only for a closed store and a group with no
        `on_commit` to tell."""
        if not self._waiting:
            try:
                self.store.commit_nowait(group)
                return
            except trio.WouldBlock:
                self._wake.set()
            except StoreError as exc:
                if group.on_commit is None:
                    raise
                group.on_commit(exc)
                return
        self._waiting.append(group)

    async def feed(self) -> None:
        """Hand waiting writes to the store whenever some wait, forever. A checkpoint;
        run it in a nursery that lives as long as the store."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self.drain()

    async def drain(self) -> None:
        """Hand every waiting write to the store, waiting for channel room. A checkpoint.
        A group whose commit cannot be enqueued tells its `on_commit`; one without raises
        the `StoreError`."""
        while self._waiting:
            group = self._waiting.popleft()
            try:
                await self.store.commit(group)
            except StoreError as exc:
                if group.on_commit is None:
                    raise
                group.on_commit(exc)
