#!/usr/bin/env python3
"""Generation publishes under load: publish latency, and what publishing costs the runs.

An in-process gateway (real WebSocket listener on loopback, the `local` model, the config
in a file) serves a load of S sessions, one `agent` run each, from C WebSocket clients (scoped
events, W runs in flight per client). The load runs twice on fresh gateways:

- baseline: no publishes;
- publishing: the same load while an admin client publishes P generations through
  `config.patch` (each one changes the catalog and the provider settings, so every publish
  builds new transports and retires old ones), spread evenly over the baseline's duration.

Printed: publish latency p50/p99 as the admin client sees it (`config.patch` round trip: read
the file, build, write, swap, announce) and inside the publisher (build + swap); runs/s with
publishes as a ratio to runs/s without (one run each, same process); failed runs (must be 0);
and how many generations the runs were spread over.

    .venv/bin/python scripts/bench_publish.py [--sessions 1000] [--publishes 100]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from runtime.model import load_config, write_config_text
from transports import GatewayClient, GatewayOptions, open_gateway, open_gateway_client


def config(max_concurrent: int) -> dict[str, Any]:
    return {
        "models": {
            "providers": {
                "local": {
                    "api": "local",
                    "models": [{"id": "echo"}],
                    "options": {"deltaDelayMs": 0, "rev": 0},
                }
            }
        },
        "agents": {"defaults": {"model": "local/echo", "maxConcurrent": max_concurrent}},
    }


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def run_load(
    url: str, *, sessions: int, clients: int, window: int, tag: str, token: str | None = None
) -> tuple[float, int, list[int]]:
    """Run one agent turn on each of `sessions` sessions; returns (seconds, failed, gens)."""
    failed = 0
    generations: list[int] = []
    next_session = 0

    async def worker(client: GatewayClient) -> None:
        nonlocal failed, next_session
        while next_session < sessions:
            n = next_session
            next_session += 1
            try:
                final = await client.request(
                    "agent",
                    {
                        "message": f"load run {n} [[deltas:4]]",
                        "sessionKey": f"bench-{tag}-{n}",
                        "idempotencyKey": f"{tag}-{n}",
                    },
                    expect_final=True,
                    timeout=120,
                )
            except Exception:
                failed += 1
                continue
            if final.get("status") != "ok":
                failed += 1
            else:
                generations.append(final["result"]["meta"]["generation"])

    async with contextlib.AsyncExitStack() as stack:
        conns = [
            await stack.enter_async_context(
                open_gateway_client(
                    url, token=token, client_id="cli", mode="cli", caps=["session-scoped-events"]
                )
            )
            for _ in range(clients)
        ]
        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for conn in conns:
                for _ in range(window):
                    nursery.start_soon(worker, conn)
        elapsed = time.perf_counter() - started
    return elapsed, failed, generations


async def phase(
    args: argparse.Namespace, *, publishes: int, spread_s: float, tag: str
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="clawlane-bench-") as tmp:
        path = Path(tmp) / "clawlane.json"
        write_config_text(path, json.dumps(config(args.max_concurrent)))
        options = GatewayOptions(port=0, state_dir=Path(tmp) / "state", config_path=path)
        async with open_gateway(load_config(path), options) as gw:
            port = gw.listeners[0].socket.getsockname()[1]
            url = f"ws://127.0.0.1:{port}"
            assert gw.publisher is not None
            publisher = gw.publisher
            client_ms: list[float] = []
            inner_ms: list[float] = []
            result: dict[str, Any] = {}

            async def load() -> None:
                result["seconds"], result["failed"], result["gens"] = await run_load(
                    url,
                    sessions=args.sessions,
                    clients=args.clients,
                    window=args.window,
                    tag=tag,
                    token=gw.auth.token,
                )

            async def publish() -> None:
                interval = spread_s / max(1, publishes)
                async with open_gateway_client(
                    url,
                    token=gw.auth.token,
                    client_id="cli",
                    mode="cli",
                    caps=["session-scoped-events"],
                ) as admin:
                    for i in range(1, publishes + 1):
                        await trio.sleep(interval)
                        snap = await admin.request("config.get", {})
                        patch = {
                            "models": {
                                "providers": {
                                    "local": {
                                        "models": [{"id": "echo"}, {"id": f"v{i}"}],
                                        "options": {"rev": i},
                                    }
                                }
                            }
                        }
                        t0 = time.perf_counter()
                        done = await admin.request(
                            "config.patch",
                            {
                                "raw": json.dumps(patch),
                                "baseHash": snap["hash"],
                                "replacePaths": ["models.providers.local.models"],
                            },
                        )
                        client_ms.append((time.perf_counter() - t0) * 1000)
                        assert done["changed"], done
                        latency = publisher.statistics().last_latency_ms
                        assert latency is not None
                        inner_ms.append(latency)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(load)
                if publishes:
                    nursery.start_soon(publish)
            stats = publisher.statistics()
            result.update(
                client_ms=client_ms,
                inner_ms=inner_ms,
                final_generation=gw.supervisor.generation.number,
                publish_failures=stats.failed,
                retired=stats.retired_providers,
            )
            return result


async def main(args: argparse.Namespace) -> int:
    base = await phase(args, publishes=0, spread_s=0, tag="base")
    loaded = await phase(args, publishes=args.publishes, spread_s=base["seconds"], tag="pub")
    base_rate = args.sessions / base["seconds"]
    pub_rate = args.sessions / loaded["seconds"]
    print(
        f"load: {args.sessions} sessions x 1 run, {args.clients} WebSocket clients x "
        f"{args.window} in flight, local model, maxConcurrent {args.max_concurrent}"
    )
    print(
        f"baseline:   {base_rate:8.1f} runs/s  ({base['seconds']:.2f} s), failed {base['failed']}"
    )
    print(
        f"publishing: {pub_rate:8.1f} runs/s  ({loaded['seconds']:.2f} s), failed {loaded['failed']}"
    )
    print(f"runs/s ratio (publishing / baseline): {pub_rate / base_rate:.3f}")
    c, i = loaded["client_ms"], loaded["inner_ms"]
    print(
        f"publishes: {len(c)} (failed builds: {loaded['publish_failures']}), "
        f"final generation {loaded['final_generation']}, retired transports {loaded['retired']}"
    )
    print(
        f"publish latency, config.patch round trip: p50 {statistics.median(c):.2f} ms, "
        f"p99 {pct(c, 99):.2f} ms, max {max(c):.2f} ms"
    )
    print(
        f"publish latency, build + swap in the publisher: p50 {statistics.median(i):.2f} ms, "
        f"p99 {pct(i, 99):.2f} ms"
    )
    gens = loaded["gens"]
    print(f"runs spread over {len(set(gens))} generations (each run reports exactly one)")
    failed = base["failed"] + loaded["failed"]
    if failed:
        print(f"FAILED RUNS: {failed}", file=sys.stderr)
        return 1
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--publishes", type=int, default=100)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--window", type=int, default=8, help="runs in flight per client")
    parser.add_argument("--max-concurrent", type=int, default=64)
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(trio.run(main, parse_args()))
