"""One session's usage read from its transcript, as OpenClaw's Usage page shows a session:
`timeseries` (each model call's tokens and cost, with running totals, at most `max_points`:
consecutive calls summed) and `logs` (the last `limit` messages, each with its text, and
for a reply its tokens and cost). Costs use the prices configured now.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ..llm import AssistantMessage, Message, TextContent, ToolResultMessage, UserMessage
from ..llm._types import ToolCallContent
from ._pricing import PriceTable, call_cost, token_total

__all__ = ["session_logs", "session_timeseries"]

MAX_LOG_CHARS: Final = 2_000


def _point(msg: AssistantMessage, prices: PriceTable) -> dict[str, Any]:
    u = msg.usage
    cost = call_cost(u, prices.get(msg.provider, msg.model))
    return {
        "timestamp": msg.timestamp,
        "input": u.input,
        "output": u.output,
        "cacheRead": u.cacheRead,
        "cacheWrite": u.cacheWrite,
        "totalTokens": token_total(u),
        "cost": cost.total if cost is not None else 0.0,
    }


def session_timeseries(
    session_id: str, messages: Iterable[Message], prices: PriceTable, *, max_points: int = 200
) -> dict[str, Any]:
    points = sorted(
        (_point(m, prices) for m in messages if isinstance(m, AssistantMessage) and m.timestamp),
        key=lambda p: p["timestamp"],
    )
    if len(points) > max_points:
        step = -(-len(points) // max_points)
        summed: list[dict[str, Any]] = []
        for i in range(0, len(points), step):
            group = points[i : i + step]
            head = dict(group[-1])
            for name in ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"):
                head[name] = sum(p[name] for p in group)
            summed.append(head)
        points = summed
    tokens, cost = 0, 0.0
    for p in points:
        tokens += p["totalTokens"]
        cost += p["cost"]
        p["cumulativeTokens"] = tokens
        p["cumulativeCost"] = cost
    return {"sessionId": session_id, "points": points}


def _text(msg: Message) -> str:
    parts: list[str] = []
    if isinstance(msg, ToolResultMessage):
        parts += [f"[Tool: {msg.toolName or 'tool'}]", "[Tool Result]"]
    content = msg.content
    if isinstance(content, str):
        parts.append(content)
    else:
        for block in content:
            if isinstance(block, TextContent) and block.text:
                parts.append(block.text)
            elif isinstance(block, ToolCallContent):
                parts.append(f"[Tool: {block.name}]")
    text = "\n".join(parts).strip()
    return text[:MAX_LOG_CHARS] + "…" if len(text) > MAX_LOG_CHARS else text


def session_logs(
    messages: Iterable[Message], prices: PriceTable, *, limit: int = 200
) -> list[dict[str, Any]]:
    logs: list[dict[str, Any]] = []
    for msg in messages:
        text = _text(msg)
        if not text:
            continue
        role = (
            "user"
            if isinstance(msg, UserMessage)
            else ("assistant" if isinstance(msg, AssistantMessage) else "toolResult")
        )
        entry: dict[str, Any] = {"timestamp": msg.timestamp or 0, "role": role, "content": text}
        if isinstance(msg, AssistantMessage):
            entry["tokens"] = token_total(msg.usage)
            cost = call_cost(msg.usage, prices.get(msg.provider, msg.model))
            if cost is not None:
                entry["cost"] = cost.total
        logs.append(entry)
    logs.sort(key=lambda e: e["timestamp"])
    return logs[-limit:] if limit > 0 else []
