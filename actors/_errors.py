"""The root of the actors' errors, and the store's (raised by `actors._store` and by its
SQLite side, `actors._sqlite`); the whole tree is drawn in the package's face."""

from __future__ import annotations

from runtime.protocol import ClawlaneError

__all__ = ["ActorError", "StoreClosedError", "StoreError"]


class ActorError(ClawlaneError):
    """An actor could not do what it was asked: a store that cannot write, a lane that is
    full, a run refused, a session busy, a publish that lost a race, an unknown job."""


class StoreError(ActorError):
    """A commit or read of the store failed, or stored bytes do not decode."""


class StoreClosedError(StoreError):
    """The store was used after its context closed."""
