"""A deterministic OpenAI-compatible `/embeddings` server on a loopback port (trio + h11), for
the vector side of memory search: each text's vector is built from hashes of its words and
their character trigrams (so texts sharing words or word stems are close), the same on every
run. It counts the texts it embedded, and can fail (HTTP 500), stall (never answer) or be
slow with batches."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import attrs
import h11
import trio

DIMS = 256
_WORD = re.compile(r"\w+")


def hash_vector(text: str, dims: int = DIMS) -> list[float]:
    """Words weigh 1, their character trigrams 0.5, each at a hashed place with a hashed sign."""
    vector = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        padded = f"#{word}#"
        features = [(word, 1.0)] + [(padded[i : i + 3], 0.5) for i in range(len(padded) - 2)]
        for feature, weight in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            place = int.from_bytes(digest[:4], "little") % dims
            vector[place] += weight if digest[4] & 1 else -weight
    return vector


@attrs.define
class EmbeddingsServer:
    port: int = 0
    mode: Literal["ok", "fail", "stall"] = "ok"
    texts: list[str] = attrs.field(factory=list)
    """Every text embedded, in order."""
    requests: list[dict[str, Any]] = attrs.field(factory=list)
    batch_delay: float = 0.0
    """Seconds a request of more than one text waits before its answer (a slow backfill)."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _serve(self, stream: trio.SocketStream) -> None:
        try:
            await self._exchange(stream)
        except (trio.BrokenResourceError, h11.RemoteProtocolError):
            pass

    async def _exchange(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                conn.receive_data(data)
                continue
            if not isinstance(event, h11.Request):
                return
            body = b""
            while True:
                nxt = conn.next_event()
                if nxt is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                elif isinstance(nxt, h11.Data):
                    body += nxt.data
                elif isinstance(nxt, h11.EndOfMessage):
                    break
            headers = {k.decode().lower(): v.decode() for k, v in event.headers}
            request = json.loads(body)
            self.requests.append({"path": event.target.decode(), "headers": headers, **request})
            status, answer = self._answer(event.target.decode(), request)
            if self.mode == "stall":
                await trio.sleep_forever()
            if self.batch_delay and len(request["input"]) > 1:
                await trio.sleep(self.batch_delay)
            payload = json.dumps(answer).encode()
            response_headers = [
                ("content-type", "application/json"),
                ("content-length", str(len(payload))),
            ]
            await stream.send_all(
                conn.send(h11.Response(status_code=status, headers=response_headers))
            )
            await stream.send_all(conn.send(h11.Data(data=payload)))
            await stream.send_all(conn.send(h11.EndOfMessage()))
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    def _answer(self, path: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.mode == "fail":
            return 500, {"error": {"message": "embeddings are down", "type": "server_error"}}
        if path != "/v1/embeddings":
            return 404, {"error": {"message": f"no route {path}"}}
        inputs = request["input"]
        inputs = [inputs] if isinstance(inputs, str) else inputs
        self.texts.extend(inputs)
        data = [
            {"object": "embedding", "index": i, "embedding": hash_vector(text)}
            for i, text in enumerate(inputs)
        ]
        return 200, {"object": "list", "data": data, "model": request["model"]}


@asynccontextmanager
async def embeddings_server(**kw: Any) -> AsyncIterator[EmbeddingsServer]:
    server = EmbeddingsServer(**kw)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, server._serve, 0, host="127.0.0.1")
        )
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()
