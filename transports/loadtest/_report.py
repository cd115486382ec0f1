"""What `clawlane loadtest` shows besides its final report: the progress line (percent done
and an ETA, `progress_line`) and, with `--report DIR`, the run over time.

While the load runs, `Timeline.run` takes a `Sample` every `interval` seconds: runs done and
runs/s, agent and chat events/s, runs in flight, errors, the latency percentiles of the
events received in that interval (from the load test's latency histogram: the difference of
its buckets since the last sample, so the hot path pays nothing), and the gateway's RSS and
CPU. `write_report(DIR, ...)` then writes

- `samples.csv`: one row per sample (`SAMPLE_COLUMNS`);
- `chart.svg`: throughput (runs/s, events/s) and latency percentiles (p50, p95, p99, max)
  over time, drawn by `svg_chart` (plain SVG: no plotting library needed, opens in any
  browser);
- `report.json` and `report.txt`: the final report (`--json` and the table);
- `gateway.log`: the spawned gateway's log, with `--spawn-process`.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from ._conn import (
    _FINE_BUCKETS,
    _FINE_MS,
    GATEWAY_MAX_INFLIGHT,
    LatencySummary,
    _Histogram,
    _Loadtest,
)
from ._gateway import _Sampler

__all__ = [
    "SAMPLE_COLUMNS",
    "LoadtestReport",
    "Sample",
    "Timeline",
    "interval_quantiles",
    "svg_chart",
    "write_report",
]

SAMPLE_COLUMNS: Final = (
    "t_s",
    "runs_done",
    "runs_per_s",
    "events_per_s",
    "chat_events_per_s",
    "in_flight",
    "errors",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_max_ms",
    "latency_count",
    "gateway_rss_bytes",
    "gateway_cpu_percent",
)


@attrs.frozen
class LoadtestReport:
    runs: int
    runs_expected: int | None
    runs_failed: int
    elapsed_s: float
    runs_per_s: float
    events: int
    events_per_s: float
    chat_events: int
    chat_events_per_s: float
    latency_ms: LatencySummary
    run_duration_ms: LatencySummary
    lost: int
    duplicated: int
    out_of_order: int
    unexpected: int
    chat_terminal_missing: int
    conn_seq_gaps: int
    peak_streaming_runs: int
    errors: dict[str, int]
    sessions: int
    connections: int
    subscribers: int
    subscriber_mode: str
    deltas: int
    delta_delay_ms: float
    gateway: str
    gateway_pid: int | None
    gateway_start_rss_bytes: int | None
    gateway_peak_rss_bytes: int | None
    gateway_end_rss_bytes: int | None
    gateway_cpu_percent: float | None
    lane_capacity: int | None

    @property
    def clean(self) -> bool:
        """Nothing lost, duplicated, reordered or failed."""
        return not (
            self.lost
            or self.duplicated
            or self.out_of_order
            or self.unexpected
            or self.chat_terminal_missing
            or self.conn_seq_gaps
            or self.errors
            or self.runs_failed
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = attrs.asdict(self)
        data["clean"] = self.clean
        return data

    def table(self) -> str:
        def mib(n: int | None) -> str:
            return "n/a" if n is None else f"{n / 1048576:,.1f} MiB"

        lat = self.latency_ms
        dur = self.run_duration_ms
        expected = f" / {self.runs_expected:,}" if self.runs_expected is not None else ""
        errors = ", ".join(f"{k} {v:,}" for k, v in sorted(self.errors.items())) or "none"
        cpu = "n/a" if self.gateway_cpu_percent is None else f"{self.gateway_cpu_percent:.0f} %"
        if self.gateway.startswith("in-process"):
            cpu += " (includes the load side: same process)"
        rows = [
            ("runs completed", f"{self.runs:,}{expected} in {self.elapsed_s:.2f} s"),
            ("runs failed", f"{self.runs_failed:,}"),
            ("runs streaming at once (peak)", f"{self.peak_streaming_runs:,}"),
            ("runs/s", f"{self.runs_per_s:,.0f}"),
            ("agent events/s", f"{self.events_per_s:,.0f}  ({self.events:,} delivered)"),
            ("chat events/s", f"{self.chat_events_per_s:,.0f}  ({self.chat_events:,} delivered)"),
            (
                "latency p50/p95/p99/max",
                f"{lat.p50:.1f} / {lat.p95:.1f} / {lat.p99:.1f} / {lat.max:.1f} ms",
            ),
            (
                "run duration p50/p99/max",
                f"{dur.p50:,.0f} / {dur.p99:,.0f} / {dur.max:,.0f} ms (lifecycle start to end;"
                f" unloaded {self.deltas * self.delta_delay_ms:,.0f} ms)",
            ),
            (
                "lost / duplicated / out-of-order",
                f"{self.lost:,} / {self.duplicated:,} / {self.out_of_order:,}",
            ),
            (
                "unexpected / chat terminal missing / frame seq gaps",
                f"{self.unexpected:,} / {self.chat_terminal_missing:,} / {self.conn_seq_gaps:,}",
            ),
            ("errors", errors),
            (
                "gateway peak RSS",
                f"{mib(self.gateway_peak_rss_bytes)} (at start {mib(self.gateway_start_rss_bytes)})",
            ),
            ("gateway CPU", cpu),
        ]
        width = max(len(k) for k, _ in rows)
        head = (
            f"clawlane loadtest: {self.sessions:,} sessions on {self.connections} connections"
            f" (+{self.subscribers} subscribers, {self.subscriber_mode}), {self.deltas} deltas"
            f" {self.delta_delay_ms:g} ms apart; gateway {self.gateway}"
        )
        if self.lane_capacity is not None and self.lane_capacity < self.sessions:
            head += f"\n  note: the gateway's lane admits {self.lane_capacity} runs at once"
        if -(-self.sessions // self.connections) > GATEWAY_MAX_INFLIGHT:
            head += (
                f"\n  note: over {GATEWAY_MAX_INFLIGHT} sessions per connection: the gateway"
                " refuses requests past that many in flight (UNAVAILABLE); add --connections"
            )
        lines = [head, ""]
        lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
        lines.append("")
        lines.append("  result: " + ("CLEAN" if self.clean else "PROBLEMS (see above)"))
        return "\n".join(lines)


@attrs.frozen
class Sample:
    t_s: float
    runs_done: int
    runs_per_s: float
    events_per_s: float
    chat_events_per_s: float
    in_flight: int
    errors: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    latency_max_ms: float | None
    latency_count: int
    gateway_rss_bytes: int | None
    gateway_cpu_percent: float | None

    def row(self) -> list[str]:
        return ["" if v is None else str(v) for v in attrs.astuple(self)]


def _bucket_upper(i: int) -> float:

    return (i + 1) / 20.0 if i < _FINE_BUCKETS else _FINE_MS + (i - _FINE_BUCKETS + 1)


def interval_quantiles(
    now: Sequence[int], before: Sequence[int], qs: Sequence[float]
) -> tuple[int, list[float], float]:
    """(count, the quantiles `qs`, max) of the values added between two snapshots of a
    latency histogram's buckets (upper bucket bounds, in ms)."""
    diff = [(i, a - b) for i, (a, b) in enumerate(zip(now, before, strict=True)) if a != b]
    count = sum(n for _, n in diff)
    if not count:
        return 0, [0.0 for _ in qs], 0.0
    out: list[float] = []
    for q in qs:
        rank, seen = q * count, 0
        for i, n in diff:
            seen += n
            if seen >= rank:
                out.append(_bucket_upper(i))
                break
    return count, out, _bucket_upper(diff[-1][0])


