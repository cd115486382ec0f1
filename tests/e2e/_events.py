"""What e2e tests record of a gateway's events, and how they pick a run's events out of them."""

from __future__ import annotations

from typing import Any

from transports import GatewayClient

Events = list[tuple[str, Any, int | None]]


def recorder_events() -> tuple[Events, Any]:
    events: Events = []

    def on_event(event: str, payload: Any, seq: int | None) -> None:
        events.append((event, payload, seq))

    return events, on_event


def run_events(events: Events, run_id: str, stream: str | None = None) -> list[dict[str, Any]]:
    return [
        p
        for (e, p, _s) in events
        if e == "agent" and p["runId"] == run_id and (stream is None or p["stream"] == stream)
    ]


def terminal_events(events: Events, run_id: str) -> list[dict[str, Any]]:
    return [
        p for p in run_events(events, run_id, "lifecycle") if p["data"]["phase"] in ("end", "error")
    ]


async def next_event(client: GatewayClient, name: str) -> dict[str, Any]:
    """The payload of the next `name` event `client` receives (from its `events`)."""
    async for event, payload, _seq in client.events:
        if event == name:
            return dict(payload)
    raise AssertionError(f"connection closed before {name}")
