"""The config's `memory` key: OpenClaw's `memory.*` and `memory.search.*` (the builtin engine's
keys), strict like the rest. What clawlane acts on: `memory.search.enabled`, `provider`
(`none`, `auto`, `openai`, `openai-compatible`: an OpenAI-compatible `/embeddings` endpoint;
`local`: a model on this machine, the `local-embeddings` extra), `model`, `remote.{baseUrl, apiKey, headers}`, `query.{maxResults, minScore}`,
`memory.citations`, and clawlane's own `memory.search.maxIndexBytes` (the index's bound).
The other keys are OpenClaw's and accepted so that its config files load; they change
nothing here (`sources: ["sessions"]`, `extraPaths`, multimodal, dreaming: off)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = ["MemoryConfig", "MemorySearchConfig"]


class _Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    pass


class MemorySearchQueryConfig(_Strict, frozen=True):
    maxResults: Annotated[int, msgspec.Meta(ge=1)] | None = None
    minScore: Annotated[float, msgspec.Meta(ge=0)] | None = None


class MemorySearchRemoteConfig(_Strict, frozen=True):
    baseUrl: str | None = None
    apiKey: str | None = None
    headers: dict[str, str] = {}


class MemoryExtraPath(_Strict, frozen=True):
    path: str
    pattern: str | None = None


class MemoryFtsConfig(_Strict, frozen=True):
    tokenizer: Literal["unicode61", "trigram"] | None = None


class MemoryVectorStoreConfig(_Strict, frozen=True):
    enabled: bool | None = None
    extensionPath: str | None = None


class MemoryStoreConfig(_Strict, frozen=True):
    fts: MemoryFtsConfig = MemoryFtsConfig()
    vector: MemoryVectorStoreConfig = MemoryVectorStoreConfig()


class MemoryCacheConfig(_Strict, frozen=True):
    enabled: bool | None = None


class MemoryExperimentalConfig(_Strict, frozen=True):
    sessionMemory: bool | None = None


class MemorySearchConfig(_Strict, frozen=True):
    enabled: bool | None = None
    provider: str | None = None
    model: str | None = None
    fallback: str | None = None
    remote: MemorySearchRemoteConfig = MemorySearchRemoteConfig()
    query: MemorySearchQueryConfig = MemorySearchQueryConfig()
    extraPaths: list[str | MemoryExtraPath] = []
    sources: list[Literal["memory", "sessions"]] = []
    rememberAcrossConversations: bool | None = None
    experimental: MemoryExperimentalConfig = MemoryExperimentalConfig()
    store: MemoryStoreConfig = MemoryStoreConfig()
    cache: MemoryCacheConfig = MemoryCacheConfig()
    queryInputType: str | None = None
    documentInputType: str | None = None
    maxIndexBytes: Annotated[int, msgspec.Meta(ge=1024)] | None = None
    """clawlane: the most text (bytes of files) one agent's index holds (64 MiB unset)."""


class MemoryConfig(_Strict, frozen=True):
    search: MemorySearchConfig = MemorySearchConfig()
    citations: Literal["auto", "on", "off"] | None = None
