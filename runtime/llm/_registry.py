"""Provider construction: one `ModelProvider` per ``models.providers.<id>`` entry.

`create_provider` picks the transport from the entry's ``api``. Constructing a provider does
no I/O; its pooled HTTP client opens on the first turn and is closed by ``aclose()``, which
the owner of the generation calls when the generation retires.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import _anthropic, _openai_completions
from ._anthropic import AnthropicProvider
from ._openai_completions import OpenAICompletionsProvider
from ._openai_responses import OpenAIResponsesProvider
from ._types import ModelProvider

__all__ = ["SUPPORTED_APIS", "create_provider", "normalize_model_id"]

SUPPORTED_APIS: tuple[str, ...] = (
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "local",
)


def create_provider(
    provider_id: str,
    api: str,
    *,
    base_url: str | None,
    api_key: str | None,
    headers: Mapping[str, str] | None = None,
    timeout_seconds: float | None = None,
) -> ModelProvider:
    """The provider for one configured entry.

    Args:
        provider_id: the entry's key (``models.providers.<id>``).
        api: ``openai-completions``, ``openai-responses``, ``anthropic-messages`` or ``local``.
        base_url: the entry's ``baseUrl``; ``None`` means the vendor's public endpoint.
        api_key: sent as a Bearer token (OpenAI) or ``x-api-key`` (Anthropic); ``None`` sends
            no credential (local servers).
        headers: extra headers on every request; they override the defaults.
        timeout_seconds: the entry's ``timeoutSeconds``: the HTTP read timeout.

    Raises:
        ValueError: ``api`` is not one of the above (the message names it).
    """
    if api == "openai-completions":
        return OpenAICompletionsProvider(
            provider_id,
            base_url=base_url,
            api_key=api_key,
            headers=headers,
            timeout_seconds=timeout_seconds,
        )
    if api == "openai-responses":
        return OpenAIResponsesProvider(
            provider_id,
            base_url=base_url,
            api_key=api_key,
            headers=headers,
            timeout_seconds=timeout_seconds,
        )
    if api == "anthropic-messages":
        return AnthropicProvider(
            provider_id,
            base_url=base_url,
            api_key=api_key,
            headers=headers,
            timeout_seconds=timeout_seconds,
        )
    if api == "local":
        from ._local import LocalProvider  # lazily: most gateways never use it

        return LocalProvider(provider_id)
    raise ValueError(
        f"provider {provider_id!r}: unknown api {api!r} (expected one of {', '.join(SUPPORTED_APIS)})"
    )


def normalize_model_id(api: str, model: str) -> str:
    """A configured model id as the provider's API expects it (aliases resolved).

    Anthropic maps OpenClaw's short aliases (``opus-4.5`` → ``claude-opus-4-5``); OpenAI and
    compatible servers take ids as written. The transports apply this to every request, so
    calling it beforehand is harmless (it is idempotent).
    """
    if api == "anthropic-messages":
        return _anthropic.normalize_model_id(model)
    if api in ("openai-completions", "openai-responses"):
        return _openai_completions.normalize_model_id(model)
    return model
