"""Webhook delivery on virtual time: backoff, Retry-After, final statuses, the signature,
and the SSRF guard. (httpx.MockTransport answers here; the loopback HTTP server is in
tests/e2e/test_cron_e2e.py.)"""

from __future__ import annotations

import hashlib
import hmac
import itertools
from typing import Any

import httpx
import pytest
import trio

from actors.runs._webhook import WebhookAttempt, WebhookSettings, deliver_webhook, sign

ALLOWED = WebhookSettings(allowed_hostnames=frozenset({"hooks.test"}), max_attempts=4)


def client(statuses: list[int], seen: list[tuple[float, httpx.Request]], **headers: str) -> Any:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append((trio.current_time(), request))
        status = statuses[min(len(seen), len(statuses)) - 1]
        return httpx.Response(status, headers=headers)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


async def test_failures_back_off_exponentially_then_give_up(autojump_clock: Any) -> None:
    seen: list[tuple[float, httpx.Request]] = []
    attempts: list[WebhookAttempt] = []

    async def record(a: WebhookAttempt) -> None:
        attempts.append(a)

    with trio.fail_after(600):
        async with client([500], seen) as http:
            result = await deliver_webhook(
                http, "http://hooks.test/x", b"{}", ALLOWED, on_attempt=record
            )
    assert not result.ok and result.error == "Webhook request failed with HTTP 500"
    times = [t for t, _ in seen]
    assert [round(b - a, 3) for a, b in itertools.pairwise(times)] == [1.0, 2.0, 4.0]
    assert [a.retry_in_ms for a in attempts] == [1000, 2000, 4000, None]
    assert [a.attempt for a in result.attempts] == [1, 2, 3, 4]


async def test_retry_after_is_honoured_up_to_a_minute(autojump_clock: Any) -> None:
    seen: list[tuple[float, httpx.Request]] = []
    with trio.fail_after(600):
        async with client([429, 503, 200], seen, **{"retry-after": "7"}) as http:
            result = await deliver_webhook(http, "http://hooks.test/x", b"{}", ALLOWED)
    assert result.ok
    times = [t for t, _ in seen]
    assert [round(b - a, 3) for a, b in itertools.pairwise(times)] == [7.0, 7.0]


@pytest.mark.parametrize("status", [400, 401, 404, 410])
async def test_a_client_error_is_final(status: int, autojump_clock: Any) -> None:
    seen: list[tuple[float, httpx.Request]] = []
    with trio.fail_after(60):
        async with client([status], seen) as http:
            result = await deliver_webhook(http, "http://hooks.test/x", b"{}", ALLOWED)
    assert not result.ok and len(seen) == 1
    assert result.attempts[0].http_status == status and result.attempts[0].retry_in_ms is None


async def test_a_timeout_is_retried(autojump_clock: Any) -> None:
    calls = 0

    async def slow(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            await trio.sleep(3600)
        return httpx.Response(204)

    settings = WebhookSettings(allowed_hostnames=frozenset({"hooks.test"}), timeout_s=2.0)
    with trio.fail_after(600):
        async with httpx.AsyncClient(transport=httpx.MockTransport(slow)) as http:
            result = await deliver_webhook(http, "http://hooks.test/x", b"{}", settings)
    assert result.ok and calls == 2
    assert result.attempts[0].error == "Webhook request timed out after 2s"


async def test_the_signature_covers_timestamp_and_body(autojump_clock: Any) -> None:
    seen: list[tuple[float, httpx.Request]] = []
    settings = WebhookSettings(allowed_hostnames=frozenset({"hooks.test"}), secret="k", token="t")
    body = b'{"runId":"r1"}'
    with trio.fail_after(60):
        async with client([200], seen) as http:
            await deliver_webhook(http, "http://hooks.test/x", body, settings, now_ms=lambda: 1234)
    [(_, request)] = seen
    want = hmac.new(b"k", b"1234." + body, hashlib.sha256).hexdigest()
    assert request.headers["x-clawlane-signature"] == f"sha256={want}" == sign("k", 1234, body)
    assert request.headers["x-clawlane-timestamp"] == "1234"
    assert request.headers["authorization"] == "Bearer t"
    assert request.content == body


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9/x", "http://localhost/x", "http://10.1.2.3/x", "http://[::1]/x",
     "http://169.254.169.254/latest/meta-data", "http://192.168.0.1/x"],
)  # fmt: skip
async def test_private_and_loopback_targets_are_refused_by_default(url: str) -> None:
    seen: list[tuple[float, httpx.Request]] = []
    with trio.fail_after(30):
        async with client([200], seen) as http:
            result = await deliver_webhook(http, url, b"{}", WebhookSettings())
    assert not result.ok and seen == []
    assert result.error is not None and "Blocked hostname" in result.error
    assert len(result.attempts) == 1


async def test_an_allowed_hostname_passes_the_guard() -> None:
    seen: list[tuple[float, httpx.Request]] = []
    settings = WebhookSettings(allowed_hostnames=frozenset({"127.0.0.1"}))
    with trio.fail_after(30):
        async with client([200], seen) as http:
            result = await deliver_webhook(http, "http://127.0.0.1:9/x", b"{}", settings)
    assert result.ok and len(seen) == 1
