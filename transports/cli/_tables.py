"""Human-readable views of the gateway's answers, for `clawlane status|health|sessions
list|models list` (`--json` prints the answer itself instead).

The views render what is there: the shapes of `status` and `health` change (OpenClaw's
shapes, clawlane's own fields under `status["clawlane"]`), so nothing here requires a key.
Known list results (`sessions.list`, `models.list`) get a table with the preferred columns
that occur in the rows; everything else is shown as sections of `key  value` lines, where a
list of objects, or an object whose values are all objects (`lanes`), becomes a table.

Values are humanized by their key: `...Ms` → a duration, `ts`/`...At` (epoch ms) → local
time, `...Bytes` → KiB/MiB, booleans → yes/no, missing → `-`.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import msgspec

__all__ = ["format_table", "humanize", "render_result"]

_MAX_CELL: Final = 60
_MAX_ROWS: Final = 200
_MAX_DEPTH: Final = 3
_PLAIN_NUMBERS: Final = frozenset({"pid", "port", "number", "generation", "version", "seq"})
_SESSION_COLUMNS: Final = (
    ("key", "KEY"),
    ("kind", "KIND"),
    ("agentId", "AGENT"),
    ("model", "MODEL"),
    ("status", "STATUS"),
    ("hasActiveRun", "ACTIVE"),
    ("totalTokens", "TOKENS"),
    ("updatedAt", "UPDATED"),
)
_MODEL_COLUMNS: Final = (
    ("provider", "PROVIDER"),
    ("id", "MODEL"),
    ("name", "NAME"),
    ("contextWindow", "CONTEXT"),
    ("reasoning", "REASONING"),
    ("available", "AVAILABLE"),
)


# --- values ---------------------------------------------------------------------------------


def _duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:,.0f} ms" if ms >= 10 or ms == int(ms) else f"{ms:.1f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    return f"{hours // 24}d {hours % 24}h"


def _when(ms: float, now_ms: float) -> str:
    moment = datetime.datetime.fromtimestamp(ms / 1000).astimezone()
    age = (now_ms - ms) / 1000
    stamp = moment.strftime("%Y-%m-%d %H:%M:%S")
    if 0 <= age < 86_400 * 2:
        return f"{stamp} ({_duration(age * 1000)} ago)"
    return stamp


def _bytes(n: float) -> str:
    if n < 1024:
        return f"{n:,.0f} B"
    if n < 1024 * 1024:
        return f"{n / 1024:,.1f} KiB"
    if n < 1024**3:
        return f"{n / 1048576:,.1f} MiB"
    return f"{n / 1024**3:,.2f} GiB"


def _clip(text: str, limit: int = _MAX_CELL) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def humanize(key: str, value: Any, *, now_ms: float | None = None) -> str:
    """One value as a person reads it; `key` says what it is."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        moment = key == "ts" or key.endswith(("At", "Ts"))
        if moment and value > 1e11:  # epoch milliseconds
            return _when(value, now_ms if now_ms is not None else time.time() * 1000)
        if key.endswith("Ms") or key in ("ms", "age"):
            return _duration(float(value))
        if key.endswith("Bytes") or key == "bytes":
            return _bytes(float(value))
        if isinstance(value, int):
            plain = key in _PLAIN_NUMBERS or key.endswith("Id") or key.lower().endswith("port")
            return f"{value:,}" if abs(value) >= 10_000 and not plain else str(value)
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    if isinstance(value, str):
        return _clip(value) if value else '""'
    if isinstance(value, dict) and not value:
        return "(none)"
    if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        return _clip(", ".join(humanize(key, v, now_ms=now_ms) for v in value)) or "(none)"
    return _clip(msgspec.json.encode(value).decode())


# --- tables ---------------------------------------------------------------------------------


def format_table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, indent: str = "") -> str:
    """Columns padded to their widest cell; numbers right-aligned."""
    body = [list(r) for r in rows]
    widths = [len(h) for h in headers]
    for row in body:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    numeric = [
        all(_looks_numeric(row[i]) for row in body) and bool(body) for i in range(len(headers))
    ]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(widths[i]) if numeric[i] else c.ljust(widths[i]) for i, c in enumerate(cells)
        ]
        return (indent + "  ".join(out)).rstrip()

    return "\n".join([line(headers), *(line(r) for r in body)])


def _looks_numeric(cell: str) -> bool:
    stripped = cell.replace(",", "").replace(".", "", 1)
    return stripped.isdigit() or cell == "-"


