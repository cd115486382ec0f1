"""The `clawlane loadtest` arguments (`add_loadtest_parser`), apart from the load tool itself
(`_run`): the CLI builds every command's parser on each start, so this module imports only
argparse and the client's default URL.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Final

from ..client import DEFAULT_URL

DESCRIPTION: Final = (
    "`clawlane loadtest`: drive a gateway with many sessions over real WebSockets and report."
)


def add_loadtest_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `loadtest` to the `clawlane` subcommands."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "loadtest",
        help="drive a gateway with many sessions and report throughput, latency, losses",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--url",
        default=os.environ.get("CLAWLANE_GATEWAY_URL", DEFAULT_URL),
        help=f"gateway URL (default: $CLAWLANE_GATEWAY_URL or {DEFAULT_URL})",
    )
    p.add_argument("--token", default=None, help="gateway token (default: $CLAWLANE_GATEWAY_TOKEN)")
    p.add_argument("--sessions", type=int, default=100, help="concurrent sessions (default 100)")
    p.add_argument(
        "--connections",
        type=int,
        default=None,
        help="connections the sessions share (default: one per 100 sessions)",
    )
    p.add_argument(
        "--runs-per-session",
        type=int,
        default=None,
        help="runs each session makes, one after another (default 10; unlimited with --duration)",
    )
    p.add_argument("--deltas", type=int, default=8, help="assistant deltas per run (default 8)")
    p.add_argument(
        "--delta-delay-ms",
        type=float,
        default=0.0,
        help="model pause before each delta (default 0)",
    )
    p.add_argument(
        "--duration", type=float, default=None, help="keep starting runs for this many seconds"
    )
    p.add_argument(
        "--subscribers-per-run",
        type=int,
        default=0,
        help="extra connections watching every session (default 0)",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--spawn", action="store_true", help="run a gateway in this process")
    where.add_argument(
        "--spawn-process",
        action="store_true",
        help="run a gateway in a child process (its own CPU; the figures to quote)",
    )
    p.add_argument(
        "--gateway-pid", type=int, default=None, help="pid of the gateway, for its RSS and CPU"
    )
    p.add_argument(
        "--max-concurrent",
        type=int,
        default=None,
        help="a spawned gateway's agents.defaults.maxConcurrent (default: --sessions)",
    )
    p.add_argument("--run-timeout", type=float, default=300.0, help="seconds per run (default 300)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="DIR",
        help="write samples.csv, chart.svg (throughput and latency over time), report.json,"
        " report.txt (and the spawned gateway's log) into DIR",
    )
    p.add_argument(
        "--sample-interval",
        type=float,
        default=1.0,
        help="seconds between the --report samples (default 1)",
    )
    return p
