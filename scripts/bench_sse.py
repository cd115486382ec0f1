#!/usr/bin/env python3
"""Deltas per second through each LLM transport, as a ratio to plain httpx ``aiter_lines``.

A loopback HTTP/1.1 server runs in a child process (so its work does not share this
process's CPU) and replays, for each api, one recorded-shape stream of N text deltas, each
event in its own HTTP chunk. For each api the same bytes are read two or three ways:

- baseline: ``httpx.AsyncClient.stream`` + ``aiter_lines()`` (lines only: no SSE, no JSON);
- transport: ``provider.stream(request)``, every event parsed into typed deltas;
- +retry: the same through ``stream_with_retry(idle_timeout=120)`` (watchdog included).

Printed figures are medians over rounds run in alternation, as ratios to the baseline of
the same run (>1 means faster than merely splitting the bytes into lines). Absolute rates
are shown for reference only.

    .venv/bin/python scripts/bench_sse.py [--deltas 20000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import httpx
import msgspec
import trio

from runtime.llm import (
    ModelProvider,
    ModelRequest,
    TextDelta,
    UserMessage,
    create_provider,
    stream_with_retry,
)

APIS = {
    "openai-completions": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic-messages": "/v1/messages",
}
_json = msgspec.json.Encoder()


# --- payloads (the providers' wire shapes) ------------------------------------------------


def _event(data: object, event: str | None = None) -> bytes:
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + _json.encode(data) + b"\n\n"


def _words(n: int) -> list[str]:
    vocab = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
    return [vocab[i % len(vocab)] for i in range(n)]


def completions_events(n: int) -> list[bytes]:
    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        return _event(
            {
                "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
                "object": "chat.completion.chunk",
                "created": 1741569952,
                "model": "gpt-4o-2024-08-06",
                "service_tier": "default",
                "system_fingerprint": "fp_f9f4fb6dbf",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
                "usage": None,
            }
        )

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": w}) for w in _words(n)]
    events.append(chunk({}, "stop"))
    events.append(
        _event(
            {
                "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": n + 10},
            }
        )
    )
    events.append(b"data: [DONE]\n\n")
    return events


def responses_events(n: int) -> list[bytes]:
    seq = iter(range(1 << 30))

    def ev(type: str, **fields: object) -> bytes:
        return _event({"type": type, "sequence_number": next(seq), **fields}, type)

    response = {
        "id": "resp_1",
        "object": "response",
        "status": "in_progress",
        "model": "gpt-5",
        "output": [],
    }
    events = [
        ev("response.created", response=response),
        ev("response.in_progress", response=response),
    ]
    events.append(
        ev(
            "response.output_item.added",
            output_index=0,
            item={
                "id": "msg_1",
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            },
        )
    )
    events += [
        ev(
            "response.output_text.delta",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            delta=w,
            logprobs=[],
            obfuscation="k9Xz",
        )
        for w in _words(n)
    ]
    done = {
        **response,
        "status": "completed",
        "usage": {"input_tokens": 10, "output_tokens": n, "total_tokens": n + 10},
    }
    events.append(ev("response.completed", response=done))
    return events


def anthropic_events(n: int) -> list[bytes]:
    events = [
        _event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-sonnet-4-5-20250929",
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        _event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        _event({"type": "ping"}, "ping"),
    ]
    events += [
        _event(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}},
            "content_block_delta",
        )
        for w in _words(n)
    ]
    events.append(_event({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    events.append(
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": n},
            },
            "message_delta",
        )
    )
    events.append(_event({"type": "message_stop"}, "message_stop"))
    return events


def http_response(events: list[bytes]) -> bytes:
    """A chunked HTTP/1.1 200 with one chunk per event."""
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
        b"transfer-encoding: chunked\r\n\r\n"
    )
    body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
    return head + body + b"0\r\n\r\n"


# --- the server (child process) -----------------------------------------------------------


async def serve(n: int) -> None:
    payloads = {
        APIS["openai-completions"]: http_response(completions_events(n)),
        APIS["openai-responses"]: http_response(responses_events(n)),
        APIS["anthropic-messages"]: http_response(anthropic_events(n)),
    }

    async def handle(stream: trio.SocketStream) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                path = lines[0].split(b" ")[1].decode()
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buf) < length:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buf += data
                buf = buf[length:]
                await stream.send_all(payloads[path])
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    print(listeners[0].socket.getsockname()[1], flush=True)
    await trio.serve_listeners(handle, listeners)


# --- the client ---------------------------------------------------------------------------


async def timed(fn: Callable[[], Awaitable[int]], n: int) -> float:
    start = time.perf_counter()
    count = await fn()
    elapsed = time.perf_counter() - start
    if count < n:
        raise RuntimeError(f"expected {n} items, got {count}")
    return n / elapsed


async def run(port: int, n: int, rounds: int) -> None:
    base = f"http://127.0.0.1:{port}"
    request = ModelRequest(
        model="bench", system_prompt="", messages=[UserMessage("go", timestamp=0)]
    )
    client = httpx.AsyncClient(timeout=30)
    providers: dict[str, ModelProvider] = {
        api: create_provider(
            "bench",
            api,
            base_url=base if api == "anthropic-messages" else f"{base}/v1",
            api_key="k",
        )
        for api in APIS
    }

    def baseline(api: str) -> Callable[[], Awaitable[int]]:
        async def go() -> int:
            lines = 0
            async with client.stream("POST", base + APIS[api], content=b"{}") as response:
                async for _ in response.aiter_lines():
                    lines += 1
            return n if lines > n else 0

        return go

    def transport(api: str, *, retry: bool) -> Callable[[], Awaitable[int]]:
        async def go() -> int:
            provider = providers[api]
            deltas = (
                stream_with_retry(provider, request, idle_timeout=120)
                if retry
                else provider.stream(request)
            )
            count = 0
            async for delta in deltas:
                if isinstance(delta, TextDelta):
                    count += 1
            return count

        return go

    print(
        f"{n} text deltas per stream, {rounds} rounds, median deltas/s; ratio to httpx aiter_lines"
    )
    print(
        f"{'api':<20} {'aiter_lines':>12} {'transport':>12} {'ratio':>7} {'+retry':>12} {'ratio':>7}"
    )
    try:
        for api in APIS:
            for fn in (baseline(api), transport(api, retry=False), transport(api, retry=True)):
                await timed(fn, n)  # warm-up: connection, caches
            rates: dict[str, list[float]] = {"base": [], "plain": [], "retry": []}
            for _ in range(rounds):
                rates["base"].append(await timed(baseline(api), n))
                rates["plain"].append(await timed(transport(api, retry=False), n))
                rates["retry"].append(await timed(transport(api, retry=True), n))
            base_rate = statistics.median(rates["base"])
            plain = statistics.median(rates["plain"])
            retry = statistics.median(rates["retry"])
            print(
                f"{api:<20} {base_rate:>12,.0f} {plain:>12,.0f} {plain / base_rate:>7.2f}"
                f" {retry:>12,.0f} {retry / base_rate:>7.2f}"
            )
    finally:
        await client.aclose()
        for provider in providers.values():
            await provider.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        trio.run(serve, args.deltas)
        return
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--deltas", str(args.deltas)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        trio.run(run, port, args.deltas, args.rounds)
    finally:
        child.terminate()
        child.wait(timeout=10)


if __name__ == "__main__":
    main()
