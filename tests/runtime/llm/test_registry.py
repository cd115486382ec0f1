"""`create_provider`: one transport per api, pooled connections, closing."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import pytest
import trio

from runtime.llm._anthropic import AnthropicProvider
from runtime.llm._http import HttpProvider
from runtime.llm._openai_completions import OpenAICompletionsProvider
from runtime.llm._openai_responses import OpenAIResponsesProvider
from runtime.llm._registry import create_provider, normalize_model_id
from runtime.llm._types import ModelProvider, ModelRequest, UserMessage

from ._sse_server import Script, SSEServer
from ._streams import chat_text, collect

MakeProvider = Callable[[str], ModelProvider]
REQUEST = ModelRequest(model="m", system_prompt="", messages=[UserMessage("hi", timestamp=1)])


@pytest.mark.parametrize(
    ("api", "cls", "url"),
    [
        (
            "openai-completions",
            OpenAICompletionsProvider,
            "https://api.openai.com/v1/chat/completions",
        ),
        ("openai-responses", OpenAIResponsesProvider, "https://api.openai.com/v1/responses"),
        ("anthropic-messages", AnthropicProvider, "https://api.anthropic.com/v1/messages"),
    ],
)
async def test_each_api_gets_its_transport_and_default_endpoint(
    api: str, cls: type, url: str
) -> None:
    provider = create_provider("p1", api, base_url=None, api_key="k")
    assert isinstance(provider, cls) and isinstance(provider, HttpProvider)
    assert (provider.id, provider.api, provider.url) == ("p1", api, url)
    with trio.fail_after(5):
        await provider.aclose()


def test_base_urls_are_joined_without_doubling() -> None:
    anthropic = create_provider(
        "a", "anthropic-messages", base_url="https://proxy.example/v1/", api_key=None
    )
    openai = create_provider(
        "o", "openai-completions", base_url="http://127.0.0.1:11434/v1/", api_key=None
    )
    assert isinstance(anthropic, AnthropicProvider) and isinstance(
        openai, OpenAICompletionsProvider
    )
    assert anthropic.url == "https://proxy.example/v1/messages"
    assert openai.url == "http://127.0.0.1:11434/v1/chat/completions"


def test_an_unknown_api_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="google-generative-ai"):
        create_provider("g", "google-generative-ai", base_url=None, api_key=None)


async def test_local_is_built_lazily_from_its_module() -> None:
    local = importlib.import_module("runtime.llm._local")  # an import error fails the test
    provider = create_provider("local", "local", base_url=None, api_key=None)
    assert isinstance(provider, local.LocalProvider)
    with trio.fail_after(5):
        await provider.aclose()


async def test_turns_share_one_pooled_connection(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    provider = make_provider("openai-completions")
    with trio.fail_after(5):
        server.push(Script(chunks=chat_text(["one"])), Script(chunks=chat_text(["two"])))
        await collect(provider.stream(REQUEST))
        await collect(provider.stream(REQUEST))
    assert len(server.requests) == 2
    assert server.connections == 1


async def test_extra_headers_are_sent_and_override(server: SSEServer) -> None:
    provider = create_provider(
        "h",
        "openai-completions",
        base_url=server.url,
        api_key="k",
        headers={"x-team": "core", "authorization": "Bearer override"},
    )
    with trio.fail_after(5):
        server.push(Script(chunks=chat_text(["ok"])))
        await collect(provider.stream(REQUEST))
        await provider.aclose()
    headers = server.requests[0].headers
    assert (headers["x-team"], headers["authorization"]) == ("core", "Bearer override")
    assert headers["accept"] == "text/event-stream"


async def test_no_api_key_sends_no_credential(server: SSEServer) -> None:
    provider = create_provider("local-llm", "openai-responses", base_url=server.url, api_key=None)
    with trio.fail_after(5):
        server.push(
            Script(
                chunks=[
                    b'data: {"type":"response.completed","response":{"status":"completed"}}\n\n'
                ]
            )
        )
        await collect(provider.stream(REQUEST))
        await provider.aclose()
    assert "authorization" not in server.requests[0].headers


async def test_a_closed_provider_refuses_new_turns() -> None:
    provider = create_provider(
        "c", "anthropic-messages", base_url="http://127.0.0.1:9", api_key=None
    )
    with trio.fail_after(5):
        await provider.aclose()
        await provider.aclose()  # idempotent
        with pytest.raises(trio.ClosedResourceError):
            await collect(provider.stream(REQUEST))


def test_normalize_model_id_per_api() -> None:
    assert normalize_model_id("anthropic-messages", "opus-4.6") == "claude-opus-4-6"
    assert (
        normalize_model_id("openai-completions", " openai/gpt-oss-120b ") == "openai/gpt-oss-120b"
    )
    assert normalize_model_id("local", "anything") == "anything"
