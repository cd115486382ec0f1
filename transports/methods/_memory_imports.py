"""`migrations.memory.plan` and `migrations.memory.apply`, as OpenClaw 2026.9.6 answers them
(its `MigrationsMemoryPlanResult` / `MigrationsMemoryApplyResult`): importing Claude Code's or
Hermes' memory on this gateway host into an agent's memory files (`runtime.memory._migrate`
says what is looked for and where it goes).

OpenClaw's rules: the agent must be configured (`unknown agent id`); an apply names the plan's
fingerprint and the items to copy, and is refused when the plan changed since, when an item is
not in it, or when a conflict is selected without `overwrite`; the same `idempotencyKey` gives
the first answer again, and with other params is refused (`memory import idempotency key was
reused`); a second import of the same agent and provider while one runs is `UNAVAILABLE`,
retryable.
"""

from __future__ import annotations

import functools
import os
from typing import Annotated, Any, Final

import msgspec
import trio

from runtime.memory import (
    IMPORTS_KEPT,
    MigrationError,
    apply_memory_import,
    plan_memory_imports,
)
from runtime.model import GenerationError
from runtime.protocol import UNAVAILABLE, GatewayError, invalid_request

from ._context import Call, MethodTable

__all__ = ["register"]

_Text = Annotated[str, msgspec.Meta(min_length=1)]
_REUSED: Final = "memory import idempotency key was reused"


class MigrationsMemoryPlanParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    agentId: _Text
    overwrite: bool | msgspec.UnsetType = msgspec.UNSET  # optional, never null


class MigrationsMemoryApplyParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    idempotencyKey: _Text
    agentId: _Text
    providerId: _Text
    planFingerprint: Annotated[str, msgspec.Meta(pattern="^[a-f0-9]{64}$")]
    itemIds: Annotated[list[_Text], msgspec.Meta(min_length=1, max_length=2000)]
    overwrite: bool | msgspec.UnsetType = msgspec.UNSET  # optional, never null


async def _target(call: Call, raw: str) -> tuple[str, Any]:
    """The configured agent `raw` names, and its workspace."""
    sup = call.gateway.actors.supervisor
    if not raw.strip():
        raise invalid_request("invalid agent id")
    try:
        spec = sup.generation.agent(raw.strip())
    except GenerationError as exc:
        raise invalid_request("unknown agent id") from exc
    return spec.id, await sup.workspace_for(spec.id, spec.workspace)


async def migrations_memory_plan(call: Call, params: MigrationsMemoryPlanParams) -> dict[str, Any]:
    agent_id, workspace = await _target(call, params.agentId)
    plan = functools.partial(
        plan_memory_imports,
        agent_id,
        workspace,
        overwrite=params.overwrite is True,
        env=dict(os.environ),
    )
    return await trio.to_thread.run_sync(plan)


async def migrations_memory_apply(
    call: Call, params: MigrationsMemoryApplyParams
) -> dict[str, Any]:
    if len(set(params.itemIds)) != len(params.itemIds):
        raise invalid_request("itemIds must be unique")
    agent_id, workspace = await _target(call, params.agentId)
    service = call.gateway.actors.supervisor.services.memory
    request = msgspec.json.encode(
        [
            agent_id,
            params.providerId,
            params.planFingerprint,
            params.itemIds,
            params.overwrite is True,
        ]
    ).decode()
    cached = service.imports.get(params.idempotencyKey)
    if cached is not None:
        if cached[0] != request:
            raise invalid_request(_REUSED)
        if isinstance(cached[1], str):
            raise invalid_request(cached[1])
        return cached[1]
    running = f"{agent_id}:{params.providerId}"
    if running in service.importing:
        raise GatewayError(
            UNAVAILABLE, "memory import already running", retryable=True, retry_after_ms=1000
        )
    service.importing.add(running)
    try:
        apply = functools.partial(
            apply_memory_import,
            agent_id,
            workspace,
            provider_id=params.providerId,
            fingerprint=params.planFingerprint,
            item_ids=list(params.itemIds),
            overwrite=params.overwrite is True,
            report_root=call.gateway.process.state_dir / "migration",
            env=dict(os.environ),
        )
        try:
            result = await trio.to_thread.run_sync(apply)
        except MigrationError as exc:
            raise invalid_request(str(exc)) from exc
    finally:
        service.importing.discard(running)
    service.imports[params.idempotencyKey] = (request, result)
    while len(service.imports) > IMPORTS_KEPT:
        service.imports.popitem(last=False)
    return result


def register(methods: MethodTable) -> None:
    methods.add("migrations.memory.plan", migrations_memory_plan, MigrationsMemoryPlanParams)
    methods.add("migrations.memory.apply", migrations_memory_apply, MigrationsMemoryApplyParams)
