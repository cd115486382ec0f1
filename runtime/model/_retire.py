"""Closing provider transports: the part of generation retirement the publisher does not do.

Who closes what:

- A generation replaced by a newer one: `actors._publisher.Publisher` closes the transports
  that no live generation uses any more (`GenerationBuilder.collect_retired`), after each
  publish and on each watcher poll. A run keeps its generation alive to its end
  (`RunStores.owner`), so a transport closes after the last run that used it, within one poll
  interval. Transports are pooled across generations by their settings (`ProviderPool`), so
  a reload that does not touch a provider keeps its connections: closing "the old
  generation's providers" wholesale would close transports the new generation still uses.
- When the gateway (or any owner of a builder) stops, nothing has retired the serving
  generation: `close_all_providers` closes its transports and whatever the builder still
  tracks. Call it after the last run ended (`Supervisor.shutdown_runs`), inside a shielded
  cancel scope.

`close_providers` closes each distinct transport once (by identity), never raises for a
transport whose `aclose` fails (logged), and returns how many it closed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ..llm._types import ModelProvider
from ._generation import GenerationBuilder, ModelRuntimeGeneration

__all__ = ["close_all_providers", "close_providers", "generation_providers"]

log = logging.getLogger("clawlane.retire")


def generation_providers(*generations: ModelRuntimeGeneration) -> list[ModelProvider]:
    """Every distinct provider transport of `generations` (every agent's, and the default
    agent's top-level map), in a stable order."""
    seen: dict[int, ModelProvider] = {}
    for generation in generations:
        for provider in generation.providers.values():
            seen.setdefault(id(provider), provider)
        for agent in generation.agent_generations.values():
            for provider in agent.providers.values():
                seen.setdefault(id(provider), provider)
    return list(seen.values())


async def close_providers(providers: Iterable[ModelProvider]) -> int:
    """`aclose()` each distinct provider once. A failing `aclose` is logged and skipped.
    Returns how many were closed. Cancellation propagates (shield the call at shutdown)."""
    closed = 0
    seen: set[int] = set()
    for provider in providers:
        if id(provider) in seen:
            continue
        seen.add(id(provider))
        try:
            await provider.aclose()
        except Exception:
            log.exception("closing provider %r failed", getattr(provider, "id", provider))
            continue
        closed += 1
    return closed


async def close_all_providers(
    builder: GenerationBuilder | None, *generations: ModelRuntimeGeneration
) -> int:
    """At shutdown: close the transports of `generations` (the serving one) and those
    `builder` pools for no live generation (retired, not yet collected). Returns how many
    were closed. Never call it while `builder` is building."""
    providers = generation_providers(*generations)
    if builder is not None:
        providers.extend(builder.collect_retired())
    return await close_providers(providers)
