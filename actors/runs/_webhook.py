"""Webhooks when a run ends: a signed HTTP POST, retried with backoff, every attempt reported.

The body is JSON (for a cron run: OpenClaw's `finished` event payload). Headers:

- `Content-Type: application/json`, `User-Agent: clawlane/<version>`;
- `Authorization: Bearer <cron.webhookToken>` when that is set (OpenClaw's header);
- with `cron.webhookSecret`: `X-Clawlane-Timestamp: <epoch ms>` and
  `X-Clawlane-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>` (the
  receiver recomputes it over the raw body and rejects old timestamps to stop replays);
- `X-Clawlane-Delivery: <id>`, the same on every attempt of one delivery (to deduplicate).

Attempts: at most `cron.webhookMaxAttempts` (default 4). A transport error, a timeout
(`cron.webhookTimeoutSeconds`), 408, 425, 429 and 5xx are retried after 1 s, 2 s, 4 s, ...
(at most 60 s; a `Retry-After` in seconds is honoured up to 60 s); any other status is final.
2xx is success. Redirects are not followed.

Safe by default (OpenClaw's strict outbound policy): a URL whose host is or resolves to a
loopback, private, link-local, multicast, reserved or unspecified address is refused, unless
its host is in `cron.webhookSsrfPolicy.allowedHostnames` (exactly) or the policy says
`dangerouslyAllowPrivateNetwork`. A refusal is final (no retry).

Nothing here raises: the outcome is a `WebhookResult`.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final
from urllib.parse import urlsplit

import attrs
import httpx
import msgspec
import trio

from runtime.model import CronConfig

__all__ = [
    "RunWebhooks",
    "WebhookAttempt",
    "WebhookClient",
    "WebhookResult",
    "WebhookSettings",
    "deliver_webhook",
    "serve_run_webhooks",
    "sign",
]

log = logging.getLogger("clawlane.webhook")

RETRY_STATUSES: Final = frozenset({408, 425, 429})
BACKOFF_BASE_S: Final = 1.0
BACKOFF_MAX_S: Final = 60.0
USER_AGENT: Final = "clawlane/0.1.0"


def sign(secret: str, timestamp_ms: int, body: bytes) -> str:
    """The `X-Clawlane-Signature` value for `body` sent at `timestamp_ms`."""
    mac = hmac.new(secret.encode(), f"{timestamp_ms}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


@attrs.frozen
class WebhookSettings:
    token: str | None = None
    secret: str | None = None
    max_attempts: int = 4
    timeout_s: float = 10.0
    allowed_hostnames: frozenset[str] = frozenset()
    allow_private: bool = False

    @classmethod
    def from_config(cls, cron: CronConfig) -> WebhookSettings:
        policy = cron.webhookSsrfPolicy
        return cls(
            token=cron.webhookToken or None,
            secret=cron.webhookSecret or None,
            max_attempts=cron.webhookMaxAttempts,
            timeout_s=cron.webhookTimeoutSeconds,
            allowed_hostnames=frozenset(h.lower() for h in policy.allowedHostnames),
            allow_private=policy.dangerouslyAllowPrivateNetwork,
        )


@attrs.frozen
class WebhookAttempt:
    """One POST: when, how long, and how it went (`retryInMs` when another follows)."""

    attempt: int
    ts: int
    duration_ms: int
    ok: bool
    http_status: int | None = None
    error: str | None = None
    retry_in_ms: int | None = None

    def view(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "attempt": self.attempt,
            "ts": self.ts,
            "durationMs": self.duration_ms,
            "ok": self.ok,
        }
        if self.http_status is not None:
            out["httpStatus"] = self.http_status
        if self.error is not None:
            out["error"] = self.error
        if self.retry_in_ms is not None:
            out["retryInMs"] = self.retry_in_ms
        return out


@attrs.frozen
class WebhookResult:
    ok: bool
    attempts: tuple[WebhookAttempt, ...]
    error: str | None = None
    delivery_id: str = ""


def _blocked(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return bool(
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


async def _ssrf_refusal(url: str, settings: WebhookSettings) -> str | None:
    """Why `url` may not be called (None: it may). A checkpoint (DNS)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        return "webhook URL must be http(s) with a host"
    if host in settings.allowed_hostnames or settings.allow_private:
        await trio.lowlevel.checkpoint()
        return None
    try:
        infos = await trio.socket.getaddrinfo(host, parts.port or 80, type=trio.socket.SOCK_STREAM)
    except OSError as exc:
        return f"cannot resolve {host}: {exc}"
    if any(_blocked(str(info[4][0])) for info in infos):
        return (
            "Blocked hostname or private/internal/special-use IP address "
            "(allow it with cron.webhookSsrfPolicy.allowedHostnames)"
        )
    return None


def _retry_after_s(response: httpx.Response) -> float | None:
    raw = response.headers.get("retry-after", "").strip()
    if raw.isdigit():
        return min(float(raw), BACKOFF_MAX_S)
    return None


