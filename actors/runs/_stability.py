"""The gateway's stability record: a bounded ring of sanitized diagnostic events, what
OpenClaw's `diagnostics.stability` (and `openclaw gateway stability`, `openclaw doctor`)
read.

`StabilityRecorder` keeps the last `CAPACITY` events, each `{seq, ts, type, ...}` with only
metadata (never a prompt, a reply or an argument): `model.usage` when a run that reached a
model ends (provider, model, token usage, `durationMs`) and `message.processed` for every
run's end (`outcome`: completed, error, aborted; `reason`: the abort reason or the error
kind, as a safe code). Telemetry exporters report their health with `exporter_health`: one
record per (exporter, signal), the latest kept (at most `EXPORTERS_MAX`), listed when
asked for `type: telemetry.exporter`. Events past the capacity push the oldest out and are
counted in `dropped`.

`snapshot(limit, type, since_seq)` answers in OpenClaw's shape: `{generatedAt, capacity,
count, dropped, firstSeq?, lastSeq?, events (the last `limit` that match), summary
{byType}}`. Everything runs in the trio thread.
"""

from __future__ import annotations

import collections
import datetime
import re
import time
from typing import Any, Final

from ._record import RunRecord

__all__ = ["CAPACITY", "EXPORTERS_MAX", "LIMIT_DEFAULT", "StabilityRecorder"]

CAPACITY: Final = 1000
LIMIT_DEFAULT: Final = 50
EXPORTERS_MAX: Final = 16
_SAFE_CODE: Final = re.compile(r"^[A-Za-z0-9_.:-]{1,120}$")


def _code(value: object) -> str | None:
    return value if isinstance(value, str) and _SAFE_CODE.match(value) else None


def _duration(meta: dict[str, Any]) -> int | None:
    duration = meta.get("durationMs")
    return duration if isinstance(duration, int) and duration >= 0 else None


def _run_event(type_: str, meta: dict[str, Any], status: str, reason: str | None) -> dict[str, Any]:
    """The fields of a run's end event (`StabilityRecorder.run_ended`)."""
    if type_ == "model.usage":
        agent_meta = meta.get("agentMeta") or {}
        usage = agent_meta.get("usage") or {}
        fields: dict[str, Any] = {
            "provider": _code(agent_meta.get("provider")),
            "model": str(agent_meta.get("model"))[:200],
            "usage": {k: v for k, v in usage.items() if isinstance(v, int)},
            "durationMs": _duration(meta),
        }
    else:
        outcome = {"ok": "completed", "aborted": "aborted"}.get(status, "error")
        fields = {"outcome": outcome, "reason": _code(reason), "durationMs": _duration(meta)}
    return {"type": type_, **{k: v for k, v in fields.items() if v is not None}}


def _event(seq: int, ts: int, event: Any) -> dict[str, Any]:
    body = event if isinstance(event, dict) else _run_event(*event)
    return {"seq": seq, "ts": ts, **body}


class StabilityRecorder:
    """See the module docstring."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._events: collections.deque[tuple[int, int, Any]] = collections.deque(maxlen=capacity)
        self._seq = 0
        self.dropped = 0
        self._exporters: collections.OrderedDict[tuple[str, str], dict[str, Any]] = (
            collections.OrderedDict()
        )
        self._exporter_seq = 0
        self.exporters_dropped = 0

    def record(self, type_: str, **fields: Any) -> None:
        """Append one event (`fields` must be metadata only)."""
        self._push({"type": type_, **{k: v for k, v in fields.items() if v is not None}})

    def _push(self, event: dict[str, Any] | tuple[str, dict[str, Any], str, str | None]) -> None:
        """Append one event, numbered and stamped now: a dict of its fields, or a run's end
        as `run_ended` keeps it (made into its dict when read: a run's end costs no more
        than a tuple)."""
        if len(self._events) == self.capacity:
            self.dropped += 1
        self._seq += 1
        self._events.append((self._seq, int(time.time() * 1000), event))

    def run_ended(self, record: RunRecord) -> None:
        """A run's end: `message.processed`, and `model.usage` when a model served it."""
        meta = (record.final or {}).get("meta") or {}
        reason = record.abort_reason if record.status == "aborted" else record.error_kind
        if (meta.get("agentMeta") or {}).get("model"):
            self._push(("model.usage", meta, record.status, reason))
        self._push(("message.processed", meta, record.status, reason))

    def exporter_health(
        self, exporter: str, *, signal: str, status: str, reason: str | None = None
    ) -> None:
        """A telemetry exporter's health (`status`: started, failure, recovered)."""
        source, target = _code(exporter), _code(signal)
        if source is None or target is None:
            return
        key = (source, target)
        if key not in self._exporters and len(self._exporters) >= EXPORTERS_MAX:
            self._exporters.popitem(last=False)
            self.exporters_dropped += 1
        self._exporter_seq += 1
        self._exporters.pop(key, None)
        self._exporters[key] = {
            "seq": self._exporter_seq,
            "ts": int(time.time() * 1000),
            "type": "telemetry.exporter",
            "source": source,
            "target": target,
            "outcome": status,
            **({"reason": code} if (code := _code(reason)) else {}),
        }

    def snapshot(
        self, *, limit: int = LIMIT_DEFAULT, type_: str | None = None, since_seq: int | None = None
    ) -> dict[str, Any]:
        exporters = type_ == "telemetry.exporter"
        source = (
            list(self._exporters.values())
            if exporters
            else [_event(seq, ts, event) for seq, ts, event in self._events]
        )
        matching = [
            e
            for e in source
            if (type_ is None or e["type"] == type_) and (since_seq is None or e["seq"] > since_seq)
        ]
        by_type: collections.Counter[str] = collections.Counter(e["type"] for e in matching)
        answer: dict[str, Any] = {
            "generatedAt": datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z"),
            "capacity": EXPORTERS_MAX if exporters else self.capacity,
            "count": len(matching),
            "dropped": self.exporters_dropped if exporters else self.dropped,
            "events": [dict(e) for e in matching[-limit:]],
            "summary": {"byType": dict(by_type)},
        }
        if matching:
            answer["firstSeq"], answer["lastSeq"] = matching[0]["seq"], matching[-1]["seq"]
        return answer