def _rows_table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[tuple[str, str]],
    *,
    now_ms: float,
    indent: str = "",
    first: tuple[str, str] | None = None,
) -> str:
    present = [(k, h) for k, h in columns if any(k in r for r in rows)]
    if first is not None:
        present.insert(0, first)
    shown = rows[:_MAX_ROWS]
    table = format_table(
        [h for _, h in present],
        ([humanize(k, r.get(k), now_ms=now_ms) for k, _ in present] for r in shown),
        indent=indent,
    )
    if len(rows) > len(shown):
        table += f"\n{indent}... and {len(rows) - len(shown):,} more (use --json for all)"
    return table


def _object_rows(value: Any) -> list[dict[str, Any]] | None:
    """`value` as table rows when it is a list of objects."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return value
    return None


def _uniform_columns(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    keys: dict[str, None] = {}
    for row in rows:
        for k, v in row.items():
            if not isinstance(v, dict) and not _object_rows(v):
                keys.setdefault(k)
    return [(k, k.upper()) for k in keys]


def _named_rows(value: Any) -> list[dict[str, Any]] | None:
    """An object whose values are all objects of scalars (`lanes`) as rows with a `name`."""
    if not isinstance(value, dict) or len(value) < 2:
        return None
    if not all(isinstance(v, dict) and v for v in value.values()):
        return None
    if any(isinstance(x, dict | list) for v in value.values() for x in v.values()):
        return None
    return [{"name": k, **v} for k, v in value.items()]


# --- sections -------------------------------------------------------------------------------


def _section(title: str, data: dict[str, Any], *, now_ms: float, depth: int) -> list[str]:
    """`title` (at `depth - 1` indents) followed by its scalar keys, then its nested
    sections and tables (a blank line before each at the top level)."""
    indent = "  " * depth
    lines = [f"{'  ' * (depth - 1)}{title}"] if title else []
    pairs: list[tuple[str, str]] = []
    nested: list[tuple[str, Any]] = []
    for key, value in data.items():
        if (isinstance(value, dict) and value) or _object_rows(value) is not None:
            nested.append((key, value))
        else:
            pairs.append((key, humanize(key, value, now_ms=now_ms)))
    if pairs:
        width = max(len(k) for k, _ in pairs)
        lines += [f"{indent}{k.ljust(width)}  {v}" for k, v in pairs]
    for key, value in nested:
        if depth == 0:
            lines.append("")
        rows = _object_rows(value) or _named_rows(value)
        if rows is not None:
            lines.append(f"{indent}{key}")
            lines.append(
                _rows_table(rows, _uniform_columns(rows), now_ms=now_ms, indent=indent + "  ")
            )
        elif depth >= _MAX_DEPTH:
            lines.append(f"{indent}{key}  {humanize(key, value, now_ms=now_ms)}")
        else:
            lines += _section(key, value, now_ms=now_ms, depth=depth + 1)
    return lines


def _sections(result: Any, *, now_ms: float) -> str:
    if not isinstance(result, dict):
        return humanize("", result, now_ms=now_ms)
    return "\n".join(_section("", result, now_ms=now_ms, depth=0)).strip("\n")


# --- known results --------------------------------------------------------------------------


def _sessions(result: Any, *, now_ms: float) -> str:
    rows = result.get("sessions") if isinstance(result, dict) else None
    if not isinstance(rows, list):
        return _sections(result, now_ms=now_ms)
    rows = [r for r in rows if isinstance(r, dict)]
    count = result.get("count", len(rows))
    head = f"{count:,} session{'s' if count != 1 else ''}"
    if isinstance(result.get("path"), str):
        head += f" (store {result['path']})"
    if not rows:
        return head
    return head + "\n\n" + _rows_table(rows, _SESSION_COLUMNS, now_ms=now_ms)


def _models(result: Any, *, now_ms: float) -> str:
    rows = result.get("models") if isinstance(result, dict) else None
    if not isinstance(rows, list):
        return _sections(result, now_ms=now_ms)
    rows = [r for r in rows if isinstance(r, dict)]
    if not rows:
        return "no models"
    return _rows_table(rows, _MODEL_COLUMNS, now_ms=now_ms)


_VIEWS: Final[dict[str, Callable[..., str]]] = {
    "sessions.list": _sessions,
    "models.list": _models,
}


def render_result(method: str, result: Any, *, now_ms: float | None = None) -> str:
    """`result` of `method` as text for a terminal. Never raises for an unexpected shape."""
    now = now_ms if now_ms is not None else time.time() * 1000
    view: Callable[..., str] = _VIEWS.get(method, _sections)
    try:
        return view(result, now_ms=now)
    except Exception:  # an unforeseen shape: show it rather than fail
        return json.dumps(result, indent=2, default=str)