class Timeline:
    """Samples of one load test (see the module doc). Trio-thread only."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self.samples: list[Sample] = []
        self._started = 0.0
        self._last_t = 0.0
        self._last: tuple[int, int, int] = (0, 0, 0)
        self._buckets: list[int] = []
        self._cpu: tuple[float, float] | None = None

    def start(self, lt: _Loadtest, sampler: _Sampler, started: float) -> None:
        self._started = self._last_t = started
        self._last = (lt.runs_ok + lt.runs_failed, lt.events, lt.chat_events)
        self._buckets = list(lt.latency.buckets)
        self._cpu = self._cpu_now(sampler)

    @staticmethod
    def _cpu_now(sampler: _Sampler) -> tuple[float, float] | None:
        if sampler.proc is None:
            return None
        try:
            times = sampler.proc.cpu_times()
        except Exception:
            return None
        return (time.monotonic(), times.user + times.system)

    def take(self, lt: _Loadtest, sampler: _Sampler) -> Sample:
        now = time.monotonic()
        span = max(now - self._last_t, 1e-9)
        runs, events, chat = lt.runs_ok + lt.runs_failed, lt.events, lt.chat_events
        hist: _Histogram = lt.latency
        buckets = list(hist.buckets)
        count, (p50, p95, p99), top = interval_quantiles(buckets, self._buckets, (0.5, 0.95, 0.99))
        cpu = self._cpu_now(sampler)
        cpu_percent = None
        if cpu is not None and self._cpu is not None and cpu[0] > self._cpu[0]:
            cpu_percent = round(100.0 * (cpu[1] - self._cpu[1]) / (cpu[0] - self._cpu[0]), 1)
        sample = Sample(
            t_s=round(now - self._started, 3),
            runs_done=runs,
            runs_per_s=round((runs - self._last[0]) / span, 1),
            events_per_s=round((events - self._last[1]) / span, 1),
            chat_events_per_s=round((chat - self._last[2]) / span, 1),
            in_flight=lt.in_flight,
            errors=sum(lt.errors.values()),
            latency_p50_ms=p50 if count else None,
            latency_p95_ms=p95 if count else None,
            latency_p99_ms=p99 if count else None,
            latency_max_ms=top if count else None,
            latency_count=count,
            gateway_rss_bytes=sampler.rss,
            gateway_cpu_percent=cpu_percent,
        )
        self.samples.append(sample)
        self._last_t, self._last, self._buckets, self._cpu = now, (runs, events, chat), buckets, cpu
        return sample

    async def run(self, lt: _Loadtest, sampler: _Sampler) -> None:
        """Take a sample every `interval` until cancelled. A checkpoint."""
        while True:
            await trio.sleep(self.interval)
            self.take(lt, sampler)


def progress_done(
    done: int, total: int | None, elapsed: float, duration: float | None
) -> tuple[float | None, float | None]:
    """(fraction done, seconds left) for the progress line; None where it cannot be told."""
    if total:
        fraction = min(done / total, 1.0)
        eta = max(elapsed * (total - done) / done, 0.0) if done else None
        return fraction, eta
    if duration:
        return min(elapsed / duration, 1.0), max(duration - elapsed, 0.0)
    return None, None


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA ?"
    seconds = int(seconds + 0.5)
    return f"ETA {seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"ETA {seconds}s"


async def progress_line(
    lt: _Loadtest,
    sampler: _Sampler,
    started: float,
    total: int | None,
    duration: float | None = None,
) -> None:
    """The progress line on stderr (rewritten in place on a terminal, one line every 5 s
    otherwise) until cancelled: percent done and an ETA, runs, in flight, events/s, errors,
    the gateway's RSS. A checkpoint."""
    tty = sys.stderr.isatty()
    interval = 0.5 if tty else 5.0
    last_events = 0
    last_t = started
    try:
        while True:
            await trio.sleep(interval)
            now = time.monotonic()
            rate = (lt.events - last_events) / max(now - last_t, 1e-9)
            last_events, last_t = lt.events, now
            done = lt.runs_ok + lt.runs_failed
            runs = f"{done:,}/{total:,}" if total is not None else f"{done:,}"
            fraction, left = progress_done(done, total, now - started, duration)
            where = f"{fraction * 100:5.1f}% {_eta(left)}  " if fraction is not None else ""
            rss = f"{sampler.rss / 1048576:,.0f} MiB" if sampler.rss is not None else "n/a"
            line = (
                f"[{now - started:6.1f}s] {where}runs {runs}  in flight {lt.in_flight:,}  "
                f"events {lt.events:,} ({rate:,.0f}/s)  errors {sum(lt.errors.values()):,}  "
                f"gateway rss {rss}"
            )
            sys.stderr.write(("\r" + line + "\x1b[K") if tty else line + "\n")
            sys.stderr.flush()
    finally:
        if tty:
            sys.stderr.write("\n")
            sys.stderr.flush()


