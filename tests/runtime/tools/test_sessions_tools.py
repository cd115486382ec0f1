"""The session tools' parameters are decoded as OpenClaw 2026.9.6 validates them."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from runtime.tools._sessions_tools import (
    AgentsListParams,
    AgentsWaitParams,
    SessionsHistoryParams,
    SessionsListParams,
    SessionsSendParams,
    SessionsSpawnParams,
    SessionStatusParams,
    SessionsYieldParams,
    SubagentsParams,
)

_CALLS: list[tuple[type[Any], dict[str, Any]]] = [
    (SessionsListParams, {"limit": 5, "projectId": "p"}),
    (SessionsHistoryParams, {"sessionKey": "main", "sessionId": "s"}),
    (SessionsSendParams, {"message": "hi", "thread": True}),
    (SessionsSpawnParams, {"task": "t", "placement": {"kind": "local"}}),
    (SessionsYieldParams, {"waitFor": "message", "extra": 1}),
    (SubagentsParams, {"action": "list", "verbose": True}),
    (AgentsListParams, {"anything": None}),
    (AgentsWaitParams, {"ids": ["r"], "mode": "any"}),
    (SessionStatusParams, {"sessionKey": "current", "format": "card"}),
]


@pytest.mark.parametrize(("params", "call"), _CALLS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_field_openclaw_would_ignore_is_ignored(params: type[Any], call: dict[str, Any]) -> None:
    msgspec.convert(call, params)


def test_openclaws_own_checks_still_refuse() -> None:
    with pytest.raises(msgspec.ValidationError, match="message"):
        msgspec.convert({"sessionKey": "main"}, SessionsSendParams)
    with pytest.raises(msgspec.ValidationError, match=r"taskIds\[0\]"):
        msgspec.convert({"action": "wait", "taskIds": [""]}, SubagentsParams)
    with pytest.raises(msgspec.ValidationError, match="waitFor"):
        msgspec.convert({"waitFor": "reply"}, SessionsYieldParams)
