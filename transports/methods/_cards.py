"""The progress card methods, on the gateway's `actors.ProgressCards` (the card a run's
`progress_card` tool writes; OpenClaw's Control UI shows it in the composer, the dashboard
and the session hovercard):

- `progressCard.get` (`ProgressCardGetParams`, scope `operator.read`): `{card}`, the
  session's `ProgressCard` or null.
- `progressCard.put` (`ProgressCardPutParams`, scope `operator.write`): replaces the whole
  card with `markdown` and `plan` (OpenClaw's rules: `runtime.tools.normalize_card`; a
  breach is `INVALID_REQUEST` with OpenClaw's message); both empty clears it. With
  `expectedRevision` (a clear only, else `expectedRevision is only valid when clearing a
  card`) the card is cleared only when it is at that revision with every step completed.
  Answers `{card}` (null: cleared); operators holding `operator.read` get
  `progressCard.changed`.

`sessionKey` is made canonical (`main` is `agent:<default>:main`); an `agentId` that is
unknown or not the session's owner is `INVALID_REQUEST`.

In a cluster both are served by the node that owns the session (the router sends them
there), and every node keeps every card and tells its own operators `progressCard.changed`
(`transports.cluster`).
"""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from runtime.protocol import (
    ProgressCardGetParams,
    ProgressCardPutParams,
    invalid_request,
    opt,
)
from runtime.tools import ProgressCardError, normalize_card

from ._context import Call, MethodTable
from ._submit import agent_spec, key_of

__all__ = ["register"]


def register(methods: MethodTable) -> None:
    methods.advertise("progressCard.changed")
    methods.add("progressCard.get", card_get, ProgressCardGetParams)
    methods.add("progressCard.put", card_put, ProgressCardPutParams)


def _session(call: Call, raw: str, agent_id: str | None) -> str:
    """The canonical key of `raw`, checked against `agent_id` (when given)."""
    key = key_of(call, raw, agent_id)
    if agent_id is not None:
        agent_spec(call, agent_id)  # unknown: INVALID_REQUEST
        owner = key.split(":")[1] if key.startswith("agent:") else None
        if owner is not None and owner != agent_id:
            raise invalid_request(f'agent id "{agent_id}" does not match session agent "{owner}"')
    return key


async def card_get(call: Call, params: ProgressCardGetParams) -> dict[str, Any]:
    key = _session(call, params.sessionKey, opt(params.agentId))
    await trio.lowlevel.checkpoint()
    return {"card": call.gateway.actors.cards.get(key)}


async def card_put(call: Call, params: ProgressCardPutParams) -> dict[str, Any]:
    plan = opt(params.plan)
    try:
        card = normalize_card(
            opt(params.markdown), None if plan is None else msgspec.to_builtins(plan)
        )
    except ProgressCardError as exc:
        raise invalid_request(str(exc)) from exc
    expected = opt(params.expectedRevision)
    if expected is not None and card:
        raise invalid_request("expectedRevision is only valid when clearing a card")
    agent_id = opt(params.agentId)
    key = _session(call, params.sessionKey, agent_id)
    stored = call.gateway.actors.cards.put(key, card, agent_id=agent_id, expected_revision=expected)
    await trio.lowlevel.checkpoint()
    return {"card": stored}
