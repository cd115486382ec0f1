"""The publisher with a real supervisor, store and files: hot reload, broken edits, auth
store and plugin changes, retiring transports, and generations swapped under load (many
publishes, some failing, interleaved with many runs).

Events are caught by an in-memory hub subscriber, in addition to the socket tests in
tests/e2e/test_config_methods.py."""

from __future__ import annotations

import gc
import json
import logging
import os
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from actors import RunRecord, Supervisor, open_store, open_supervisor
from actors._publisher import GENERATION_EVENT, Publisher
from runtime.hooks._registry import HookRegistry
from runtime.llm._types import ModelDelta, ModelProvider, ModelRequest, TextDelta
from runtime.model._config import ProviderConfig, auth_profiles_path, load_config, write_config_text
from runtime.model._generation import GenerationBuilder, GenerationError, default_provider_factory
from runtime.model._plugins import load_plugins
from tests.actors._helpers import submit


class Sink:
    """A hub subscriber that decodes what it gets."""

    conn_id = "sink"
    wants_tool_events = False

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    def push_event(self, frame: bytes) -> None:
        self.frames.append(msgspec.json.decode(frame))

    def generation_events(self) -> list[dict[str, Any]]:
        return [f["payload"] for f in self.frames if f["event"] == GENERATION_EVENT]

    def deltas(self, run_id: str) -> list[str]:
        return [
            f["payload"]["data"]["delta"]
            for f in self.frames
            if f["event"] == "agent"
            and f["payload"]["runId"] == run_id
            and f["payload"]["stream"] == "assistant"
        ]


class Tagged:
    """A provider double tagged by its config (`options.tag`): each turn streams the tag three
    times with checkpoints between, so publishes interleave with runs."""

    api = "local"

    def __init__(self, pid: str, tag: str) -> None:
        self.id = pid
        self.tag = tag
        self.closed = False
        self.hold: trio.Event | None = None  # when set: wait for it after the first delta

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        return self._stream()

    async def _stream(self) -> AsyncIterator[ModelDelta]:
        for i in range(3):
            if i == 1 and self.hold is not None:
                await self.hold.wait()
            await trio.lowlevel.checkpoint()
            yield TextDelta(f"[{self.tag}]")

    async def aclose(self) -> None:
        self.closed = True
        await trio.lowlevel.checkpoint()


MADE: list[Tagged] = []


def tagging_factory(pid: str, pconf: ProviderConfig) -> ModelProvider:
    tag = (pconf.options or {}).get("tag")
    if isinstance(tag, str):
        provider = Tagged(pid, tag)
        MADE.append(provider)
        return provider
    return default_provider_factory(pid, pconf)


def tagged(
    tag: str, *, models: tuple[str, ...] = ("echo",), primary: str = "local/echo"
) -> dict[str, Any]:
    return {
        "models": {
            "providers": {
                "local": {
                    "api": "local",
                    "models": [{"id": m} for m in models],
                    "options": {"tag": tag},
                }
            }
        },
        "agents": {"defaults": {"model": primary, "maxConcurrent": 32}},
    }


@asynccontextmanager
async def publishing(
    tmp_path: Path, raw: dict[str, Any] | None, *, watch: bool = True, **kw: Any
) -> AsyncIterator[tuple[Supervisor, Publisher, Sink, Path]]:
    config_path = tmp_path / "clawlane.json"
    if raw is not None:
        write_config_text(config_path, json.dumps(raw, indent=2))
    builder = GenerationBuilder(state_dir=tmp_path / "state", provider_factory=tagging_factory)
    async with (
        open_store(tmp_path / "db.sqlite") as store,
        open_supervisor(
            # Not kept in a local: generation 1 must be free to retire once replaced.
            generation=builder.build_config(load_config(config_path), 1),
            store=store,
            workspace_root=tmp_path / "ws",
        ) as sup,
    ):
        sink = Sink()
        sup.hub.attach(sink, scoped=False, can_read=True)
        publisher = Publisher(sup, builder=builder, config_path=config_path, **kw)
        async with trio.open_nursery() as nursery:
            if watch:
                await nursery.start(publisher.run)
            else:
                await publisher.prime()
            yield sup, publisher, sink, config_path
            nursery.cancel_scope.cancel()


def edit(path: Path, raw: dict[str, Any] | str) -> None:
    """Rewrite a watched file so that its stat fingerprint surely changes."""
    text = raw if isinstance(raw, str) else json.dumps(raw)
    before = path.stat() if path.exists() else None
    write_config_text(path, text)
    if before is not None and path.stat().st_mtime_ns == before.st_mtime_ns:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))


