"""`memory.*` from the config, as the memory tools' settings (OpenClaw's defaults for what is
unset). Pure; read once per config generation and agent."""

from __future__ import annotations

from ..memory import (
    LOCAL_BASE_URL,
    LOCAL_MODEL,
    LOCAL_TIMEOUT_S,
    EmbeddingSettings,
    MemorySettings,
)
from ..model._config_types import Config

__all__ = ["DEFAULT_EMBEDDING_MODEL", "memory_settings"]

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
_KEYWORD_ONLY = ("none", "")


def _embedding(config: Config) -> EmbeddingSettings | None:
    """The embeddings endpoint `memory.search.provider` names: `remote.baseUrl`, else the
    `models.providers.<provider>` entry's `baseUrl` and `apiKey`; `local`: the model on this
    machine (`runtime.memory`'s local provider); None for `none` or when no endpoint is
    configured (keywords only, as OpenClaw's `auto` falls back)."""
    search = config.memory.search
    provider = (search.provider or "auto").strip().lower()
    if provider in _KEYWORD_ONLY:
        return None
    if provider == "local":  # the model on this machine (the local-embeddings extra)
        return EmbeddingSettings(
            base_url=LOCAL_BASE_URL, model=search.model or LOCAL_MODEL, timeout_s=LOCAL_TIMEOUT_S
        )
    remote = search.remote
    entry = config.models.providers.get(search.provider or "")
    base_url = remote.baseUrl or (entry.baseUrl if entry else None)
    if not base_url:
        return None
    api_key = remote.apiKey if remote.baseUrl else (entry.apiKey if entry else None)
    headers = remote.headers if remote.baseUrl else ((entry.headers or {}) if entry else {})
    return EmbeddingSettings(
        base_url=base_url,
        model=search.model or DEFAULT_EMBEDDING_MODEL,
        api_key=api_key,
        headers=tuple(headers.items()),
    )


def memory_settings(config: Config, agent_id: str) -> MemorySettings:
    """The agent's memory settings (`memory.search` holds for every agent)."""
    del agent_id  # no per-agent `memory` key yet: the global one holds for all
    search = config.memory.search
    embedding = _embedding(config)
    defaults = MemorySettings()
    return MemorySettings(
        enabled=search.enabled is not False,
        provider=(search.provider or "auto") if embedding else "none",
        embedding=embedding,
        max_results=search.query.maxResults or defaults.max_results,
        min_score=defaults.min_score if search.query.minScore is None else search.query.minScore,
        citations=config.memory.citations or "auto",
        max_index_bytes=search.maxIndexBytes or defaults.max_index_bytes,
        cache=search.cache.enabled is not False,
    )
