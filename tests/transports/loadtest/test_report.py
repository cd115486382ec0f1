"""`clawlane loadtest --report DIR`: the samples as CSV and a chart of throughput and latency
over time, from a real load test; and the progress line's percent and ETA."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import trio

from transports.loadtest._conn import LoadtestOptions, _Histogram
from transports.loadtest._report import (
    SAMPLE_COLUMNS,
    Sample,
    _eta,
    interval_quantiles,
    progress_done,
    svg_chart,
)
from transports.loadtest._run import run_loadtest

SVG = "{http://www.w3.org/2000/svg}"


async def test_a_report_directory_gets_samples_a_chart_and_the_report(tmp_path: Path) -> None:
    out = tmp_path / "report"
    options = LoadtestOptions(
        sessions=20,
        connections=2,
        duration=1.5,
        deltas=3,
        delta_delay_ms=5,
        spawn=True,
        progress=False,
        report_dir=out,
        sample_interval=0.25,
    )
    with trio.fail_after(60):
        report = await run_loadtest(options)
    assert report.clean and report.runs > 0
    assert sorted(p.name for p in out.iterdir()) == [
        "chart.svg",
        "report.json",
        "report.txt",
        "samples.csv",
    ]
    with (out / "samples.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == SAMPLE_COLUMNS
    assert len(rows) >= 4  # 1.5 s at 0.25 s, and the final one
    times = [float(r["t_s"]) for r in rows]
    assert times == sorted(times) and times[-1] >= 1.5
    assert int(rows[-1]["runs_done"]) == report.runs + report.runs_failed
    busy = [r for r in rows if int(r["latency_count"]) > 0]
    assert busy and all(
        float(r["latency_p50_ms"])
        <= float(r["latency_p95_ms"])
        <= float(r["latency_p99_ms"])
        <= float(r["latency_max_ms"])
        for r in busy
    )
    assert sum(int(r["latency_count"]) for r in rows) == report.events
    assert all(float(r["runs_per_s"]) >= 0 and r["gateway_rss_bytes"] for r in rows)
    root = ET.parse(out / "chart.svg").getroot()
    assert root.tag == f"{SVG}svg"
    names = {t.text for line in root.iter(f"{SVG}polyline") for t in line.iter(f"{SVG}title")}
    assert names == {"runs/s", "agent events/s", "chat events/s", "p50", "p95", "p99", "max"}
    assert json.loads((out / "report.json").read_text())["runs"] == report.runs
    assert "result: CLEAN" in (out / "report.txt").read_text()


def test_interval_quantiles_see_only_what_arrived_since_the_last_snapshot() -> None:
    hist = _Histogram()
    for ms in (500.0,) * 10:
        hist.add(ms)
    before = list(hist.buckets)
    for ms in [1.0] * 90 + [10.0] * 9 + [250.0]:
        hist.add(ms)
    count, (p50, p99), top = interval_quantiles(hist.buckets, before, (0.5, 0.99))
    assert count == 100
    assert p50 == pytest.approx(1.05) and p99 == pytest.approx(10.05) and top == 251.0
    assert interval_quantiles(hist.buckets, hist.buckets, (0.5,)) == (0, [0.0], 0.0)


def test_the_chart_draws_every_series_and_skips_intervals_without_latency() -> None:
    samples = [
        Sample(t, 10 * i, 100.0 * i, 500.0, 250.0, 5, 0, p, p, p, p, 1 if p else 0, 1, 50.0)
        for i, (t, p) in enumerate([(0.5, None), (1.0, 2.0), (1.5, 3.0)])
    ]
    svg = svg_chart(samples, "a <title> & more")
    root = ET.fromstring(svg)
    lines = {
        t.text: line.get("points", "")
        for line in root.iter(f"{SVG}polyline")
        for t in line.iter(f"{SVG}title")
    }
    assert len(lines["runs/s"].split()) == 3 and len(lines["p99"].split()) == 2
    assert "a &lt;title&gt; &amp; more" in svg


@pytest.mark.parametrize(
    ("done", "total", "elapsed", "duration", "expected"),
    [
        (50, 200, 10.0, None, (0.25, 30.0)),
        (0, 200, 1.0, None, (0.0, None)),
        (7, None, 3.0, 12.0, (0.25, 9.0)),
        (7, None, 3.0, None, (None, None)),
        (300, 200, 10.0, None, (1.0, 0.0)),
    ],
)
def test_progress_says_how_far_and_how_long(
    done: int,
    total: int | None,
    elapsed: float,
    duration: float | None,
    expected: tuple[float | None, float | None],
) -> None:
    assert progress_done(done, total, elapsed, duration) == expected


def test_eta_text() -> None:
    assert (_eta(None), _eta(9.4), _eta(125)) == ("ETA ?", "ETA 9s", "ETA 2:05")
