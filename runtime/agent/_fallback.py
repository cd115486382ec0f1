"""Model fallback: the primary model, then each fallback, for one model turn.

`stream_turn_with_fallback(candidates, request_for)` streams one turn from the first
candidate that gets going. A candidate is abandoned for the next one only when its provider
fails with an `auth`, `rate_limit`, `overloaded` or `timeout` `ProviderError` *before any
delta of that attempt was yielded*; any other error, and any error after output, is raised
as is (a retry would repeat output the consumer already has). Every attempt is recorded in
the stream's `attempts` (`FallbackAttempts`), for the run meta (`attempts.to_meta()`).

Typical use in an attempt loop::

    attempts = FallbackAttempts()
    stream = stream_turn_with_fallback(candidates, request_for, attempts=attempts)
    async with contextlib.aclosing(stream):
        async for model, delta in stream:
            ...
    meta["attempts"] = attempts.to_meta()

Pass the same `attempts` to every turn of a run; `attempts.remaining(candidates)` starts a
later turn at the candidate that served the previous one. `open_stream` wraps each
candidate's stream (e.g. `stream_with_retry` with the idle watchdog); by default it is
`model.provider.stream(request)`.

`FallbackProvider` packages the same behaviour as a `ModelProvider`, so an unchanged
`run_agent` gets fallback by being handed one.

When every candidate failed over, `FallbackExhaustedError` (a `ProviderError` with the last
failure's kind) is raised; with a single candidate its own error is raised unchanged.
Cancellation closes the current candidate's stream and propagates; it is not an attempt.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any, Final, Literal

import attrs
import msgspec
import trio

from ..llm._types import ModelDelta, ModelRequest, ProviderError
from ..logs._oplog import log_event
from ..model._generation import ResolvedModel

__all__ = [
    "FALLBACK_ERROR_KINDS",
    "FallbackAttempt",
    "FallbackAttempts",
    "FallbackExhaustedError",
    "FallbackProvider",
    "FallbackStream",
    "OpenStream",
    "request_for_candidate",
    "stream_turn_with_fallback",
]

FALLBACK_ERROR_KINDS: Final = frozenset({"auth", "rate_limit", "overloaded", "timeout"})
"""Provider failures that move a turn on to the next candidate (before any output)."""

OpenStream = Callable[[ResolvedModel, ModelRequest], AsyncIterator[ModelDelta]]
log = logging.getLogger("clawlane.providers")


@attrs.frozen
class FallbackAttempt:
    """One candidate tried for one turn."""

    provider: str
    model: str
    outcome: Literal["ok", "error"]
    turn: int = 1
    error_kind: str | None = None
    error: str | None = None
    duration_ms: int = 0

    def to_meta(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "outcome": self.outcome,
            "turn": self.turn,
            "durationMs": self.duration_ms,
        }
        if self.error_kind is not None:
            data["errorKind"] = self.error_kind
        if self.error is not None:
            data["error"] = self.error
        return data


@attrs.define
class FallbackAttempts:
    """The attempts of a run (or a turn), in order; `selected` is the candidate that served
    the last turn that got going."""

    items: list[FallbackAttempt] = attrs.field(factory=list)
    selected: ResolvedModel | None = None
    turns: int = 0

    @property
    def fell_back(self) -> bool:
        return any(a.outcome == "error" for a in self.items)

    def remaining(self, candidates: Sequence[ResolvedModel]) -> list[ResolvedModel]:
        """`candidates` from the one that served the previous turn (all of them if none)."""
        if self.selected is None:
            return list(candidates)
        for i, c in enumerate(candidates):
            if c.provider_id == self.selected.provider_id and c.model_id == self.selected.model_id:
                return list(candidates[i:])
        return list(candidates)

    def to_meta(self) -> list[dict[str, Any]]:
        return [a.to_meta() for a in self.items]


class FallbackExhaustedError(ProviderError):
    """Every candidate failed with a fallback error before any output."""

    def __init__(self, attempts: FallbackAttempts, last: ProviderError) -> None:
        tried = "; ".join(
            f"{a.provider}/{a.model}: {a.error_kind}: {a.error}"
            for a in attempts.items
            if a.outcome == "error"
        )
        super().__init__(
            last.kind,
            f"all models failed ({len(attempts.items)}): {tried}",
            status=last.status,
            retry_after=last.retry_after,
        )
        self.attempts = attempts
        self.last = last


def _default_open(model: ResolvedModel, request: ModelRequest) -> AsyncIterator[ModelDelta]:
    return model.provider.stream(request)


class FallbackStream:
    """An async iterator of `(model, delta)` with the `attempts` record; iterate it inside
    `contextlib.aclosing` (closing it closes the candidate's stream)."""

    def __init__(
        self,
        candidates: Sequence[ResolvedModel],
        request_for: Callable[[ResolvedModel], ModelRequest],
        *,
        attempts: FallbackAttempts | None,
        open_stream: OpenStream,
        fallback_kinds: frozenset[str],
    ) -> None:
        if not candidates:
            raise ValueError("stream_turn_with_fallback needs at least one candidate")
        self.candidates = list(candidates)
        self.attempts = attempts if attempts is not None else FallbackAttempts()
        self._gen = self._run(request_for, open_stream, fallback_kinds)

    def __aiter__(self) -> FallbackStream:
        return self

    async def __anext__(self) -> tuple[ResolvedModel, ModelDelta]:
        return await self._gen.__anext__()

    async def aclose(self) -> None:
        await self._gen.aclose()

    async def _run(
        self,
        request_for: Callable[[ResolvedModel], ModelRequest],
        open_stream: OpenStream,
        fallback_kinds: frozenset[str],
    ) -> AsyncGenerator[tuple[ResolvedModel, ModelDelta]]:
        attempts = self.attempts
        attempts.turns += 1
        turn = attempts.turns
        for index, model in enumerate(self.candidates):
            started = time.monotonic()
            yielded = False
            stream = open_stream(model, request_for(model))
            try:
                try:
                    async for delta in stream:
                        if not yielded:
                            yielded = True
                            attempts.selected = model
                        yield model, delta
                finally:
                    aclose = getattr(stream, "aclose", None)
                    if aclose is not None:
                        await aclose()
            except ProviderError as exc:
                attempts.items.append(
                    FallbackAttempt(
                        model.provider_id,
                        model.model_id,
                        "error",
                        turn,
                        exc.kind,
                        exc.message,
                        int((time.monotonic() - started) * 1000),
                    )
                )
                last = index == len(self.candidates) - 1
                if yielded or exc.kind not in fallback_kinds:
                    raise
                if last:
                    if len(self.candidates) == 1:
                        raise
                    log_event(
                        log,
                        logging.WARNING,
                        "model fallback exhausted",
                        tried=len(self.candidates),
                        kind=exc.kind,
                        error=exc.message,
                    )
                    raise FallbackExhaustedError(attempts, exc) from exc
                following = self.candidates[index + 1]
                log_event(
                    log,
                    logging.WARNING,
                    "model fallback",
                    failed=f"{model.provider_id}/{model.model_id}",
                    next=f"{following.provider_id}/{following.model_id}",
                    kind=exc.kind,
                    error=exc.message,
                )
                continue
            attempts.selected = model
            attempts.items.append(
                FallbackAttempt(
                    model.provider_id,
                    model.model_id,
                    "ok",
                    turn,
                    duration_ms=int((time.monotonic() - started) * 1000),
                )
            )
            return


def stream_turn_with_fallback(
    candidates: Sequence[ResolvedModel],
    request_for: Callable[[ResolvedModel], ModelRequest],
    *,
    attempts: FallbackAttempts | None = None,
    open_stream: OpenStream | None = None,
    fallback_kinds: frozenset[str] = FALLBACK_ERROR_KINDS,
) -> FallbackStream:
    """Stream one model turn from the first candidate that gets going.

    Args:
        candidates: the primary first, then the fallbacks, resolved in the run's generation.
        request_for: the request for a candidate (its own model id and params).
        attempts: a run-wide record to append to (a fresh one when None).
        open_stream: how to stream one candidate (default `model.provider.stream`).
        fallback_kinds: `ProviderError.kind`s that move on to the next candidate.

    Returns a `FallbackStream`: an `AsyncIterator[tuple[ResolvedModel, ModelDelta]]` with an
    `attempts` attribute. Each `__anext__` is a checkpoint (the candidate's own).

    Raises (while iterating): the candidate's `ProviderError` when it is not a fallback kind
    or some output was already yielded; `FallbackExhaustedError` when all candidates failed
    over; `ValueError` (at once) for no candidates.
    """
    return FallbackStream(
        candidates,
        request_for,
        attempts=attempts,
        open_stream=open_stream or _default_open,
        fallback_kinds=fallback_kinds,
    )


def request_for_candidate(request: ModelRequest, model: ResolvedModel) -> ModelRequest:
    """`request` retargeted at `model`: its model id and its configured params."""
    return msgspec.structs.replace(request, model=model.model_id, params=dict(model.params))


class FallbackProvider:
    """A `ModelProvider` that streams each turn with fallback over `candidates`.

    Later turns of the same run start at the candidate that served the previous one
    (`attempts.remaining`). Request params are the serving candidate's.
    """

    def __init__(
        self,
        candidates: Sequence[ResolvedModel],
        *,
        attempts: FallbackAttempts | None = None,
        open_stream: OpenStream | None = None,
        fallback_kinds: frozenset[str] = FALLBACK_ERROR_KINDS,
    ) -> None:
        if not candidates:
            raise ValueError("FallbackProvider needs at least one candidate")
        self.candidates = list(candidates)
        self.attempts = attempts if attempts is not None else FallbackAttempts()
        self.id = candidates[0].provider_id
        self.api = candidates[0].api
        self._open = open_stream
        self._kinds = fallback_kinds

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        stream = stream_turn_with_fallback(
            self.attempts.remaining(self.candidates),
            lambda m: request_for_candidate(request, m),
            attempts=self.attempts,
            open_stream=self._open,
            fallback_kinds=self._kinds,
        )
        try:
            async for _model, delta in stream:
                yield delta
        finally:
            await stream.aclose()

    async def aclose(self) -> None:
        """Nothing to release: the candidates' transports belong to their generation."""
        await trio.lowlevel.checkpoint()
