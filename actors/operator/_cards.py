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

Bounds: at most `MAX_CARDS` sessions' cards (their revisions included) are kept; the one
written longest ago is forgotten first. Cards live as long as the gateway (not in the
store: a restart starts without cards). All calls run in the trio thread; none is a
checkpoint.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from ..approvals import Approver
from ..runs import EventHub

__all__ = ["MAX_CARDS", "ProgressCards"]

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

    def _changed(self, session_key: str, revision: int | None) -> None:
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
        self._slots.pop(session_key, None)

    def __len__(self) -> int:
        return len(self._slots)


def _finished(slot: _Slot | None, expected: int) -> bool:
    if slot is None or slot.card is None or slot.revision != expected:
        return False
    steps = slot.card.get("steps") or []
    return bool(steps) and all(s["status"] == "completed" for s in steps)
