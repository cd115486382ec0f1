"""Fixtures of the provider transport tests: the loopback server and providers aimed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from runtime.llm._registry import create_provider
from runtime.llm._types import ModelProvider

from ._sse_server import SSEServer, open_sse_server


@pytest.fixture
async def server() -> AsyncIterator[SSEServer]:
    async with open_sse_server() as s:
        yield s


@pytest.fixture
async def make_provider(server: SSEServer) -> AsyncIterator[Callable[[str], ModelProvider]]:
    """``make_provider(api)``: a provider of that api aimed at the loopback server."""
    made: list[ModelProvider] = []

    def make(api: str) -> ModelProvider:
        base = (
            server.url
            if api != "openai-completions" and api != "openai-responses"
            else f"{server.url}/v1"
        )
        provider = create_provider(
            "test", api, base_url=base, api_key="sk-test", timeout_seconds=10
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()
