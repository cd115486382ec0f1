"""`scripts/bench --only paced`: the paced streaming workload against one embedded gateway.

N sessions each stream R runs of 20 deltas 50 ms apart (each delta one `agent` event to one
WebSocket client, and a `chat` delta at most every 150 ms) against a `clawlane gateway` child
process (SQLite, the local model) on a loopback port; the load is `clawlane loadtest --url` in
the bench process. Printed: delivered agent events/s ÷ demanded (N × 22 a second), and the
gateway's CPU per delivered agent event (its user + system time over the load, startup
excluded): the figure to compare between versions, as it moves less than a rate does when
other work shares the machine.

The gateway child imports what the bench process imports (it inherits `PYTHONPATH`), so two
versions compare from their own git worktrees with the same load:

    PYTHONPATH=/tmp/wt-before .venv/bin/python scripts/bench.py --only paced
    PYTHONPATH=/tmp/wt-after .venv/bin/python scripts/bench.py --only paced
"""

from __future__ import annotations

from typing import Any

import psutil

from transports import LoadtestOptions, LoadtestReport, run_loadtest, spawn_gateway_process

DELTAS = 20
DELAY_MS = 50


async def paced_figures(sessions: int, runs: int) -> tuple[LoadtestReport, dict[str, Any]]:
    """Run the paced workload once: (the load test's report, the gateway's CPU figures)."""
    async with spawn_gateway_process(max_concurrent=sessions) as (url, pid, token):
        proc = psutil.Process(pid)
        before = proc.cpu_times()
        report = await run_loadtest(
            LoadtestOptions(
                url=url,
                token=token,
                gateway_pid=pid,
                sessions=sessions,
                connections=max(1, sessions // 100),
                runs_per_session=runs,
                deltas=DELTAS,
                delta_delay_ms=DELAY_MS,
                run_timeout=600,
                progress=False,
            )
        )
        after = proc.cpu_times()
    user, system = after.user - before.user, after.system - before.system
    cpu = user + system
    figures = {
        "gateway_cpu_s": cpu,
        "gateway_user_s": user,
        "gateway_system_s": system,
        "us_per_agent_event": cpu / max(report.events, 1) * 1e6,
        "agent_events_per_cpu_s": report.events / max(cpu, 1e-9),
        "demanded_events_per_s": sessions * (DELTAS + 2) / (DELTAS * DELAY_MS / 1000),
    }
    return report, figures