async def deliver_webhook(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    settings: WebhookSettings,
    *,
    on_attempt: Callable[[WebhookAttempt], Awaitable[None]] | None = None,
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
) -> WebhookResult:
    """POST `body` to `url` until it is accepted or the attempts run out. `on_attempt` is
    awaited after each attempt (to record it). A checkpoint; cancellation stops it between
    or during attempts (what was recorded stays)."""
    delivery_id = uuid.uuid4().hex
    refusal = await _ssrf_refusal(url, settings)
    if refusal is not None:
        attempt = WebhookAttempt(1, now_ms(), 0, False, error=refusal)
        if on_attempt is not None:
            await on_attempt(attempt)
        return WebhookResult(False, (attempt,), refusal, delivery_id)
    attempts: list[WebhookAttempt] = []
    error: str | None = None
    for number in range(1, settings.max_attempts + 1):
        ts = now_ms()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Clawlane-Delivery": delivery_id,
        }
        if settings.token:
            headers["Authorization"] = f"Bearer {settings.token}"
        if settings.secret:
            headers["X-Clawlane-Timestamp"] = str(ts)
            headers["X-Clawlane-Signature"] = sign(settings.secret, ts, body)
        started = trio.current_time()
        status: int | None = None
        retry_after: float | None = None
        try:
            with trio.fail_after(settings.timeout_s):
                async with client.stream("POST", url, content=body, headers=headers) as resp:
                    status = resp.status_code
                    retry_after = _retry_after_s(resp)
        except trio.TooSlowError:
            error, retryable = f"Webhook request timed out after {settings.timeout_s:g}s", True
        except httpx.HTTPError as exc:
            error, retryable = f"Webhook request failed: {type(exc).__name__}: {exc}", True
        else:
            if 200 <= status < 300:
                error, retryable = None, False
            else:
                error = f"Webhook request failed with HTTP {status}"
                retryable = status in RETRY_STATUSES or status >= 500
        duration = int((trio.current_time() - started) * 1000)
        last = number == settings.max_attempts
        delay_s = None
        if error is not None and retryable and not last:
            delay_s = retry_after if retry_after is not None else BACKOFF_BASE_S * 2 ** (number - 1)
            delay_s = min(delay_s, BACKOFF_MAX_S)
        attempt = WebhookAttempt(
            number,
            ts,
            duration,
            error is None,
            status,
            error,
            int(delay_s * 1000) if delay_s is not None else None,
        )
        attempts.append(attempt)
        if on_attempt is not None:
            await on_attempt(attempt)
        if error is None:
            return WebhookResult(True, tuple(attempts), None, delivery_id)
        log.warning("webhook %s attempt %d/%d: %s", url, number, settings.max_attempts, error)
        if delay_s is None:
            break
        await trio.sleep(delay_s)
    return WebhookResult(False, tuple(attempts), error, delivery_id)


class WebhookClient:
    """The `httpx.AsyncClient` webhooks are POSTed with (redirects not followed, the
    environment's proxies ignored), made by the first `get`: making one loads httpcore and
    builds a TLS context (~7 MiB), which a gateway that sends no webhook does without. A
    client handed in is used as it is and not closed; `aclose` closes one made here."""

    def __init__(self, client: httpx.AsyncClient | None = None) -> None:
        self._client = client
        self._own = client is None

    def get(self) -> httpx.AsyncClient:
        """The client, made now if it was not yet. Not a checkpoint."""
        if self._client is None:
            self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False)
        return self._client

    async def aclose(self) -> None:
        """Close the client if it was made here. A checkpoint only then; shielded from
        cancellation (it runs when its owner is being cancelled)."""
        if self._own and self._client is not None:
            with trio.CancelScope(shield=True):
                await self._client.aclose()


class RunWebhooks:
    """The `agent` method's `webhook`: once the run ends, its result is POSTed as cron's
    webhooks are (signed, retried; the generation's `cron` settings), each attempt logged.
    Every gateway process has its own (`serve_run_webhooks`): in a cluster, cron runs on
    one node, and a run's webhook is watched by the node running it."""

    def __init__(
        self, nursery: trio.Nursery, http: WebhookClient, settings: Callable[[], CronConfig]
    ) -> None:
        self._nursery = nursery
        self._http = http
        self._settings = settings

    def watch(self, record: Any, url: str, result: Callable[[], dict[str, Any]]) -> None:
        """After the run `record` ends, POST `result()` to `url`. Not a checkpoint."""
        self._nursery.start_soon(self._deliver, record, url, result, name="agent-webhook")

    async def _deliver(self, record: Any, url: str, result: Callable[[], dict[str, Any]]) -> None:
        await record.done.wait()
        body = msgspec.json.encode(result())
        settings = WebhookSettings.from_config(self._settings())
        outcome = await deliver_webhook(self._http.get(), url, body, settings)
        log.info(
            "agent run %s webhook: %s after %d attempt(s)",
            record.run_id,
            "delivered" if outcome.ok else f"failed ({outcome.error})",
            len(outcome.attempts),
        )


async def serve_run_webhooks(
    settings: Callable[[], CronConfig], *, task_status: trio.TaskStatus[RunWebhooks]
) -> None:
    """`RunWebhooks` (handed to `task_status.started`) until cancelled; deliveries still
    waiting are cancelled with it."""
    http = WebhookClient()
    try:
        async with trio.open_nursery() as nursery:
            task_status.started(RunWebhooks(nursery, http, settings))
            await trio.sleep_forever()
    finally:
        await http.aclose()
