"""`SessionServices`: what a session actor uses, handed to it when it is spawned.

The supervisor makes one bundle and gives it to every session actor it spawns, instead of
itself: the hub, the registry, the store, the chat flusher, the turn services, and narrow
callables for what only the supervisor can do (the generation it serves now, its global
lanes, its write backlog, its journal retries, its drain tasks, the session hooks). The
bundle is frozen; what it points at is not (`counters` is the one thing the actors add to).

It is generic in the actor's type only so that this module, below the session actor, never
names it: a supervisor's bundle is a `SessionServices[SessionActor]`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import attrs

from runtime.agent import TurnServices
from runtime.model import ModelRuntimeGeneration
from runtime.sessions import SessionRow

from ..runs import ChatFlusher, EventHub, RunRegistry
from ..store import JournalRow, Store, WriteGroup
from ._global_lane import GlobalLane

__all__ = ["SessionCommit", "SessionCounters", "SessionServices", "StoreCommit"]

A = TypeVar("A")


StoreCommit = Callable[[WriteGroup], None]
"""`Supervisor.store_commit`: writes that commit together, through the write backlog when the
store's channel is full; the group's `on_commit` hears the outcome (`FencedOut` when its
`fence`, the session's lease token, is refused). Not a checkpoint."""

SessionCommit = Callable[[WriteGroup], None]
"""`SessionActor.store_commit`: a session's writes that commit together, given its fence (a
`StoreCommit` is one too, unfenced). Not a checkpoint."""


@attrs.define(eq=False)
class SessionCounters:
    """What the session actors count for the supervisor's `statistics()`."""

    turns_not_stored: int = 0
    """Runs whose end could not be written (reported to their callers as errors)."""


@attrs.frozen(eq=False)
class SessionServices(Generic[A]):
    """The services of a session actor (`A`: the actor's type). Made once per supervisor."""

    hub: EventHub
    registry: RunRegistry
    store: Store
    chat_flusher: ChatFlusher
    turn: TurnServices
    """The hooks, plugins, caches and workspaces every run's turn uses."""
    generation: Callable[[], ModelRuntimeGeneration]
    """The generation served now (a run forks its stores from it when it starts)."""
    lane_for: Callable[[str], GlobalLane]
    """The global lane by name (`main`, `subagent`, `cron`, `nested`); `ValueError` else."""
    store_commit: StoreCommit
    journal_later: Callable[[JournalRow], None]
    """Keep a run's end row to write again once writes succeed (its turn was not stored)."""
    retry_journal: Callable[[], None]
    """Enqueue the rows `journal_later` kept (a run's writes just committed)."""
    restart_drain: Callable[[A], None]
    """Start the actor's drain task if work is waiting and none runs."""
    session_lifecycle: Callable[[A, SessionRow | None, str], Awaitable[None]]
    """The hooks around a reset (`Supervisor.session_lifecycle`). A checkpoint."""
    counters: SessionCounters