# --- the chart ------------------------------------------------------------------------------

_W: Final = 960
_PANEL_H: Final = 230
_LEFT: Final = 78
_RIGHT: Final = 24
_TOP: Final = 56
_GAP: Final = 64
_COLORS: Final = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#7f7f7f")


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = span / max(ticks, 1)
    if raw <= 0:
        return 1.0
    power = math.pow(10.0, math.floor(math.log10(raw)))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def _label(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:g}" if v == int(v) else f"{v:.1f}"


def _panel(
    y0: float,
    title: str,
    unit: str,
    xs: Sequence[float],
    series: Sequence[tuple[str, Sequence[float | None], str]],
    x_max: float,
) -> list[str]:
    plot_w = _W - _LEFT - _RIGHT
    values = [v for _, vs, _ in series for v in vs if v is not None]
    y_max = max(values, default=0.0) or 1.0
    step = _nice_step(y_max)
    y_top = step * math.ceil(y_max / step)
    out = [
        f'<text x="{_LEFT}" y="{y0 - 12}" class="title">{escape(title)}</text>',
        f'<rect x="{_LEFT}" y="{y0}" width="{plot_w}" height="{_PANEL_H}" class="frame"/>',
    ]

    def px(x: float) -> float:
        return _LEFT + plot_w * (x / x_max if x_max else 0.0)

    def py(y: float) -> float:
        return y0 + _PANEL_H - _PANEL_H * (y / y_top)

    tick = 0.0
    while tick <= y_top + 1e-9:
        y = py(tick)
        out.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_W - _RIGHT}" y2="{y:.1f}" class="grid"/>'
        )
        out.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" class="ytick">{_label(tick)}</text>')
        tick += step
    x_step = _nice_step(x_max, 8)
    tick = 0.0
    while tick <= x_max + 1e-9:
        x = px(tick)
        out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + _PANEL_H}" class="grid"/>')
        out.append(
            f'<text x="{x:.1f}" y="{y0 + _PANEL_H + 16}" class="xtick">{_label(tick)} s</text>'
        )
        tick += x_step
    out.append(
        f'<text x="16" y="{y0 + _PANEL_H / 2:.1f}" class="unit" '
        f'transform="rotate(-90 16 {y0 + _PANEL_H / 2:.1f})">{escape(unit)}</text>'
    )
    legend_x = _LEFT + 10
    for name, vs, color in series:
        points = [f"{px(x):.1f},{py(v):.1f}" for x, v in zip(xs, vs, strict=True) if v is not None]
        if len(points) == 1:
            cx, cy = points[0].split(",")
            out.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{color}"/>')
        elif points:
            out.append(
                f'<polyline points="{" ".join(points)}" fill="none" stroke="{color}" '
                f'stroke-width="2"><title>{escape(name)}</title></polyline>'
            )
        out.append(
            f'<rect x="{legend_x}" y="{y0 + 8}" width="12" height="12" fill="{color}"/>'
            f'<text x="{legend_x + 16}" y="{y0 + 18}" class="legend">{escape(name)}</text>'
        )
        legend_x += 22 + 8 * len(name)
    return out


