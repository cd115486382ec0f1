"""What OpenTelemetry costs the runs benchmark (`diagnostics.otel`, runtime.telemetry):
`clawlane loadtest` (1,000 sessions on 16 connections, 4 deltas a run) against a
`clawlane gateway` child process with telemetry off (the default), on with every signal
sent to a collector that takes everything (a child process answering 200), and on aimed at
a collector that is down (a loopback port nothing listens on), alternated `--rounds` times;
prints the median runs/s and the gateway's peak RSS of each, and the ratios. A dead
collector must cost the runs nothing more than a live one, and RSS stays bounded (the
span queue drops with a counter). Usage: .venv/bin/python scripts/bench_otel.py [--rounds 2]
[--runs-per-session 2] [--json]"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
from typing import Any

import trio

from transports.loadtest import LoadtestOptions, run_loadtest, spawn_gateway_process

_SINK = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""
"""A collector that takes everything and answers 200 (a child process)."""


def _dead_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


async def _one(extra: dict[str, Any], runs_per_session: int) -> tuple[float, int, bool]:
    async with spawn_gateway_process(max_concurrent=1000, config_extra=extra) as (url, pid, tok):
        report = await run_loadtest(
            LoadtestOptions(
                url=url,
                token=tok,
                gateway_pid=pid,
                sessions=1000,
                connections=16,
                runs_per_session=runs_per_session,
                deltas=4,
                progress=False,
            )
        )
    return report.runs_per_s, report.gateway_peak_rss_bytes or 0, report.clean


async def _bench(args: argparse.Namespace, live_url: str) -> dict[str, dict[str, Any]]:
    otel = {"enabled": True, "logs": True}
    variants: dict[str, dict[str, Any]] = {
        "off": {},
        "live collector": {"diagnostics": {"otel": {**otel, "endpoint": live_url}}},
        "dead collector": {"diagnostics": {"otel": {**otel, "endpoint": _dead_endpoint()}}},
    }
    figures: dict[str, list[tuple[float, int, bool]]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, extra in variants.items():
            figures[name].append(await _one(extra, args.runs_per_session))
    return {
        name: {
            "runs_per_s": statistics.median(f[0] for f in got),
            "peak_rss_mib": max(f[1] for f in got) / 2**20,
            "clean": all(f[2] for f in got),
        }
        for name, got in figures.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runs-per-session", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sink = subprocess.Popen([sys.executable, "-c", _SINK], stdout=subprocess.PIPE, text=True)
    try:
        assert sink.stdout is not None
        live_url = f"http://127.0.0.1:{int(sink.stdout.readline())}"
        result = trio.run(_bench, args, live_url)
    finally:
        sink.kill()
        sink.wait()
    if args.json:
        print(json.dumps(result))
        return
    print(f"clawlane bench_otel: load average {os.getloadavg()[0]:.2f}, {args.rounds} round(s)")
    for name, r in result.items():
        print(
            f"  {name:<16} {r['runs_per_s']:>8,.0f} runs/s   peak RSS {r['peak_rss_mib']:.1f} MiB"
            f"   {'clean' if r['clean'] else 'PROBLEMS'}"
        )
    rate = {name: r["runs_per_s"] for name, r in result.items()}
    print(f"  live collector ÷ off: {rate['live collector'] / rate['off']:.2f} (the SDK's cost)")
    print(
        f"  dead collector ÷ live collector: {rate['dead collector'] / rate['live collector']:.2f}"
        " (≥ 0.90: a collector that is down costs the runs nothing more)"
    )


if __name__ == "__main__":
    main()
