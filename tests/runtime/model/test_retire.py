"""Closing provider transports: `runtime.model._retire` over real generations built with a
counting provider factory."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

from runtime.llm._types import ModelDelta, ModelProvider, ModelRequest
from runtime.model._config import Config, ProviderConfig, parse_config
from runtime.model._generation import GenerationBuilder
from runtime.model._retire import close_all_providers, close_providers, generation_providers


class CountingProvider:
    api = "openai-completions"

    def __init__(self, provider_id: str, *, fail: bool = False) -> None:
        self.id = provider_id
        self.closes = 0
        self.fail = fail

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        raise AssertionError("retirement tests never stream")

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()
        self.closes += 1
        if self.fail:
            raise RuntimeError("close failed")


def factory(provider_id: str, config: ProviderConfig) -> ModelProvider:
    return CountingProvider(provider_id)


def config(headers: dict[str, str] | None = None, *, agents: int = 1) -> Config:
    provider: dict[str, Any] = {
        "api": "openai-completions",
        "baseUrl": "http://127.0.0.1:9/v1",
        "models": [{"id": "m"}],
    }
    if headers:
        provider["headers"] = headers
    raw: dict[str, Any] = {
        "agents": {"defaults": {"model": {"primary": "p/m"}}},
        "models": {"providers": {"p": provider, "q": {**provider, "apiKey": "k"}}},
    }
    if agents > 1:
        raw["agents"]["list"] = [{"id": f"a{i}"} for i in range(agents)]
    return parse_config(raw, env={})


def counting(provider: ModelProvider) -> CountingProvider:
    assert isinstance(provider, CountingProvider)
    return provider


def test_generation_providers_lists_each_transport_once() -> None:
    builder = GenerationBuilder(provider_factory=factory)
    gen1 = builder.build_config(config(agents=3), 1)
    gen2 = builder.build_config(config(agents=3), 2)
    providers = generation_providers(gen1, gen2)
    # Three agents with equal settings share the pooled transports of `p` and `q`, and so do
    # two generations built from the same config.
    assert sorted(p.id for p in providers) == ["p", "q"]
    assert {id(p) for p in providers} == {id(p) for p in gen2.providers.values()}


async def test_close_providers_closes_each_once_and_survives_a_failing_close(
    caplog: pytest.LogCaptureFixture,
) -> None:
    a, b, bad = CountingProvider("a"), CountingProvider("b"), CountingProvider("bad", fail=True)
    with caplog.at_level(logging.ERROR, logger="clawlane.retire"):
        closed = await close_providers([a, bad, b, a, b])
    assert closed == 2
    assert (a.closes, b.closes, bad.closes) == (1, 1, 1)
    assert "closing provider 'bad' failed" in caplog.text


async def test_close_all_providers_closes_the_serving_and_the_retired_transports() -> None:
    builder = GenerationBuilder(provider_factory=factory)
    gen1 = builder.build_config(config(), 1)
    old = counting(gen1.providers["p"])
    old_q = counting(gen1.providers["q"])
    gen2 = builder.build_config(config({"x-gen": "2"}), 2)
    serving = counting(gen2.providers["p"])
    serving_q = counting(gen2.providers["q"])
    assert serving is not old and serving_q is not old_q  # new settings, new transports
    del gen1
    gc.collect()
    closed = await close_all_providers(builder, gen2)
    assert closed == 4
    assert [p.closes for p in (old, old_q, serving, serving_q)] == [1, 1, 1, 1]
    assert len(builder.pool) == 2  # the retired ones are forgotten; the serving ones stay


async def test_close_all_providers_without_a_builder() -> None:
    gen = GenerationBuilder(provider_factory=factory).build_config(config(agents=2), 1)
    assert await close_all_providers(None, gen) == 2
    assert all(counting(p).closes == 1 for p in gen.providers.values())


async def test_a_transport_shared_with_a_live_generation_is_not_retired() -> None:
    builder = GenerationBuilder(provider_factory=factory)
    gen1 = builder.build_config(config(), 1)
    shared = counting(gen1.providers["p"])
    gen2 = builder.build_config(config(), 2)
    assert gen2.providers["p"] is shared  # equal settings: one pooled transport
    del gen1
    gc.collect()
    assert builder.collect_retired(keep=[gen2]) == []
    assert shared.closes == 0
