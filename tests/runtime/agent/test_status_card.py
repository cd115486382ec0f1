"""`session_status`'s card (`runtime.agent._status_card`) is laid out as OpenClaw 2026.9.6's
status message: its sections and lines for what clawlane knows of a session, and its duration,
age and time texts (compared with OpenClaw's own formatDurationCompact, formatTimeAgo and
resolveCronStyleNow under Node 24)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import msgspec

from runtime.agent._status_card import compact_duration, status_card, time_ago
from runtime.model._generation import build_generation
from runtime.sessions import SessionRow
from tests.conftest import local_config
from tests.runtime.tools._openclaw_node import imports, openclaw_exports, run_node

NOW = 1_796_692_800_000  # 2026-12-08 01:20:00 UTC, a Tuesday


def _row(**fields: object) -> SessionRow:
    base = SessionRow(
        key="agent:main:main",
        sessionId="s1",
        agentId="main",
        createdAt=NOW - 77_000,
        updatedAt=NOW - 5_000,
        inputTokens=10,
        outputTokens=26,
    )
    return msgspec.structs.replace(base, **fields)


def test_the_card_has_openclaws_sections_and_lines() -> None:
    gen = build_generation(local_config(agents__defaults__userTimezone="Europe/Paris"), 1)
    ref = gen.agent(None).primary
    card = status_card(gen, _row(), ref, ref, now_ms=NOW)
    head, model, usage, session, runtime = card.split("\n\n")
    version, current, reference, uptime = head.split("\n")
    assert re.fullmatch(r"🦞 clawlane \d+\.\d+\.\d+", version)
    assert current == "Current time: Tuesday, December 8th, 2026 - 2:20 AM (Europe/Paris)"
    assert reference == "Reference UTC: 2026-12-08 01:20 UTC"
    assert re.fullmatch(r"⏱️ Uptime: gateway \S+( \S+)? · system \S+( \S+)?", uptime)
    assert model == f"🧠 Model: {ref}"
    assert usage == "🧮 Tokens: 10 in / 26 out\n📚 Context: 10/128k (0%)"
    assert session == "🧵 Session: agent:main:main • duration 1m 17s • updated just now"
    assert runtime == (
        "⚙️ Execution: direct\n🤖 Runtime: OpenClaw Default\n"
        "🎛️ Modes: think off · fast off · elevated\n🪢 Queue: steer"
    )


def test_a_pinned_model_compactions_modes_and_queue_overrides_show() -> None:
    gen = build_generation(local_config(), 1)
    ref = gen.agent(None).primary
    row = _row(
        modelOverride="other",
        compactionCount=2,
        thinkingLevel="high",
        reasoningLevel="on",
        verboseLevel="full",
        queueMode="collect",
        queueDebounceMs=1500,
        contextTokens=300_000,
    )
    card = status_card(gen, row, "local/other", ref, now_ms=NOW)
    assert (
        f"🧠 Model: local/other · pinned session; config primary {ref} · clear /model default"
        in card
    )
    assert "📚 Context: 300k/200k (150%)\n🧹 Compactions: 2" in card
    assert "🎛️ Modes: think high · fast off · reasoning on · verbose:full · elevated" in card
    assert "🪢 Queue: collect (debounce 1.5s · cap 20 · drop summarize)" in card


async def test_durations_ages_and_times_are_openclaws(tmp_path: Path) -> None:
    found = openclaw_exports(
        ("format-duration-*.mjs", "formatDurationCompact"),
        ("format-relative-*.mjs", "formatTimeAgo"),
        ("current-time-*.mjs", "resolveCronStyleNow"),
    )
    rng = random.Random(2026)
    spans = [0, 1, 999, 1000, 1499, 1500, 2500, 59_999, 60_000, 89_999, 3_599_999, 86_400_000]
    spans += [rng.choice([rng.randrange(0, 10**4), rng.randrange(0, 10**9)]) for _ in range(300)]
    stamps = [NOW + rng.randrange(-(10**11), 10**11) for _ in range(60)]
    zones = ["UTC", "Europe/Paris", "America/Los_Angeles", "Asia/Kolkata"]
    data = f"const spans = {json.dumps(spans)}, stamps = {json.dumps(stamps)};\n"
    data += f"const zones = {json.dumps(zones)};\n"
    theirs = await run_node(
        tmp_path / "status.mjs",
        imports(found) + data + "process.stdout.write(JSON.stringify({\n"
        "  durations: spans.map((ms) => formatDurationCompact(ms, { spaced: true }) ?? null),\n"
        "  ages: spans.map((ms) => formatTimeAgo(ms)),\n"
        "  times: zones.flatMap((z) => stamps.map((t) => resolveCronStyleNow(\n"
        "    { agents: { defaults: { userTimezone: z } } }, t).timeLine)),\n"
        "}));\n",
    )
    gen = {z: build_generation(local_config(agents__defaults__userTimezone=z), 1) for z in zones}
    ref = gen["UTC"].agent(None).primary
    mine_times = []
    for zone in zones:
        for stamp in stamps:
            card = status_card(gen[zone], _row(), ref, ref, now_ms=stamp)
            mine_times.append("\n".join(card.split("\n")[1:3]))
    assert [compact_duration(ms) for ms in spans] == theirs["durations"]
    assert [time_ago(ms) for ms in spans] == theirs["ages"]
    assert mine_times == theirs["times"]
