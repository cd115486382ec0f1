"""Memory's methods, with OpenClaw's shapes: `memory.search` (an operator's search of an agent's
memory index: `{agentId, provider, searchMode, results}`), `doctor.memory.status` (`{agentId,
provider, embedding: {ok, error?}, dreaming}`, and clawlane's `index`: files, chunks, bytes),
and the dreaming methods, answered truthfully: clawlane does not dream, so `dreaming.enabled`
is false, `doctor.memory.dreamDiary` reads `DREAMS.md` if there is one, and the methods that
would change dreaming state are `UNAVAILABLE`, saying so. `migrations.memory.*` (importing
Claude Code's or Hermes' memory) are `_memory_imports`'.

Also the message of a bare `/new` or `/reset` (`bare_reset_message`): OpenClaw's startup
context (today's and yesterday's daily notes) before the greeting prompt.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any, Final

import trio

from runtime.agent import memory_settings
from runtime.memory import MemorySettings, startup_prelude
from runtime.model import GenerationError
from runtime.protocol import UNAVAILABLE, GatewayError, invalid_request

from . import _memory_imports
from ._context import Call, MethodTable

__all__ = ["RESET_GREETING", "bare_reset_message", "register"]

RESET_GREETING: Final = (
    "A new session was started. Greet the user briefly and ask what they would like to do."
)
_SEARCH_DEFAULT: Final = 20
_SEARCH_MAX: Final = 50
_DREAMING_OFF: Final = (
    "memory dreaming is off: clawlane does not run OpenClaw's dreaming sweeps, so there is "
    "no dreaming state to change"
)


async def bare_reset_message(call: Call, key: str) -> str:
    """The model's message for a bare `/new` or `/reset` on session `key`: the startup context
    loaded from the agent's daily notes (if any), then the greeting prompt with the date
    (so that the agent knows which notes are today's). A checkpoint (file I/O in a thread)."""
    sup = call.gateway.actors.supervisor
    agent_id = key.split(":")[1] if key.startswith("agent:") else sup.generation.default_agent
    spec = sup.generation.agent(agent_id)
    workspace = await sup.workspace_for(spec.id, spec.workspace)
    now = dt.datetime.now().astimezone()
    prelude = await trio.to_thread.run_sync(startup_prelude, workspace, now)
    greeting = f"{RESET_GREETING}\nCurrent time: {now:%A, %Y-%m-%d %H:%M %Z}"
    return f"{prelude}\n\n{greeting}" if prelude else greeting


def _agent(call: Call, params: dict[str, Any]) -> tuple[str, str | None]:
    """The agent named by `agentId` (else the default) and its configured workspace."""
    raw = params.get("agentId")
    if raw is not None and not isinstance(raw, str):
        raise invalid_request("agentId must be a string")
    gen = call.gateway.actors.supervisor.generation
    if raw is not None and not raw.strip():
        raise invalid_request("unknown agentId")
    try:
        spec = gen.agent(raw.strip().lower() if raw else None)
    except GenerationError as exc:
        raise invalid_request(f"unknown agent id {raw!r}") from exc
    return spec.id, spec.workspace


def _settings(call: Call, agent_id: str) -> MemorySettings:
    return memory_settings(call.gateway.actors.supervisor.generation.config, agent_id)


def _number(params: dict[str, Any], name: str) -> float | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise invalid_request("maxResults and minScore must be finite numbers when provided")
    return float(value)


async def memory_search(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    """`memory.search`: `{query, maxResults?, minScore?, agentId?}`."""
    query = params.get("query")
    if not isinstance(query, str) or not query.strip():
        raise invalid_request("query must be a non-empty string")
    max_results = _number(params, "maxResults")
    min_score = _number(params, "minScore")
    agent_id, configured = _agent(call, params)
    settings = _settings(call, agent_id)
    if not settings.enabled:
        raise GatewayError(UNAVAILABLE, "memory search is disabled (memory.search.enabled)")
    sup = call.gateway.actors.supervisor
    workspace = await sup.workspace_for(agent_id, configured)
    limit = min(_SEARCH_MAX, max(1, math.floor(max_results or _SEARCH_DEFAULT)))
    outcome = await sup.services.memory.search(
        agent_id, workspace, query.strip(), settings, max_results=limit, min_score=min_score
    )
    result: dict[str, Any] = {
        "agentId": agent_id,
        "provider": outcome.provider,
        "searchMode": outcome.mode,
        "results": [hit.to_json() for hit in outcome.hits],
    }
    if outcome.warning:
        result["warning"] = outcome.warning
    return result


def _dreaming() -> dict[str, Any]:
    """OpenClaw's dreaming status block, as it reads with dreaming off and no store."""
    cron = "0 3 * * *"
    return {
        "enabled": False,
        "verboseLogging": False,
        "storageMode": "separate",
        "separateReports": False,
        "shortTermCount": 0,
        "recallSignalCount": 0,
        "dailySignalCount": 0,
        "groundedSignalCount": 0,
        "totalSignalCount": 0,
        "phaseSignalCount": 0,
        "lightPhaseHitCount": 0,
        "remPhaseHitCount": 0,
        "promotedTotal": 0,
        "promotedToday": 0,
        "shortTermEntries": [],
        "signalEntries": [],
        "promotedEntries": [],
        "phases": {
            "light": {
                "enabled": False,
                "cron": cron,
                "lookbackDays": 2,
                "limit": 100,
                "managedCronPresent": False,
            },
            "deep": {
                "enabled": False,
                "cron": cron,
                "limit": 10,
                "minScore": 0.75,
                "minRecallCount": 3,
                "minUniqueQueries": 3,
                "recencyHalfLifeDays": 14,
                "maxAgeDays": 30,
                "managedCronPresent": False,
            },
            "rem": {
                "enabled": False,
                "cron": cron,
                "lookbackDays": 7,
                "limit": 10,
                "minPatternStrength": 0.75,
                "managedCronPresent": False,
            },
        },
    }


async def doctor_memory_status(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    """`doctor.memory.status`: `{agentId?, probe?, deep?}`."""
    agent_id, configured = _agent(call, params)
    settings = _settings(call, agent_id)
    if not settings.enabled:
        return {
            "agentId": agent_id,
            "embedding": {"ok": False, "error": "memory search disabled"},
        }
    sup = call.gateway.actors.supervisor
    workspace = await sup.workspace_for(agent_id, configured)
    status = await sup.services.memory.status(agent_id, workspace, settings)
    probe = params.get("probe") is True or params.get("deep") is True
    embedding = await sup.services.memory.embedding_status(settings, probe=probe)
    return {
        "agentId": agent_id,
        "provider": settings.provider,
        "embedding": embedding,
        "dreaming": _dreaming(),
        "index": {
            "backend": "builtin",
            "files": status.files,
            "chunks": status.chunks,
            "indexedBytes": status.indexed_bytes,
            "maxBytes": status.max_bytes,
            "dbBytes": status.db_bytes,
            "skippedFiles": status.skipped_files,
            "dbPath": status.db_path,
            **({"rebuilt": status.rebuilt} if status.rebuilt else {}),
        },
    }


def _read_diary(workspace: Path) -> dict[str, Any]:
    for name in ("DREAMS.md", "dreams.md"):
        path = workspace / name
        try:
            st = path.lstat()
            if not path.is_file() or path.is_symlink():
                continue
            content = path.read_text(errors="replace")
        except OSError:
            continue
        return {
            "found": True,
            "path": name,
            "content": content,
            "updatedAtMs": int(st.st_mtime * 1000),
        }
    return {"found": False, "path": "DREAMS.md"}


async def dream_diary(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    """`doctor.memory.dreamDiary`: the agent's `DREAMS.md`, if it has one."""
    agent_id, configured = _agent(call, params)
    workspace = await call.gateway.actors.supervisor.workspace_for(agent_id, configured)
    diary = await trio.to_thread.run_sync(_read_diary, workspace)
    return {"agentId": agent_id, **diary}


async def dreaming_off(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    """The dreaming methods that change state: there is none (see the module docstring)."""
    _agent(call, params)
    await trio.lowlevel.checkpoint()
    raise GatewayError(UNAVAILABLE, _DREAMING_OFF)


def register(methods: MethodTable) -> None:
    _memory_imports.register(methods)
    methods.add("memory.search", memory_search, None)
    methods.add("doctor.memory.status", doctor_memory_status, None)
    methods.add("doctor.memory.dreamDiary", dream_diary, None)
    for name in (
        "doctor.memory.backfillDreamDiary",
        "doctor.memory.resetDreamDiary",
        "doctor.memory.resetGroundedShortTerm",
        "doctor.memory.repairDreamingArtifacts",
        "doctor.memory.dedupeDreamDiary",
    ):
        methods.add(name, dreaming_off, None)
