"""Provider streams in each provider's real wire format, for the loopback server.

The shapes follow captures of the real APIs (field order, ids, the events a client must skip):
OpenAI Chat Completions ``chat.completion.chunk`` + ``[DONE]``; OpenAI Responses typed events
with ``sequence_number``; Anthropic Messages events with ``ping``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from runtime.llm._types import ModelDelta, ProviderError, TextDelta, ThinkingDelta

from ._sse_server import sse

# --- OpenAI Chat Completions -------------------------------------------------------------


def chat_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
) -> bytes:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion.chunk",
        "created": 1741569952,
        "model": "gpt-4o-2024-08-06",
        "service_tier": "default",
        "system_fingerprint": "fp_f9f4fb6dbf",
        "choices": [],
    }
    if usage is not None:
        chunk["usage"] = usage
    else:
        chunk["usage"] = None
        chunk["choices"] = [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
        ]
    return sse(chunk)


def chat_usage(prompt: int = 19, completion: int = 10, cached: int = 0) -> bytes:
    return chat_chunk(
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
    )


CHAT_DONE = b"data: [DONE]\n\n"


def chat_text(words: list[str], *, usage: bool = True) -> list[bytes]:
    chunks = [chat_chunk({"role": "assistant", "content": "", "refusal": None})]
    chunks += [chat_chunk({"content": w}) for w in words]
    chunks.append(chat_chunk({}, finish="stop"))
    if usage:
        chunks.append(chat_usage())
    chunks.append(CHAT_DONE)
    return chunks


def chat_tool_calls(calls: list[tuple[str, str, list[str]]]) -> list[bytes]:
    """Several tool calls, each ``(id, name, argument fragments)``, streamed by index."""
    chunks = [chat_chunk({"role": "assistant", "content": None, "refusal": None})]
    for index, (call_id, name, fragments) in enumerate(calls):
        chunks.append(
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for fragment in fragments:
            chunks.append(
                chat_chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            )
    chunks.append(chat_chunk({}, finish="tool_calls"))
    chunks.append(chat_usage())
    chunks.append(CHAT_DONE)
    return chunks


# --- OpenAI Responses --------------------------------------------------------------------


class ResponsesStream:
    """Builds a Responses event stream with running sequence numbers."""

    def __init__(self) -> None:
        self.seq = 0
        self.chunks: list[bytes] = []
        self.output: list[dict[str, Any]] = []

    def event(self, type: str, **fields: Any) -> ResponsesStream:
        self.chunks.append(sse({"type": type, "sequence_number": self.seq, **fields}, event=type))
        self.seq += 1
        return self

    def _response(self, status: str, **extra: Any) -> dict[str, Any]:
        return {
            "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
            "object": "response",
            "created_at": 1741476542,
            "status": status,
            "model": "gpt-5-2025-08-07",
            "output": self.output if status != "in_progress" else [],
            "parallel_tool_calls": True,
            "store": False,
            "usage": None,
            **extra,
        }

    def created(self) -> ResponsesStream:
        self.event("response.created", response=self._response("in_progress"))
        return self.event("response.in_progress", response=self._response("in_progress"))

    def reasoning(self, index: int, parts: list[list[str]]) -> ResponsesStream:
        item_id = f"rs_{index:04d}"
        self.event(
            "response.output_item.added",
            output_index=index,
            item={"id": item_id, "type": "reasoning", "summary": []},
        )
        for summary_index, deltas in enumerate(parts):
            part = {"type": "summary_text", "text": ""}
            self.event(
                "response.reasoning_summary_part.added",
                item_id=item_id,
                output_index=index,
                summary_index=summary_index,
                part=part,
            )
            for d in deltas:
                self.event(
                    "response.reasoning_summary_text.delta",
                    item_id=item_id,
                    output_index=index,
                    summary_index=summary_index,
                    delta=d,
                    obfuscation="x1",
                )
            self.event(
                "response.reasoning_summary_text.done",
                item_id=item_id,
                output_index=index,
                summary_index=summary_index,
                text="".join(deltas),
            )
            self.event(
                "response.reasoning_summary_part.done",
                item_id=item_id,
                output_index=index,
                summary_index=summary_index,
                part={"type": "summary_text", "text": "".join(deltas)},
            )
        item = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "".join(p)} for p in parts],
        }
        self.output.append(item)
        return self.event("response.output_item.done", output_index=index, item=item)

    def message(self, index: int, deltas: list[str]) -> ResponsesStream:
        item_id = f"msg_{index:04d}"
        self.event(
            "response.output_item.added",
            output_index=index,
            item={
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            },
        )
        self.event(
            "response.content_part.added",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
        )
        for d in deltas:
            self.event(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=d,
                logprobs=[],
                obfuscation="k9",
            )
        text = "".join(deltas)
        self.event(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        self.event(
            "response.content_part.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part=part,
        )
        item = {
            "id": item_id,
            "type": "message",
            "status": "completed",
            "content": [part],
            "role": "assistant",
        }
        self.output.append(item)
        return self.event("response.output_item.done", output_index=index, item=item)

    def function_call(
        self, index: int, call_id: str, name: str, fragments: list[str]
    ) -> ResponsesStream:
        item_id = f"fc_{index:04d}"
        self.event(
            "response.output_item.added",
            output_index=index,
            item={
                "id": item_id,
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": call_id,
                "name": name,
            },
        )
        for d in fragments:
            self.event(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=d,
                obfuscation="zz",
            )
        arguments = "".join(fragments)
        self.event(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=arguments,
        )
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "completed",
            "arguments": arguments,
            "call_id": call_id,
            "name": name,
        }
        self.output.append(item)
        return self.event("response.output_item.done", output_index=index, item=item)

    def completed(
        self, *, input_tokens: int = 36, output_tokens: int = 87, cached: int = 4
    ) -> ResponsesStream:
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        }
        return self.event("response.completed", response=self._response("completed", usage=usage))

    def incomplete(self, reason: str = "max_output_tokens") -> ResponsesStream:
        return self.event(
            "response.incomplete",
            response=self._response("incomplete", incomplete_details={"reason": reason}),
        )

    def failed(self, code: str, message: str) -> ResponsesStream:
        return self.event(
            "response.failed",
            response=self._response("failed", error={"code": code, "message": message}),
        )


# --- Anthropic Messages ------------------------------------------------------------------


class AnthropicStream:
    """Builds an Anthropic Messages event stream."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.index = 0

    def event(self, type: str, **fields: Any) -> AnthropicStream:
        self.chunks.append(sse({"type": type, **fields}, event=type))
        return self

    def start(
        self, *, input_tokens: int = 472, cache_read: int = 0, cache_write: int = 0
    ) -> AnthropicStream:
        return self.event(
            "message_start",
            message={
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-5-20250929",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 2,
                    "service_tier": "standard",
                },
            },
        )

    def ping(self) -> AnthropicStream:
        return self.event("ping")

    def text(self, deltas: list[str]) -> AnthropicStream:
        i = self.index
        self.index += 1
        self.event("content_block_start", index=i, content_block={"type": "text", "text": ""})
        for d in deltas:
            self.event("content_block_delta", index=i, delta={"type": "text_delta", "text": d})
        return self.event("content_block_stop", index=i)

    def thinking(self, deltas: list[str]) -> AnthropicStream:
        i = self.index
        self.index += 1
        self.event(
            "content_block_start",
            index=i,
            content_block={"type": "thinking", "thinking": "", "signature": ""},
        )
        for d in deltas:
            self.event(
                "content_block_delta", index=i, delta={"type": "thinking_delta", "thinking": d}
            )
        self.event(
            "content_block_delta",
            index=i,
            delta={
                "type": "signature_delta",
                "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk",
            },
        )
        return self.event("content_block_stop", index=i)

    def tool_use(self, tool_id: str, name: str, fragments: list[str]) -> AnthropicStream:
        i = self.index
        self.index += 1
        self.event(
            "content_block_start",
            index=i,
            content_block={"type": "tool_use", "id": tool_id, "name": name, "input": {}},
        )
        self.event(
            "content_block_delta", index=i, delta={"type": "input_json_delta", "partial_json": ""}
        )
        for d in fragments:
            self.event(
                "content_block_delta",
                index=i,
                delta={"type": "input_json_delta", "partial_json": d},
            )
        return self.event("content_block_stop", index=i)

    def stop(self, reason: str = "end_turn", *, output_tokens: int = 89) -> AnthropicStream:
        self.event(
            "message_delta",
            delta={"stop_reason": reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        )
        return self.event("message_stop")

    def error(self, type: str, message: str) -> AnthropicStream:
        self.chunks.append(
            sse({"type": "error", "error": {"type": type, "message": message}}, event="error")
        )
        return self


# --- driving a provider ------------------------------------------------------------------


async def aclose(deltas: AsyncIterator[ModelDelta]) -> None:
    """Close a provider stream (an async generator typed as an iterator)."""
    close = getattr(deltas, "aclose", None)
    if close is not None:
        await close()


async def collect(deltas: AsyncIterator[ModelDelta]) -> list[ModelDelta]:
    """Every delta of a stream, closing it at the end."""
    out: list[ModelDelta] = []
    try:
        async for delta in deltas:
            out.append(delta)
    finally:
        await aclose(deltas)
    return out


async def collect_error(
    deltas: AsyncIterator[ModelDelta],
) -> tuple[list[ModelDelta], ProviderError]:
    """The deltas before the stream failed, and its `ProviderError` (which must come)."""
    out: list[ModelDelta] = []
    try:
        async for delta in deltas:
            out.append(delta)
    except ProviderError as exc:
        return out, exc
    finally:
        await aclose(deltas)
    raise AssertionError(f"the stream ended without an error after {out!r}")


def text_of(deltas: list[ModelDelta]) -> str:
    return "".join(d.text for d in deltas if isinstance(d, TextDelta))


def thinking_of(deltas: list[ModelDelta]) -> str:
    return "".join(d.text for d in deltas if isinstance(d, ThinkingDelta))
