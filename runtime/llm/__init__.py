"""Model providers: one small interface (stream a turn as typed deltas) and its transports.

- `ModelProvider`, `ModelRequest`, the deltas and the pi-ai message shapes (`._types`).
- `create_provider` for `openai-completions`, `openai-responses`, `anthropic-messages`, and
  the embedded `local` model (`LocalProvider`).
- `stream_with_retry`: bounded backoff for retryable errors before any output, and the LLM
  idle watchdog.

Configuring a provider (`models.providers.<id>`; a run names `<provider id>/<model id>`, the
model id being everything after the first `/`):

- `api`: `openai-completions` (the default: OpenAI, Ollama, vLLM, llama.cpp, ...),
  `openai-responses`, `anthropic-messages` or `local`; `baseUrl` (required but for `local`);
  `apiKey` (write `"${OPENAI_API_KEY}"`: read when the config loads, a missing variable is a
  config error); `headers` (sent on every request); `timeoutSeconds` (the HTTP read timeout,
  300 s); `models[]` (`id`, `name`, `contextWindow`, `maxTokens`, `reasoning`, `input`);
  `options` for `local` (`deltaDelayMs`; `failKind`, e.g. `"overloaded"`, makes it always fail
  that way, to show model fallback). Its directives are listed in `_local`.
- Credentials: a provider whose `baseUrl` is on loopback needs none; a remote one without a
  key (or an auth profile) is unavailable unless it says `"auth": "none"`.
- Request params per model, `agents.defaults.models["<provider>/<model>"].params`:
  `temperature`, `maxTokens` (sent as `max_completion_tokens` to api.openai.com, `max_tokens`
  to compatible servers and Anthropic, `max_output_tokens` to Responses), `topP`, `topK`
  (Anthropic), `stop`, `seed`, `presencePenalty`, `frequencyPenalty`, `parallelToolCalls`,
  and `extraBody` (merged into the request body as is, for server-specific fields).
- Timeouts: `agents.defaults.llm.idleTimeoutSeconds` closes a stream that produced nothing
  for that long (lifecycle `error` "LLM idle timeout: no chunk for Ns"; `0` disables it;
  unset, it is `agents.defaults.timeoutSeconds` when that is set, else 60 s). The run timeout
  and aborts close the HTTP stream at once (the run ends `aborted`).
- Retries: rate limits (after `Retry-After`, up to 60 s), overloads, timeouts, network and 5xx
  errors, at most 3 attempts with backoff, and only before the model produced any output;
  model fallback (`runtime.agent`) takes over after that. A tool call works with every
  transport: the model's call becomes a `tool` event, its result goes back in the next
  request in that provider's format.
- Known servers: OpenAI, `baseUrl` `https://api.openai.com/v1` (`openai-responses`, or
  `openai-completions` on the same URL); Anthropic, `https://api.anthropic.com`; Ollama,
  `http://127.0.0.1:11434/v1` (`openai-completions`, no key on loopback; a model must support
  tools for tool calls; slow starts want `timeoutSeconds: 600` and a longer idle timeout);
  vLLM, `http://127.0.0.1:8000/v1` (`vllm serve MODEL --enable-auto-tool-choice
  --tool-call-parser hermes`; `apiKey` only when it runs with `--api-key`).

Examples (each a whole config file; `tests/e2e/test_providers_e2e.py` loads every one):

**OpenAI** (Responses API; for Chat Completions write `"api": "openai-completions"`, same
`baseUrl`):

```json
{
  "agents": {"defaults": {
    "model": {"primary": "openai/gpt-4.1"},
    "models": {"openai/gpt-4.1": {"params": {"temperature": 0.2, "maxTokens": 4096}}},
    "llm": {"idleTimeoutSeconds": 120}
  }},
  "models": {"providers": {"openai": {
    "api": "openai-responses",
    "baseUrl": "https://api.openai.com/v1",
    "apiKey": "${OPENAI_API_KEY}",
    "models": [{"id": "gpt-4.1", "contextWindow": 1047576, "maxTokens": 32768},
               {"id": "gpt-4.1-mini", "contextWindow": 1047576, "maxTokens": 32768}]
  }}}
}
```

**Anthropic**:

```json
{
  "agents": {"defaults": {
    "model": {"primary": "anthropic/claude-sonnet-4-5"},
    "models": {"anthropic/claude-sonnet-4-5": {"params": {"maxTokens": 8192, "temperature": 0.3}}},
    "llm": {"idleTimeoutSeconds": 120}
  }},
  "models": {"providers": {"anthropic": {
    "api": "anthropic-messages",
    "baseUrl": "https://api.anthropic.com",
    "apiKey": "${ANTHROPIC_API_KEY}",
    "models": [{"id": "claude-sonnet-4-5", "contextWindow": 200000, "maxTokens": 64000}]
  }}}
}
```

**Ollama** (its OpenAI-compatible endpoint; no key on loopback; a model must support tools
for tool calls; local models can be slow to start, hence the longer timeouts):

```json
{
  "agents": {"defaults": {
    "model": {"primary": "ollama/llama3.1:8b"},
    "models": {"ollama/llama3.1:8b": {"params": {"temperature": 0.7, "maxTokens": 2048}}},
    "llm": {"idleTimeoutSeconds": 300}
  }},
  "models": {"providers": {"ollama": {
    "api": "openai-completions",
    "baseUrl": "http://127.0.0.1:11434/v1",
    "timeoutSeconds": 600,
    "models": [{"id": "llama3.1:8b", "contextWindow": 131072}]
  }}}
}
```

**vLLM** (`vllm serve Qwen/Qwen2.5-7B-Instruct --api-key ... --enable-auto-tool-choice
--tool-call-parser hermes`; drop `apiKey` when the server runs without `--api-key`). The
model id is everything after the first `/`:

```json
{
  "agents": {"defaults": {
    "model": {"primary": "vllm/Qwen/Qwen2.5-7B-Instruct"},
    "models": {"vllm/Qwen/Qwen2.5-7B-Instruct": {
      "params": {"temperature": 0.6, "maxTokens": 4096, "extraBody": {"top_k": 20}}
    }},
    "llm": {"idleTimeoutSeconds": 0}
  }},
  "models": {"providers": {"vllm": {
    "api": "openai-completions",
    "baseUrl": "http://127.0.0.1:8000/v1",
    "apiKey": "${VLLM_API_KEY}",
    "models": [{"id": "Qwen/Qwen2.5-7B-Instruct", "contextWindow": 32768}]
  }}}
}
```

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
from ._types import InputProvenance as InputProvenance
from ._types import Message as Message
from ._types import ModelDelta as ModelDelta
from ._types import ModelProvider as ModelProvider
from ._types import ModelRequest as ModelRequest
from ._types import ProviderError as ProviderError
from ._types import TextContent as TextContent
from ._types import TextDelta as TextDelta
from ._types import ToolCallContent as ToolCallContent
from ._types import ToolResultMessage as ToolResultMessage
from ._types import ToolSpec as ToolSpec
from ._types import Usage as Usage
from ._types import UsageCost as UsageCost
from ._types import UserMessage as UserMessage

__all__ = [
    "SUPPORTED_APIS",
    "AssistantMessage",
    "IdleTimeoutError",
    "InputProvenance",
    "LocalProvider",
    "Message",
    "ModelDelta",
    "ModelProvider",
    "ModelRequest",
    "Pacer",
    "ProviderError",
    "TextContent",
    "TextDelta",
    "ToolCallContent",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UsageCost",
    "UserMessage",
    "create_provider",
    "estimate_message_tokens",
    "normalize_model_id",
    "resolve_idle_timeout",
    "stream_with_retry",
]
