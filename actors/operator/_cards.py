"""The sessions' progress cards: one card per session key, replaced whole by each write (the
`progress_card` tool of a run there, or a client's `progressCard.put`), read with
`progressCard.get`.

A card is `{sessionKey, revision, updatedAt, markdown?, steps?}` (OpenClaw's
`ProgressCard`); `revision` counts every write of that session's card, clears included (a
cleared card keeps its revision, so the next one continues from it). A clear with
`expected_revision` (what a client sends to retire a finished card) happens only when the
card is at that revision and every step is completed; otherwise the card is left as it is.

Who is told: every operator connection holding `operator.read` gets `progressCard.changed`
(`{sessionKey, revision}`, revision null when cleared) after a write, as OpenClaw's gateway
sends it (a conditional clear that changed nothing sends nothing). The event is a refresh
hint: clients read the card with `progressCard.get`.

A session reset clears its card (`reset`, as OpenClaw's `sessions.reset`); a deleted
session's card is forgotten (`forget`).

In a cluster every node keeps every card: each write and forget here is told to the other
nodes (`peers`: `CardPeers`, the node's `transports.cluster` side), which take it (`take`:
a revision older than the one kept is passed over) and send `progressCard.changed` to their
own operators; a node that joins is told the cards kept here (`slots`). The writes of a
session's card happen on the node that owns the session (its runs; `progressCard.put` and
`get` are routed there), so its revisions follow one another; the copies let the card move
with the session when another node takes it over.

Bounds: at most `MAX_CARDS` sessions' cards (their revisions included) are kept; the one
written longest ago is forgotten first. Cards live as long as the gateway (not in the
store: a restart starts without cards). All calls run in the trio thread; none is a
checkpoint.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import attrs

from ..approvals import Approver
from ..runs import EventHub

__all__ = ["MAX_CARDS", "CardPeers", "ProgressCards"]

MAX_CARDS: Final = 10_000
CHANGED: Final = "progressCard.changed"
READ_SCOPE: Final = "operator.read"


def _wall_ms() -> int:
    return int(time.time() * 1000)


@attrs.define
class _Slot:
    revision: int
    updated_at: int
    card: dict[str, Any] | None


class CardPeers(Protocol):
    """The other nodes of a cluster, as the progress cards use them."""

    def card_changed(self, slot: dict[str, Any]) -> None:
        """Tell them a session's card changed: `{sessionKey, revision, updatedAt, card}`
        (card null: cleared), or `{sessionKey, forget: true}`."""
        ...


class ProgressCards:
    """The progress cards of one gateway (see the module docstring); the runs'
    `runtime.tools.CardDesk`."""

    def __init__(
        self,
        hub: EventHub,
        connections: Mapping[str, Approver],
        *,
        now_ms: Callable[[], int] = _wall_ms,
    ) -> None:
        self._hub = hub
        self._connections = connections
        self._now_ms = now_ms
        self._slots: collections.OrderedDict[str, _Slot] = collections.OrderedDict()
        self.peers: CardPeers | None = None
        """The other nodes of the cluster (None: this gateway alone)."""

    def get(self, session_key: str) -> dict[str, Any] | None:
        """The card of `session_key`, or None."""
        slot = self._slots.get(session_key)
        return None if slot is None else slot.card

    def put(
        self,
        session_key: str,
        card: dict[str, Any],
        *,
        agent_id: str | None = None,
        expected_revision: int | None = None,
    ) -> dict[str, Any] | None:
        """`runtime.tools.CardDesk`: replace the card (`{markdown?, steps?}`, normalized by
        `runtime.tools.normalize_card`; empty clears it) and tell the operators; the card
        now stored, or None. With `expected_revision` (a clear only) nothing changes unless
        the card is at that revision with every step completed."""
        slot = self._slots.get(session_key)
        if not card:
            if expected_revision is not None and not _finished(slot, expected_revision):
                return None if slot is None else slot.card
            if slot is None:
                self._changed(session_key, None)
                return None
            slot.revision += 1
            slot.updated_at = self._now_ms()
            slot.card = None
            self._slots.move_to_end(session_key)
            self._changed(session_key, None)
            return None
        revision = (slot.revision if slot is not None else 0) + 1
        now = self._now_ms()
        stored = {"sessionKey": session_key, "revision": revision, "updatedAt": now, **card}
        self._slots[session_key] = _Slot(revision, now, stored)
        self._slots.move_to_end(session_key)
        while len(self._slots) > MAX_CARDS:
            self._slots.popitem(last=False)
        self._changed(session_key, revision)
        return stored

    def _changed(self, session_key: str, revision: int | None, *, here: bool = True) -> None:
        slot = self._slots.get(session_key)
        if here and self.peers is not None and slot is not None:
            self.peers.card_changed(_wire(session_key, slot))
        targets = [
            c
            for c in self._connections.values()
            if c.role == "operator" and c.has_scope(READ_SCOPE)
        ]
        if targets:
            self._hub.send_to(targets, CHANGED, {"sessionKey": session_key, "revision": revision})

    def reset(self, session_key: str) -> None:
        """A session reset (`sessions.reset`) clears its card, as OpenClaw's reset does
        (a session that never had one is left alone)."""
        if session_key in self._slots:
            self.put(session_key, {})

    def forget(self, session_key: str) -> None:
        """A deleted session's card (and its revision) goes with it."""
        if self._slots.pop(session_key, None) is not None and self.peers is not None:
            self.peers.card_changed({"sessionKey": session_key, "forget": True})

    def take(self, wire: dict[str, Any], *, tell: bool = True) -> None:
        """Another node's write (or forget) of a card (`CardPeers.card_changed`'s); told
        to this gateway's operators unless `tell` is false (a joining node's greeting). A
        revision older than the one kept, or malformed, is passed over."""
        key, revision = wire.get("sessionKey"), wire.get("revision")
        if not isinstance(key, str):
            return
        if wire.get("forget") is True:
            self._slots.pop(key, None)
            return
        card, updated_at = wire.get("card"), wire.get("updatedAt")
        if not isinstance(revision, int) or not isinstance(updated_at, int):
            return
        if not isinstance(card, dict | None):
            return
        slot = self._slots.get(key)
        if slot is not None and slot.revision >= revision:
            return
        self._slots[key] = _Slot(revision, updated_at, card)
        self._slots.move_to_end(key)
        while len(self._slots) > MAX_CARDS:
            self._slots.popitem(last=False)
        if tell:
            self._changed(key, None if card is None else revision, here=False)

    def slots(self) -> list[dict[str, Any]]:
        """Every card kept (cleared ones with their revision), as `take` reads them,
        written longest ago first."""
        return [_wire(key, slot) for key, slot in self._slots.items()]

    def __len__(self) -> int:
        return len(self._slots)


def _wire(session_key: str, slot: _Slot) -> dict[str, Any]:
    return {
        "sessionKey": session_key,
        "revision": slot.revision,
        "updatedAt": slot.updated_at,
        "card": slot.card,
    }


def _finished(slot: _Slot | None, expected: int) -> bool:
    if slot is None or slot.card is None or slot.revision != expected:
        return False
    steps = slot.card.get("steps") or []
    return bool(steps) and all(s["status"] == "completed" for s in steps)
