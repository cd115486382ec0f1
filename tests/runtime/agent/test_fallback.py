"""Model fallback: which failures move a turn to the next candidate, what the attempts record
says, and fallback end to end against a real loopback provider."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from runtime.agent._embedded import open_embedded_runtime
from runtime.agent._fallback import (
    FALLBACK_ERROR_KINDS,
    FallbackAttempts,
    FallbackExhaustedError,
    FallbackProvider,
    stream_turn_with_fallback,
)
from runtime.llm._types import (
    ModelDelta,
    ModelRequest,
    ProviderError,
    TextDelta,
    UserMessage,
)
from runtime.model._config import parse_config
from runtime.model._generation import ResolvedModel, build_generation
from tests.runtime.llm._sse_server import json_error, open_sse_server


class Scripted:
    """An in-memory provider double: fails with `error` after `after` deltas, or streams."""

    api = "openai-completions"

    def __init__(
        self,
        pid: str,
        words: Sequence[str] = ("hello",),
        *,
        error: str | None = None,
        after: int = 0,
    ) -> None:
        self.id = pid
        self.words = list(words)
        self.error = error
        self.after = after
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        self.requests.append(request)
        return self._stream()

    async def _stream(self) -> AsyncIterator[ModelDelta]:
        for i, word in enumerate(self.words):
            await trio.lowlevel.checkpoint()
            if self.error is not None and i == self.after:
                raise ProviderError(self.error, f"{self.id} failed: {self.error}")  # type: ignore[arg-type]
            yield TextDelta(word)
        if self.error is not None and self.after >= len(self.words):
            raise ProviderError(self.error, f"{self.id} failed: {self.error}")  # type: ignore[arg-type]

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


def candidates(*providers: Scripted) -> list[ResolvedModel]:
    gen = build_generation(parse_config({}), 1)
    base = gen.resolve("local/echo")
    return [
        ResolvedModel(p.id, f"{p.id}-model", base.api, base.definition, {"temperature": i / 10}, p)
        for i, p in enumerate(providers)
    ]


REQUEST = ModelRequest(model="x", system_prompt="s", messages=[UserMessage("hi", 0)])


def retarget(model: ResolvedModel) -> ModelRequest:
    return msgspec.structs.replace(REQUEST, model=model.model_id, params=dict(model.params))


async def drain(
    models: list[ResolvedModel], attempts: FallbackAttempts | None = None
) -> tuple[list[tuple[str, str]], FallbackAttempts]:
    stream = stream_turn_with_fallback(models, retarget, attempts=attempts)
    out: list[tuple[str, str]] = []
    async with contextlib.aclosing(stream):
        async for model, delta in stream:
            assert isinstance(delta, TextDelta)
            out.append((model.provider_id, delta.text))
    return out, stream.attempts


@pytest.mark.parametrize("kind", sorted(FALLBACK_ERROR_KINDS))
async def test_a_fallback_error_before_output_moves_to_the_next_candidate(kind: str) -> None:
    primary, backup = Scripted("primary", error=kind), Scripted("backup", ["ok", "!"])
    with trio.fail_after(5):
        out, attempts = await drain(candidates(primary, backup))
    assert out == [("backup", "ok"), ("backup", "!")]
    assert [(a.provider, a.outcome, a.error_kind) for a in attempts.items] == [
        ("primary", "error", kind),
        ("backup", "ok", None),
    ]
    assert attempts.fell_back and attempts.selected is not None
    assert attempts.selected.provider_id == "backup"
    # Each candidate got its own model id and params.
    assert backup.requests[0].model == "backup-model" and backup.requests[0].params == {
        "temperature": 0.1
    }
    meta = attempts.to_meta()
    assert meta[0]["errorKind"] == kind and meta[1]["outcome"] == "ok"
    assert msgspec.json.decode(msgspec.json.encode(meta)) == meta


@pytest.mark.parametrize(
    "kind", ["server", "network", "context_overflow", "bad_request", "malformed"]
)
async def test_other_errors_do_not_fall_back(kind: str) -> None:
    backup = Scripted("backup")
    with trio.fail_after(5), pytest.raises(ProviderError) as info:
        await drain(candidates(Scripted("primary", error=kind), backup))
    assert info.value.kind == kind and not backup.requests


async def test_an_error_after_output_does_not_fall_back() -> None:
    backup = Scripted("backup")
    seen: list[tuple[str, str]] = []
    stream = stream_turn_with_fallback(
        candidates(Scripted("primary", ["a", "b"], error="rate_limit", after=1), backup), retarget
    )
    with trio.fail_after(5), pytest.raises(ProviderError) as info:
        async with contextlib.aclosing(stream):
            async for model, delta in stream:
                assert isinstance(delta, TextDelta)
                seen.append((model.provider_id, delta.text))
    assert info.value.kind == "rate_limit" and seen == [("primary", "a")] and not backup.requests
    assert stream.attempts.items[-1].outcome == "error"


async def test_when_every_candidate_fails_over_the_error_lists_them() -> None:
    models = candidates(Scripted("a", error="auth"), Scripted("b", error="overloaded"))
    with trio.fail_after(5), pytest.raises(FallbackExhaustedError) as info:
        await drain(models)
    assert info.value.kind == "overloaded"
    assert "a/a-model: auth" in info.value.message and "b/b-model: overloaded" in info.value.message
    assert [a.outcome for a in info.value.attempts.items] == ["error", "error"]


async def test_a_single_candidate_raises_its_own_error() -> None:
    with trio.fail_after(5), pytest.raises(ProviderError) as info:
        await drain(candidates(Scripted("only", error="timeout")))
    assert not isinstance(info.value, FallbackExhaustedError) and info.value.kind == "timeout"


async def test_no_candidates_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="at least one candidate"):
        stream_turn_with_fallback([], retarget)


async def test_closing_early_closes_the_candidate_stream() -> None:
    closed = trio.Event()

    class Endless(Scripted):
        async def _stream(self) -> AsyncIterator[ModelDelta]:
            try:
                while True:
                    await trio.lowlevel.checkpoint()
                    yield TextDelta("x")
            finally:
                closed.set()

    stream = stream_turn_with_fallback(candidates(Endless("e")), retarget)
    with trio.fail_after(5):
        async with contextlib.aclosing(stream):
            async for _model, _delta in stream:
                break
        await closed.wait()


async def test_the_provider_adapter_sticks_to_the_candidate_that_served() -> None:
    primary, backup = Scripted("primary", error="rate_limit"), Scripted("backup", ["ok"])
    provider = FallbackProvider(candidates(primary, backup))
    with trio.fail_after(5):
        for _turn in range(2):
            async with contextlib.aclosing(provider.stream(REQUEST)) as deltas:  # type: ignore[type-var]
                assert [d async for d in deltas] == [TextDelta("ok")]
    # Turn 2 went straight to the backup: the primary was asked once.
    assert len(primary.requests) == 1 and len(backup.requests) == 2
    assert [(a.turn, a.provider, a.outcome) for a in provider.attempts.items] == [
        (1, "primary", "error"),
        (1, "backup", "ok"),
        (2, "backup", "ok"),
    ]


async def test_fallback_end_to_end_from_a_real_provider_to_the_local_model(tmp_path: Path) -> None:
    """The primary is a real OpenAI-compatible endpoint on loopback answering 401, then 429:
    the run's answer comes from the fallback and its meta records both attempts."""
    with trio.fail_after(10):
        async with open_sse_server() as server:
            raw: dict[str, Any] = {
                "models": {
                    "providers": {
                        "remote": {
                            "api": "openai-completions",
                            "baseUrl": f"{server.url}/v1",
                            "models": [{"id": "big"}],
                        },
                        "local": {"api": "local", "models": [{"id": "echo"}]},
                    }
                },
                "agents": {
                    "defaults": {"model": {"primary": "remote/big", "fallbacks": ["local/echo"]}}
                },
            }
            server.push(
                json_error(401, {"error": {"message": "bad key", "type": "invalid_api_key"}})
            )
            server.push(json_error(429, {"error": {"message": "slow down"}}))
            async with open_embedded_runtime(
                workspace_root=tmp_path, config=parse_config(raw), retry_attempts=1
            ) as runtime:
                first = await runtime.run_turn("hi", session_key="fb")
                second = await runtime.run_turn("again", session_key="fb")
            assert len(server.requests) == 2
    for result, kind in ((first, "auth"), (second, "rate_limit")):
        assert result.status == "ok" and result.text.startswith("You said:")
        attempts = result.meta["attempts"]
        assert [(a["provider"], a["outcome"]) for a in attempts] == [
            ("remote", "error"),
            ("local", "ok"),
        ]
        assert attempts[0]["errorKind"] == kind
        assert result.meta["agentMeta"]["provider"] == "local"