# --- hot reload -------------------------------------------------------------------------------
# Virtual time (MockClock without autojump: the store's worker threads and autojump do not
# mix), moved by hand once every task is blocked.


async def advance_until(clock: Any, done: Any, *, step: float = 0.05, limit: float = 30.0) -> float:
    """Jump the clock by `step` whenever everything is blocked, until `done()`; returns the
    virtual time that took."""
    start = trio.current_time()
    while True:
        await trio.testing.wait_all_tasks_blocked()
        if done():
            return trio.current_time() - start
        assert trio.current_time() - start < limit, "not done within the virtual time limit"
        clock.jump(step)


async def test_editing_the_config_file_publishes_within_the_debounce(
    tmp_path: Path, mock_clock: Any
) -> None:
    with trio.fail_after(60):
        async with publishing(
            tmp_path, tagged("g1"), build_in_thread=False, poll_interval_s=0.5, debounce_s=0.3
        ) as (sup, publisher, sink, path):
            assert sup.generation.number == 1
            edit(path, tagged("g2", models=("echo", "extra")))
            elapsed = await advance_until(mock_clock, lambda: sup.generation.number == 2)
            assert {e.id for e in sup.generation.catalog} == {"echo", "extra"}
            step = 0.05  # advance_until's granularity (each timer may fire one step late)
            assert publisher.debounce_s <= elapsed
            assert elapsed <= publisher.poll_interval_s + publisher.debounce_s + 2 * step
            [event] = sink.generation_events()
            assert event["status"] == "published" and event["reason"] == "file"
            assert event["generation"]["number"] == 2 and event["previous"] == 1
            assert publisher.status_view()["lastReason"] == "file"


async def test_a_burst_of_edits_publishes_once_after_it_settles(
    tmp_path: Path, mock_clock: Any
) -> None:
    with trio.fail_after(60):
        async with publishing(
            tmp_path, tagged("g1"), build_in_thread=False, poll_interval_s=0.5, debounce_s=0.3
        ) as (sup, _publisher, sink, path):
            for i in range(8):  # an edit every 0.2 s for 1.6 s: never quiet for 0.3 s
                edit(path, tagged(f"burst{i}"))
                await trio.testing.wait_all_tasks_blocked()
                mock_clock.jump(0.2)
            assert sup.generation.number == 1
            await advance_until(mock_clock, lambda: sup.generation.number == 2)
            assert [e["status"] for e in sink.generation_events()] == ["published"]
            assert sup.generation.config.models.providers["local"].options == {"tag": "burst7"}


async def test_a_broken_edit_keeps_the_old_generation_and_reports_it(
    tmp_path: Path, mock_clock: Any, caplog: Any
) -> None:
    caplog.set_level(logging.ERROR)
    with trio.fail_after(60):
        async with publishing(tmp_path, tagged("g1"), build_in_thread=False) as (
            sup,
            publisher,
            sink,
            path,
        ):
            broken = tagged("g2")
            broken["gateway"] = {"port": "not a port"}
            edit(path, broken)
            await advance_until(mock_clock, lambda: publisher.last_error is not None)
            assert sup.generation.number == 1
            error = publisher.last_error
            assert error is not None and error.path == "gateway.port" and error.serving == 1
            [event] = sink.generation_events()
            assert event["status"] == "failed" and event["reason"] == "file"
            assert event["error"]["path"] == "gateway.port"
            assert event["generation"]["number"] == 1
            assert publisher.status_view()["lastError"]["path"] == "gateway.port"
            assert "generation build failed reason=file serving=1 path=gateway.port" in caplog.text
            # Reported once, not on every poll.
            mock_clock.jump(5)
            await trio.testing.wait_all_tasks_blocked()
            assert publisher.statistics().failed == 1
            # A run still gets generation 1.
            record = await submit(sup, "s", "r1", "hi")
            await record.done.wait()
            assert record.final is not None and record.final["meta"]["generation"] == 1
            # The fix publishes and clears the error.
            edit(path, tagged("g2"))
            await advance_until(mock_clock, lambda: sup.generation.number == 2)
            assert publisher.last_error is None


async def test_a_build_failure_is_reported_too(tmp_path: Path, mock_clock: Any) -> None:
    with trio.fail_after(60):
        async with publishing(tmp_path, tagged("g1"), build_in_thread=False) as (
            sup,
            publisher,
            _sink,
            path,
        ):
            edit(path, tagged("g2", primary="local/missing"))
            await advance_until(mock_clock, lambda: publisher.last_error is not None)
            assert sup.generation.number == 1
            assert publisher.last_error is not None
            assert "unknown model 'local/missing'" in publisher.last_error.message


