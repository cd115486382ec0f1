"""The root of the actors' errors, and the store's (raised by `actors.store._store` and by its
SQLite side, `actors.store._sqlite`); the whole tree is drawn in the package's face."""

from __future__ import annotations

from runtime.protocol import ClawlaneError

__all__ = ["ActorError", "FencedOut", "StoreClosedError", "StoreError"]


class ActorError(ClawlaneError):
    """An actor could not do what it was asked: a store that cannot write, a lane that is
    full, a run refused, a session busy, a publish that lost a race, an unknown job."""


class StoreError(ActorError):
    """A commit or read of the store failed, or stored bytes do not decode."""


class StoreClosedError(StoreError):
    """The store was used after its context closed."""


class FencedOut(StoreError):
    """A durable write of a session was refused: it carried a fencing token older than the
    one the store holds for that session (another node took the session's lease since).
    `key`: the session key; `token`: the write's token; `current`: the store's."""

    def __init__(self, key: str, token: int, current: int) -> None:
        super().__init__(
            f"session {key!r}: a write with fencing token {token} was refused, the store holds "
            f"token {current}: the session's lease moved to another node"
        )
        self.key = key
        self.token = token
        self.current = current