def svg_chart(samples: Sequence[Sample], title: str) -> str:
    """Throughput and latency over time, as an SVG document."""
    xs = [s.t_s for s in samples]
    x_max = max(xs, default=1.0) or 1.0
    y1 = _TOP
    y2 = y1 + _PANEL_H + _GAP
    y3 = y2 + _PANEL_H + _GAP
    height = y3 + _PANEL_H + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
        f'viewBox="0 0 {_W} {height}" font-family="sans-serif" font-size="12">',
        "<style>.title{font-size:14px;font-weight:bold}.frame{fill:#fff;stroke:#999}"
        ".grid{stroke:#e5e5e5}.ytick{text-anchor:end;fill:#555}.xtick{text-anchor:middle;"
        "fill:#555}.unit{text-anchor:middle;fill:#333}.legend{fill:#333}</style>",
        f'<rect width="{_W}" height="{height}" fill="#fafafa"/>',
        f'<text x="{_LEFT}" y="24" class="title">{escape(title)}</text>',
    ]
    parts += _panel(
        y1,
        "runs completed per second",
        "runs/s",
        xs,
        [("runs/s", [s.runs_per_s for s in samples], _COLORS[0])],
        x_max,
    )
    parts += _panel(
        y2,
        "events delivered per second",
        "events/s",
        xs,
        [
            ("agent events/s", [s.events_per_s for s in samples], _COLORS[0]),
            ("chat events/s", [s.chat_events_per_s for s in samples], _COLORS[1]),
        ],
        x_max,
    )
    parts += _panel(
        y3,
        "event latency (gateway ts → receipt), per interval",
        "ms",
        xs,
        [
            ("p50", [s.latency_p50_ms for s in samples], _COLORS[2]),
            ("p95", [s.latency_p95_ms for s in samples], _COLORS[1]),
            ("p99", [s.latency_p99_ms for s in samples], _COLORS[3]),
            ("max", [s.latency_max_ms for s in samples], _COLORS[4]),
        ],
        x_max,
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


# --- files ----------------------------------------------------------------------------------


def write_report(
    directory: Path, samples: Sequence[Sample], report: LoadtestReport, *, title: str
) -> list[Path]:
    """Write the report files into `directory` (created if needed). Blocking I/O."""
    directory.mkdir(parents=True, exist_ok=True)
    csv_path = directory / "samples.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(SAMPLE_COLUMNS)
        writer.writerows(s.row() for s in samples)
    svg_path = directory / "chart.svg"
    svg_path.write_text(svg_chart(samples, title), encoding="utf-8")
    json_path = directory / "report.json"
    data: dict[str, Any] = report.to_json()
    json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    txt_path = directory / "report.txt"
    txt_path.write_text(report.table() + "\n", encoding="utf-8")
    return [csv_path, svg_path, json_path, txt_path]
