"""What a plugin's `requireApproval` becomes before anyone is asked: OpenClaw's bounds on the
timeout, the decisions offered, the request checked as `plugin.approval.request` params, and
the tool errors the model sees."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from runtime.loop import APPROVAL_DECISIONS, ApprovalOutcome, allowed_decisions
from runtime.loop._approval import (
    DEFAULT_APPROVAL_TIMEOUT_MS,
    MAX_APPROVAL_TIMEOUT_MS,
    approval_params,
    approval_timeout_ms,
    notify_resolution,
    refusal,
    resolution_of,
)
from tests.conftest import frame_checker


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, DEFAULT_APPROVAL_TIMEOUT_MS),
        (0, DEFAULT_APPROVAL_TIMEOUT_MS),
        (-5, DEFAULT_APPROVAL_TIMEOUT_MS),
        ("300", DEFAULT_APPROVAL_TIMEOUT_MS),
        (True, DEFAULT_APPROVAL_TIMEOUT_MS),
        (float("nan"), DEFAULT_APPROVAL_TIMEOUT_MS),
        (float("inf"), DEFAULT_APPROVAL_TIMEOUT_MS),
        (0.5, 1),
        (1500.9, 1500),
        (10**9, MAX_APPROVAL_TIMEOUT_MS),
    ],
)
def test_the_timeout_is_bounded_as_openclaw_bounds_it(given: Any, expected: int) -> None:
    assert approval_timeout_ms(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, APPROVAL_DECISIONS),
        ([], APPROVAL_DECISIONS),
        (["maybe"], APPROVAL_DECISIONS),
        (["allow-once"], ("allow-once", "deny")),
        (["deny", "allow-once", "deny"], ("deny", "allow-once")),
        (["allow-always", "bogus", "allow-once"], ("allow-always", "allow-once", "deny")),
    ],
)
def test_deny_is_always_offered(given: Any, expected: tuple[str, ...]) -> None:
    assert allowed_decisions(given) == expected


def _params(**approval: Any) -> Any:
    base = {"title": "Deploy", "description": "Deploy to prod", "pluginId": "guard"}
    return approval_params(
        {**base, **approval},
        tool_name="exec",
        tool_call_id="call-1",
        agent_id="main",
        session_key="agent:main:main",
    )


def test_a_hooks_request_becomes_valid_plugin_approval_request_params() -> None:
    scope = {"kind": "external-post", "target": "github", "visibility": "public"}
    params = _params(severity="critical", scope=scope, timeoutMs=5, allowedDecisions=["allow-once"])
    wire = msgspec.to_builtins(params)
    frame_checker().validate("PluginApprovalRequestParams", wire)
    assert wire == {
        "title": "Deploy",
        "description": "Deploy to prod",
        "pluginId": "guard",
        "severity": "critical",
        "scope": scope,
        "toolName": "exec",
        "toolCallId": "call-1",
        "allowedDecisions": ["allow-once", "deny"],
        "agentId": "main",
        "sessionKey": "agent:main:main",
        "timeoutMs": 5,
    }


def test_a_scope_that_does_not_fit_is_left_out() -> None:
    params = _params(scope={"kind": "payment", "amount": "1" * 41, "currency": "EUR"})
    assert params.scope is None and params.title == "Deploy"


@pytest.mark.parametrize(
    "bad", [{"title": "x" * 81}, {"description": ""}, {"severity": "loud"}, {"title": None}]
)
def test_a_request_the_gateway_would_refuse_raises(bad: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        _params(**bad)


def test_an_empty_plugin_id_is_none() -> None:
    assert _params(pluginId="").pluginId is None


def test_what_the_model_sees_of_each_refusal() -> None:
    assert "denied by the operator" in refusal(ApprovalOutcome("deny", "user"), {})
    assert "no connection holds operator.approvals" in refusal(
        ApprovalOutcome(None, "no-route"), {}
    )
    assert "expired without a decision" in refusal(ApprovalOutcome(None, "timeout"), {})
    assert refusal(ApprovalOutcome(None, "timeout"), {"timeoutReason": "Ask later."}) == (
        "Ask later."
    )


@pytest.mark.parametrize(
    ("outcome", "told"),
    [
        (ApprovalOutcome("allow-once", "user"), "allow-once"),
        (ApprovalOutcome("allow-always", "user"), "allow-always"),
        (ApprovalOutcome("deny", "user"), "deny"),
        (ApprovalOutcome(None, "timeout"), "timeout"),
        (ApprovalOutcome(None, "no-route"), "cancelled"),
        (ApprovalOutcome(None, "run-aborted"), "cancelled"),
    ],
)
def test_the_plugin_is_told_how_its_approval_ended(outcome: ApprovalOutcome, told: str) -> None:
    assert resolution_of(outcome) == told
    assert outcome.allowed == (told in ("allow-once", "allow-always"))


async def test_on_resolution_may_be_sync_async_or_broken() -> None:
    seen: list[str] = []

    async def slow(decision: str) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(f"async {decision}")

    def broken(decision: str) -> None:
        raise RuntimeError("plugin bug")

    await notify_resolution(seen.append, "deny")
    await notify_resolution(slow, "allow-once")
    await notify_resolution(broken, "timeout")  # logged, not raised
    await notify_resolution(None, "timeout")
    assert seen == ["deny", "async allow-once"]


async def test_a_hanging_on_resolution_is_given_up_on(autojump_clock: Any) -> None:
    async def hang(decision: str) -> None:
        await trio.sleep_forever()

    with trio.fail_after(10):
        await notify_resolution(hang, "deny")
