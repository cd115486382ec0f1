"""Model providers: one small interface (stream a turn as typed deltas) and its transports.

- `ModelProvider`, `ModelRequest`, the deltas and the pi-ai message shapes (`._types`).
- `create_provider` for `openai-completions`, `openai-responses`, `anthropic-messages`, and
  the embedded `local` model (`LocalProvider`).
- `stream_with_retry`: bounded backoff for retryable errors before any output, and the LLM
  idle watchdog.

Errors: `ProviderError` with `kind` (auth, rate_limit, overloaded, context_overflow, timeout,
network, malformed, bad_request, server, unknown) and `retryable`; `IdleTimeoutError` (a
`ProviderError` of kind `timeout`).
"""

from ._local import LocalProvider as LocalProvider
from ._pacer import Pacer as Pacer
from ._registry import SUPPORTED_APIS as SUPPORTED_APIS
from ._registry import create_provider as create_provider
from ._registry import normalize_model_id as normalize_model_id
from ._retry import IdleTimeoutError as IdleTimeoutError
from ._retry import resolve_idle_timeout as resolve_idle_timeout
from ._retry import stream_with_retry as stream_with_retry
from ._tokens import estimate_message_tokens as estimate_message_tokens
from ._types import AssistantMessage as AssistantMessage
from ._types import Message as Message
from ._types import ModelDelta as ModelDelta
from ._types import ModelProvider as ModelProvider
from ._types import ModelRequest as ModelRequest
from ._types import ProviderError as ProviderError
from ._types import TextContent as TextContent
from ._types import TextDelta as TextDelta
from ._types import ToolResultMessage as ToolResultMessage
from ._types import ToolSpec as ToolSpec
from ._types import Usage as Usage
from ._types import UserMessage as UserMessage

__all__ = [
    "SUPPORTED_APIS",
    "AssistantMessage",
    "IdleTimeoutError",
    "LocalProvider",
    "Message",
    "ModelDelta",
    "ModelProvider",
    "ModelRequest",
    "Pacer",
    "ProviderError",
    "TextContent",
    "TextDelta",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "create_provider",
    "estimate_message_tokens",
    "normalize_model_id",
    "resolve_idle_timeout",
    "stream_with_retry",
]
