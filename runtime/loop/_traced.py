"""The loop's spans (with `diagnostics.otel` on), children of the run's span:

- `openclaw.model.call`, one per provider request (each retry is one), in the GenAI
  semantic conventions: `gen_ai.operation.name` `chat`, `gen_ai.system` /
  `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens` /
  `output_tokens`, and `openclaw.model_call.time_to_first_byte_ms` (the first delta); the
  request carries the span's `traceparent` (`ModelRequest.traceparent`, an HTTP header);
  with the `tokens`, `model_call.duration_ms`, `gen_ai.client.token.usage` and
  `gen_ai.client.operation.duration` metrics.
- `openclaw.tool.execution`: `gen_ai.tool.name`, `gen_ai.tool.call.id`,
  `openclaw.outcome` (`ok` or `error`), `openclaw.tool.duration_ms`; the arguments and the
  result only with `captureContent`; with the `tool.execution.duration_ms` metric.

`_agent` calls here only when `runtime.telemetry.STATE.on`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec

from ..llm._types import (
    ModelDelta,
    ModelProvider,
    ModelRequest,
    ProviderError,
    ToolCallContent,
    UsageDelta,
)
from ..telemetry import STATE, Span, current, fail, record, start_span, traceparent_of

MODEL_SPAN = "openclaw.model.call"
TOOL_SPAN = "openclaw.tool.execution"
CONTENT_LIMIT = 16 * 1024
"""At most this much of a tool's arguments or result goes on its span (`captureContent`)."""


class TracedProvider:
    """`provider` with a span around each of its requests."""

    def __init__(self, provider: ModelProvider, provider_id: str) -> None:
        self.provider = provider
        self.provider_id = provider_id
        self.id = provider.id
        self.api = provider.api

    async def aclose(self) -> None:
        await self.provider.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        base = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider_id,
            "gen_ai.request.model": request.model,
        }
        span = start_span(
            MODEL_SPAN,
            {
                **base,
                "gen_ai.system": self.provider_id,
                "openclaw.provider": self.provider_id,
                "openclaw.model": request.model,
                "openclaw.api": self.provider.api,
                "openclaw.model_call.observation_unit": "request",
            },
            client=True,
        )
        request = msgspec.structs.replace(request, traceparent=traceparent_of(span))
        t0 = time.perf_counter()
        first: float | None = None
        usage_in = usage_out = 0
        error: str | None = None
        try:
            async with contextlib.aclosing(self.provider.stream(request)) as deltas:  # type: ignore[type-var]
                async for delta in deltas:
                    if first is None:
                        first = time.perf_counter()
                    if isinstance(delta, UsageDelta):
                        usage_in += delta.usage.input
                        usage_out += delta.usage.output
                    yield delta
        except ProviderError as exc:
            error = exc.kind
            fail(span, exc.kind, str(exc))
            raise
        except BaseException as exc:
            error = type(exc).__name__
            fail(span, error)
            raise
        finally:
            _end_model_span(span, base, t0, first, usage_in, usage_out, error)


def _end_model_span(
    span: Span,
    base: dict[str, Any],
    t0: float,
    first: float | None,
    usage_in: int,
    usage_out: int,
    error: str | None,
) -> None:
    elapsed = time.perf_counter() - t0
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage_in,
        "gen_ai.usage.output_tokens": usage_out,
        "openclaw.model_call.duration_ms": round(elapsed * 1000, 3),
    }
    if first is not None:
        attributes["openclaw.model_call.time_to_first_byte_ms"] = round((first - t0) * 1000, 3)
    span.set_attributes(attributes)
    span.end()
    errored = {**base, "error.type": error} if error else base
    record("gen_ai.client.operation.duration", elapsed, errored)
    owned = {"openclaw.provider": base["gen_ai.provider.name"], "openclaw.model": base["gen_ai.request.model"]}
    record("model_call.duration_ms", elapsed * 1000, owned)
    for kind, n in (("input", usage_in), ("output", usage_out)):
        if n:
            record("gen_ai.client.token.usage", n, {**base, "gen_ai.token.type": kind})
            record("tokens", n, {**owned, "openclaw.token": kind})


def _capped(value: Any) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return text[:CONTENT_LIMIT]


async def traced_tool_call(tools: Any, call: ToolCallContent, emit: Callable[..., None]) -> Any:
    """`tools.call(call, emit)` (a `ToolRunner`'s: its `ToolOutcome`) inside its span."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "openclaw.toolName": call.name,
    }
    if STATE.capture_content:
        attributes["gen_ai.tool.call.arguments"] = _capped(call.arguments)
    span = start_span(TOOL_SPAN, attributes)
    t0 = time.perf_counter()
    outcome_name = "error"
    try:
        with current(span):
            outcome = await tools.call(call, emit)
        outcome_name = "error" if outcome.message.isError else "ok"
        if STATE.capture_content:
            span.set_attribute("gen_ai.tool.call.result", _capped(outcome.result))
        return outcome
    finally:
        ms = (time.perf_counter() - t0) * 1000
        span.set_attributes({"openclaw.outcome": outcome_name, "openclaw.tool.duration_ms": ms})
        if outcome_name == "error":
            fail(span, "tool_error")
        span.end()
        record(
            "tool.execution.duration_ms",
            ms,
            {"gen_ai.tool.name": call.name, "openclaw.outcome": outcome_name},
        )