async def test_touching_a_file_without_changing_it_publishes_nothing(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with publishing(tmp_path, tagged("g1"), watch=False, debounce_s=0) as (
            sup,
            publisher,
            sink,
            path,
        ):
            os.utime(path, ns=(1, 1))
            await publisher.poll_once()
            assert sup.generation.number == 1 and publisher.statistics().unchanged >= 1
            assert sink.generation_events() == []


async def test_a_missing_config_file_can_appear_later(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with publishing(tmp_path, None, watch=False, debounce_s=0) as (
            sup,
            publisher,
            _sink,
            path,
        ):
            assert not path.exists() and sup.generation.number == 1
            edit(path, tagged("new"))
            await publisher.poll_once()
            assert sup.generation.number == 2


# --- auth profile stores and plugins ------------------------------------------------------------


def remote_primary() -> dict[str, Any]:
    return {
        "models": {
            "providers": {
                "acme": {
                    "api": "openai-completions",
                    "baseUrl": "https://llm.acme.example/v1",
                    "models": [{"id": "big"}],
                },
            }
        },
        "agents": {"defaults": {"model": "acme/big"}},
    }


async def test_an_auth_store_change_republishes_and_its_removal_is_refused(tmp_path: Path) -> None:
    store = auth_profiles_path(tmp_path / "state", "main")
    store.parent.mkdir(parents=True)
    store.write_text(
        json.dumps({"profiles": {"acme:1": {"type": "api_key", "provider": "acme", "key": "k1"}}})
    )
    with trio.fail_after(10):
        async with publishing(tmp_path, remote_primary(), watch=False, debounce_s=0) as (
            sup,
            publisher,
            sink,
            _,
        ):
            assert str(store) in publisher.statistics().watching
            first = sup.generation.agent_generations["main"].auth.credential("acme")
            assert first is not None and first.secret == "k1"
            edit(
                store,
                {"profiles": {"acme:1": {"type": "api_key", "provider": "acme", "key": "k2"}}},
            )
            await publisher.poll_once()
            assert sup.generation.number == 2
            second = sup.generation.agent_generations["main"].auth.credential("acme")
            assert second is not None and second.secret == "k2"
            assert sink.generation_events()[-1]["reason"] == "auth-profiles"
            store.unlink()
            await publisher.poll_once()
            assert sup.generation.number == 2  # the primary would have no auth: refused
            assert (
                publisher.last_error is not None and "has no auth" in publisher.last_error.message
            )


PLUGIN = textwrap.dedent(
    """
    from runtime.plugin_sdk import HarnessSpec, PluginApi

    PLUGIN_ID = "pub-test"


    async def run(inp, emit, progress):
        return progress


    def register(api: PluginApi) -> None:
        api.register_harness(HarnessSpec(id="pub-harness", supports=lambda r: True,
                                         priority=1, run=run))
    """
)


async def test_a_plugin_registration_republishes(tmp_path: Path) -> None:
    plugin = tmp_path / "pub_test_plugin.py"
    plugin.write_text(PLUGIN)
    with trio.fail_after(10):
        async with publishing(tmp_path, tagged("g1"), watch=False) as (sup, publisher, sink, _):
            [loaded] = await load_plugins([plugin], HookRegistry(), sup.plugins)
            assert loaded.ok
            await publisher.poll_once()
            assert sup.generation.number == 2 and "pub-harness" in sup.generation.harnesses.ids()
            assert sup.generation.plugin_version == sup.plugins.version
            assert sup.generation.agent_generations["main"].primary_runtime == "pub-harness"
            assert sink.generation_events()[-1]["reason"] == "plugins"
            sup.plugins.unload_plugin("pub-test")
            await publisher.poll_once()
            assert sup.generation.number == 3 and sup.generation.harnesses.ids() == ("openclaw",)


# --- transports are retired with their last generation -----------------------------------------


async def test_a_retired_transport_is_closed_once_no_run_holds_its_generation(
    tmp_path: Path,
) -> None:
    with trio.fail_after(10):
        async with publishing(tmp_path, tagged("first"), watch=False) as (sup, publisher, _s, _p):
            first = sup.generation.providers["local"]
            await publisher.publish_config(load_config_from(tagged("old")), reason="test")
            old = sup.generation.providers["local"]
            assert isinstance(first, Tagged) and isinstance(old, Tagged)
            old.hold = trio.Event()
            record = await submit(sup, "held", "held", "x")  # holds generation 2...
            await trio.testing.wait_all_tasks_blocked()
            await publisher.publish_config(load_config_from(tagged("new")), reason="test")
            new = sup.generation.providers["local"]
            assert isinstance(new, Tagged) and new is not old
            gc.collect()
            await publisher.sweep()
            assert not is_closed(old) and record.generation == 2
            old.hold.set()
            await record.done.wait()  # ...until it ends
            assert record.status == "ok"
            gc.collect()
            await publisher.sweep()
            assert is_closed(first) and is_closed(old) and not is_closed(new)
            assert publisher.statistics().retired_providers >= 1
            # Unchanged provider settings keep the same transport (and its connections).
            same = {**tagged("new"), "messages": {"queue": {"cap": 3}}}
            await publisher.publish_config(load_config_from(same), reason="test")
            assert sup.generation.number == 4 and sup.generation.providers["local"] is new


def is_closed(provider: Tagged) -> bool:
    return provider.closed


def load_config_from(raw: dict[str, Any]) -> Any:
    from runtime.model._config import parse_config

    return parse_config(raw)


# --- many publishes, some failing, interleaved with many runs -------------------------------------


async def test_every_run_sees_exactly_one_complete_generation(tmp_path: Path) -> None:
    # One session per run: queue modes (steer, collect) would merge runs of a busy session.
    PUBLISHES, RUNS, SESSIONS = 40, 240, 240
    tags: dict[int, str] = {1: "t0"}
    catalogs: dict[int, frozenset[str]] = {1: frozenset({"echo"})}
    failed_tags: set[str] = set()
    records: list[RunRecord] = []
    seen_catalogs: list[tuple[int, frozenset[str]]] = []
    with trio.fail_after(60):
        async with publishing(tmp_path, tagged("t0"), watch=False) as (sup, publisher, sink, _):

            async def publish_many() -> None:
                for i in range(1, PUBLISHES + 1):
                    models = ("echo", *(f"m{i}-{k}" for k in range(3)))
                    if i % 4 == 0:
                        raw = tagged(f"bad{i}", models=models, primary="local/nope")
                        failed_tags.add(f"bad{i}")
                        with pytest.raises(GenerationError):
                            await publisher.publish_config(load_config_from(raw), reason="test")
                    else:
                        gen = await publisher.publish_config(
                            load_config_from(tagged(f"t{i}", models=models)), reason="test"
                        )
                        tags[gen.number] = f"t{i}"
                        catalogs[gen.number] = frozenset(models)
                    await trio.lowlevel.checkpoint()

            async def run_many() -> None:
                for n in range(RUNS):
                    records.append(await submit(sup, f"s{n % SESSIONS}", f"run{n}", "go"))
                    await trio.lowlevel.checkpoint()

            async def read_catalogs() -> None:
                while len(records) < RUNS or not all(r.done.is_set() for r in records):
                    gen = sup.generation
                    seen_catalogs.append((gen.number, frozenset(e.id for e in gen.catalog)))
                    # A sampler's pace, 1 kHz: spinning on checkpoints held the GIL from the
                    # store's thread between its switch intervals (86 s on a slow day).
                    await trio.sleep(0.001)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(publish_many)
                nursery.start_soon(run_many)
                nursery.start_soon(read_catalogs)
            for r in records:
                await r.done.wait()

            numbers = [n for n in sorted(tags)]
            assert numbers == list(range(1, len(numbers) + 1))  # failed builds took no number
            assert sup.generation.number == len(numbers)
            used: set[int] = set()
            for r in records:
                assert r.status == "ok", (r.run_id, r.error)
                assert r.final is not None
                generation = r.final["meta"]["generation"]
                assert generation == r.generation and generation in tags
                used.add(generation)
                # Every delta of the run came from that generation's transports.
                assert sink.deltas(r.run_id) == [f"[{tags[generation]}]"] * 3
            assert len(used) > 1, "runs should have spanned several generations"
            all_deltas = {d for r in records for d in sink.deltas(r.run_id)}
            assert not any(f"[{t}]" in all_deltas for t in failed_tags)
            # Readers only ever saw a complete catalog of a published generation.
            assert len({number for number, _ in seen_catalogs}) > 1  # the sampler saw swaps
            for number, catalog in seen_catalogs:
                assert catalog == catalogs[number]
            statuses = [e["status"] for e in sink.generation_events()]
            assert statuses.count("failed") == PUBLISHES // 4
            assert statuses.count("published") == PUBLISHES - PUBLISHES // 4
