"""What the Publisher reports (`_publisher`): a write refused (`PublishConflict`), a build
not published (`PublishFailure`), what a config write did (`PublishResult`), its counters
(`PublisherStatistics`)."""

from __future__ import annotations

from typing import Any

import attrs

from runtime.model import ConfigSnapshot, ModelRuntimeGeneration

from ._errors import ActorError

__all__ = ["PublishConflict", "PublishFailure", "PublishResult", "PublisherStatistics"]


class PublishConflict(ActorError):
    """A config write's `baseHash` is missing or no longer the file's hash."""


@attrs.frozen
class PublishFailure:
    """A build that was not published."""

    reason: str
    message: str
    path: str | None
    at_ms: int
    serving: int

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "reason": self.reason,
            "message": self.message,
            "at": self.at_ms,
            "serving": self.serving,
        }
        if self.path:
            data["path"] = self.path
        return data


@attrs.frozen
class PublishResult:
    """What a config write did: the serving generation (new or unchanged) and the file."""

    generation: ModelRuntimeGeneration
    changed: bool
    snapshot: ConfigSnapshot


@attrs.frozen
class PublisherStatistics:
    generation: int
    published: int
    failed: int
    unchanged: int
    last_reason: str | None
    last_latency_ms: float | None
    last_error: PublishFailure | None
    watching: tuple[str, ...]
    retired_providers: int
