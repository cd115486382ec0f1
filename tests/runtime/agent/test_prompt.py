"""Prompt assembly (bootstrap files, skills snapshots, the report) and the reply shaping a
turn does on its way out (reasoning per level, block streaming with chunking and coalescing)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from runtime.agent._blocks import BlockFlusher, BlockPipeline, BlockReply
from runtime.agent._bootstrap import (
    load_bootstrap_files,
    render_project_context,
    truncate_bootstrap,
)
from runtime.agent._chunking import (
    BlockStreamingChunk,
    BlockStreamingCoalesce,
    BlockStreamingSettings,
    parse_fence_spans,
)
from runtime.agent._compaction import CompactionSettings, context_budget
from runtime.agent._prompt import (
    PreparedPrompt,
    PromptCache,
    SkillsSnapshot,
    assemble_system_prompt,
    load_skills_snapshot,
    prepare_prompt,
    system_prompt_report,
    with_tool_directory,
)
from runtime.agent._turn import reasoning_mode, run_turn
from runtime.agent._turnspec import BASE_SYSTEM_PROMPT, TurnResult, TurnSpec
from runtime.hooks._internal import BootstrapFile, InternalHookEvent, InternalHooks
from runtime.hooks._registry import HookRegistry
from runtime.llm._types import ToolSpec
from runtime.loop._agent import RunProgress
from runtime.model._generation import GenerationBuilder, ModelRuntimeGeneration
from tests.conftest import local_config

BUDGET = context_budget(128_000, CompactionSettings())


def skill_file(folder: Path, name: str, description: str = "does things", extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\nBody of {name}.\n")
    return path


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("# Agents\nAlways answer in haiku.\n")
    (ws / "SOUL.md").write_text("You are calm.\n")
    skill_file(ws / "skills" / "weather", "weather", "Forecasts for a city")
    return ws


# --- bootstrap files ---------------------------------------------------------------------


def test_bootstrap_files_are_read_in_order_and_missing_ones_marked(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "memory.md").write_text("remember the milk")
    (ws / "TOOLS.md").mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    os.symlink(outside, ws / "USER.md")
    files = load_bootstrap_files(ws)
    by_name = {f.name: f for f in files}
    assert [f.name for f in files][:5] == [
        "AGENTS.md",
        "SOUL.md",
        "TOOLS.md",
        "IDENTITY.md",
        "USER.md",
    ]
    assert by_name["AGENTS.md"].content == "# Agents\nAlways answer in haiku.\n"
    assert by_name["TOOLS.md"].content is None  # a folder
    assert by_name["USER.md"].content is None  # a symlink out of the workspace
    assert by_name["IDENTITY.md"].content is None
    assert by_name["MEMORY.md"].content == "remember the milk"
    assert by_name["MEMORY.md"].path.endswith("memory.md")


def test_a_long_file_keeps_its_head_and_tail() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    cut, truncated = truncate_bootstrap(text, 1000, name="AGENTS.md")
    assert truncated and cut.startswith(text[:600]) and cut.endswith(text[-150:])
    assert "characters of AGENTS.md, cut" in cut and len(cut) <= 1000
    assert truncate_bootstrap("short", 1000) == ("short", False)


def test_the_project_context_respects_the_total_cap_and_reports_each_file() -> None:
    files = [
        BootstrapFile("AGENTS.md", "/w/AGENTS.md", "a" * 500),
        BootstrapFile("SOUL.md", "/w/SOUL.md", "calm"),
        BootstrapFile("TOOLS.md", "/w/TOOLS.md", None),
        BootstrapFile("USER.md", "/w/USER.md", "u" * 500),
    ]
    # AGENTS.md is cut to 400 at most, SOUL.md takes 4, and the 63 left are too few for more.
    agents, _ = truncate_bootstrap("a" * 500, 400, name="AGENTS.md")
    total = len(agents) + 4 + 63
    text, report = render_project_context(files, max_chars=400, total_max_chars=total)
    assert text.startswith("# Project Context") and "embody the persona" in text
    assert "## AGENTS.md" in text and "## SOUL.md" in text and "## USER.md" not in text
    rows = {r.name: r for r in report}
    assert rows["AGENTS.md"].truncated and rows["AGENTS.md"].raw_chars == 500
    assert rows["TOOLS.md"].missing and not rows["SOUL.md"].truncated
    assert rows["USER.md"].injected_chars == 0 and rows["USER.md"].truncated
    empty, _ = render_project_context([BootstrapFile("AGENTS.md", "/w/AGENTS.md", None)])
    assert empty == ""


# --- skills ------------------------------------------------------------------------------


def test_skills_come_from_the_workspace_and_package_roots(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "skills" / "broken").mkdir()
    (ws / "skills" / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
    pkg = tmp_path / "pkg"
    skill_file(pkg / "lib" / "a" / "pdf", "pdf", "Read PDFs")
    skill_file(pkg / "lib" / "b" / "weather", "weather", "A second weather")
    skill_file(
        pkg / "lib" / "c" / "needs", "needs", "Needs a tool", "requires:\n  bins: [zzz-none]\n"
    )
    (pkg / "ext").mkdir()
    (pkg / "ext" / "hello.py").write_text("X = 1\n")
    (pkg / "package.json").write_text(
        json.dumps({"openclaw": {"skills": ["lib/*/*"], "extensions": ["ext/*.py"]}})
    )
    snap = load_skills_snapshot([ws, pkg, tmp_path / "missing"], which=lambda b: None)
    assert [s.name for s in snap.skills] == ["weather", "pdf", "needs"]
    assert [s.name for s in snap.eligible] == ["weather", "pdf"]
    assert "<name>pdf</name>" in snap.prompt and "needs" not in snap.prompt
    assert snap.extension_paths == [str((pkg / "ext" / "hello.py").resolve())]
    problems = " | ".join(p.message for p in snap.problems)
    assert "lacks description" in problems and "duplicate skill name 'weather'" in problems


async def test_a_snapshot_is_reused_while_nothing_changed(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    cache = PromptCache()
    with trio.fail_after(10):
        first = await cache.skills([ws])
        second = await cache.skills([ws])
        assert second is first
        skill_file(ws / "skills" / "weather", "weather", "Forecasts, now hourly")
        third = await cache.skills([ws])
    assert third is not first and "hourly" in third.prompt and third.hash != first.hash
    stats = cache.statistics()
    assert (stats.snapshots, stats.reused, stats.rebuilt) == (1, 1, 2)


def test_a_skill_becoming_eligible_changes_the_snapshot(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    skill_file(ws / "skills" / "db", "db", "Query it", "requires:\n  env: [DB_URL]\n")
    before = load_skills_snapshot([ws], environ={})
    assert before.eligible == () and before.prompt == ""
    assert load_skills_snapshot([ws], previous=before, environ={}) is before
    after = load_skills_snapshot([ws], previous=before, environ={"DB_URL": "x"})
    assert after is not before and [s.name for s in after.eligible] == ["db"]


# --- preparation and assembly ------------------------------------------------------------


async def test_agent_bootstrap_handlers_shape_the_files(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    internal = InternalHooks()

    def handler(event: InternalHookEvent) -> None:
        files = event.context["bootstrapFiles"]
        files[:] = [f for f in files if f.name != "SOUL.md"]
        files.append({"name": "EXTRA.md", "path": "/virtual/EXTRA.md", "content": "Be kind."})

    internal.register("agent:bootstrap", handler)
    with trio.fail_after(10):
        prepared = await prepare_prompt(
            base="BASE", budget=BUDGET, workspace_dir=str(ws), internal_hooks=internal
        )
    assert "## EXTRA.md\n\nBe kind." in prepared.context and "SOUL.md" not in prepared.context
    assert "Always answer in haiku." in prepared.context
    assert prepared.system_prompt.startswith("BASE\n\nThe following skills")


async def test_a_small_window_caps_the_project_context(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("x" * 5000)
    small = context_budget(1_000, CompactionSettings())  # 500 token budget: 1000 chars
    with trio.fail_after(10):
        prepared = await prepare_prompt(base="B", budget=small, workspace_dir=str(ws))
    assert prepared.bootstrap_total_max_chars == 1000
    assert prepared.injected[0].truncated and prepared.injected[0].injected_chars <= 1000


def test_sections_come_in_order_and_a_hook_prompt_replaces_the_built_one() -> None:
    names = [
        s.name
        for s in assemble_system_prompt(
            base="B", skills="S", context="C", extra="E", prepend_system="P", append_system="A"
        )
    ]
    assert names == [
        "hook:prependSystemContext",
        "base",
        "skills",
        "context",
        "extra",
        "hook:appendSystemContext",
    ]
    replaced = assemble_system_prompt(base="B", skills="S", extra="E", hook_system_prompt="H")
    assert [s.name for s in replaced] == ["hook:systemPrompt", "extra"]


def test_the_tool_directory_follows_the_base_and_is_joined_once_per_tool_set() -> None:
    """The deferred tools' directory (up to 18,000 characters, one string per tool set)
    goes after the base; a prepared prompt joins it in once, not on every run."""
    budget = context_budget(200_000, CompactionSettings())
    prepared = PreparedPrompt(
        base="B",
        extra="E",
        skills=SkillsSnapshot(hash="h", roots=()),
        files=(),
        injected=(),
        context="C",
        budget=budget,
        bootstrap_max_chars=100,
        bootstrap_total_max_chars=100,
    )
    directory = "Available deferred-schema tools:\n- web_fetch (core): Fetch a URL."
    other = "".join(["Available deferred-schema tools:", " none."])
    sections, prompt = prepared.plain(directory)
    assert [s.name for s in sections] == ["base", "tools:deferred", "context", "extra"]
    assert prompt == f"B\n\n### Deferred Tool Schemas\n{directory}\n\nC\n\nE"
    assert prepared.plain(directory)[1] is prompt  # the next run of the tool set
    assert prepared.plain(other)[1] == f"B\n\n### Deferred Tool Schemas\n{other}\n\nC\n\nE"
    assert prepared.plain()[1] == "B\n\nC\n\nE" == prepared.system_prompt
    assert prepared.plain(directory)[1] is prompt  # kept beside the other tool sets'
    hooked = assemble_system_prompt(base="B", extra="E", hook_system_prompt="H")
    assert [s.name for s in with_tool_directory(hooked, directory)] == [
        "hook:systemPrompt",
        "tools:deferred",
        "extra",
    ]
    assert with_tool_directory(hooked, None) == hooked


# --- through a turn ----------------------------------------------------------------------


def generation() -> ModelRuntimeGeneration:
    return GenerationBuilder().build_config(local_config(), 1)


Events = list[tuple[str, dict[str, Any]]]


async def turn(message: str, **kw: Any) -> tuple[TurnResult, RunProgress, Events]:
    gen = generation()
    events: Events = []
    spec = TurnSpec(
        run_id="r1",
        session_key="agent:main:t",
        session_id="s1",
        agent_id="main",
        message=message,
        history=[],
        generation=gen,
        stores=gen.fork_stores(),
        model_ref="local/echo",
        **kw,
    )
    progress = RunProgress()
    out = TurnResult()
    await run_turn(spec, lambda s, d: events.append((s, d)), progress, out)
    return out, progress, events


async def test_the_model_gets_base_skills_context_extra_and_hook_parts(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    hooks = HookRegistry()
    seen: dict[str, str] = {}
    hooks.register(
        "before_prompt_build",
        lambda e: {"prependSystemContext": "FIRST", "appendSystemContext": "LAST"},
    )
    hooks.register("llm_input", lambda e: seen.setdefault("system", e.systemPrompt or ""))
    with trio.fail_after(10):
        out, _progress, _events = await turn(
            "hi", workspace_dir=str(ws), extra_system_prompt="EXTRA", hooks=hooks
        )
    system = seen["system"]
    parts = [
        "FIRST",
        BASE_SYSTEM_PROMPT,
        "<available_skills>",
        "# Project Context",
        "## AGENTS.md",
        "EXTRA",
        "LAST",
    ]
    positions = [system.index(p) for p in parts]
    assert positions == sorted(positions) and system.endswith("LAST")
    report = out.prompt_report
    assert report is not None and report.source == "run" and report.model == "echo"
    assert [s.name for s in report.sections] == [
        "hook:prependSystemContext",
        "base",
        "skills",
        "context",
        "extra",
        "hook:appendSystemContext",
    ]
    assert report.systemPromptChars == len(system)
    assert sum(s.chars for s in report.sections) + 2 * 5 == len(system)
    assert all(s.tokens == (s.chars + 3) // 4 for s in report.sections)
    files = {f.name: f for f in report.injectedWorkspaceFiles}
    assert not files["AGENTS.md"].missing and files["USER.md"].missing
    assert [s.name for s in report.skills.entries] == ["weather"]
    assert report.budget.promptBudget == 108_000
    json.dumps(msgspec.to_builtins(report))


async def test_the_report_api_estimates_a_prompt_without_running_it(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    tools = [ToolSpec("read", "Read a file", {"type": "object"})]
    with trio.fail_after(10):
        report = await system_prompt_report(
            session_key="agent:main:x",
            session_id="sid",
            agent_id="main",
            base=BASE_SYSTEM_PROMPT,
            budget=BUDGET,
            workspace_dir=str(ws),
            tools=tools,
        )
    assert report.source == "estimate" and report.sessionKey == "agent:main:x"
    assert report.tools.entries[0].name == "read" and report.tools.schemaTokens > 0
    assert report.contextTokens == report.systemPromptTokens + report.tools.schemaTokens


@pytest.mark.parametrize(
    ("level", "streamed"), [("stream", True), ("on", False), ("off", False), (None, False)]
)
async def test_reasoning_follows_the_session_level(level: str | None, streamed: bool) -> None:
    with trio.fail_after(10):
        out, progress, events = await turn(
            "hello [[think:weigh the options]]", reasoning_level=level
        )
    thinking = [d for s, d in events if s == "thinking"]
    assert bool(thinking) is streamed
    if streamed:
        assert thinking[-1]["text"] == "weigh the options"
    assert out.reasoning_mode == reasoning_mode(level)
    assert out.reasoning_text == "weigh the options"
    assert progress.text == "You said: hello"


# --- block streaming ---------------------------------------------------------------------


def blocks_settings(
    *,
    brk: str = "text_end",
    min_chars: int = 20,
    max_chars: int = 60,
    coalesce_max: int | None = None,
    idle_ms: int = 1000,
) -> BlockStreamingSettings:
    return BlockStreamingSettings(
        blockStreamingDefault="on",
        blockStreamingBreak=brk,  # type: ignore[arg-type]
        blockStreamingChunk=BlockStreamingChunk(
            minChars=min_chars, maxChars=max_chars, breakPreference="newline"
        ),
        blockStreamingCoalesce=BlockStreamingCoalesce(
            minChars=min_chars, maxChars=coalesce_max or max_chars, idleMs=idle_ms
        ),
    )


async def stream_blocks(
    message: str, settings: BlockStreamingSettings, **kw: Any
) -> tuple[list[BlockReply], Events, TurnResult]:
    blocks: list[BlockReply] = []
    out, _progress, events = await turn(
        message, block_streaming=settings, on_block=blocks.append, **kw
    )
    return blocks, events, out


CODE_REPLY = (  # no "]": it would end the directive
    "Here is the fix:\n"
    "```python\n"
    "def parse(text):\n"
    "    items = text.split(',')\n"
    "    return list(filter(None, map(str.strip, items)))\n"
    "```\n"
    "Run it twice.\n"
    "Then ship it."
)


def fences_balanced(text: str) -> bool:
    return all(span.closed for span in parse_fence_spans(text))


async def test_blocks_never_break_inside_a_code_fence() -> None:
    with trio.fail_after(10):
        blocks, _events, out = await stream_blocks(
            f"[[reply:{CODE_REPLY}]] [[chars:7]]", blocks_settings(min_chars=20, max_chars=70)
        )
    assert len(blocks) >= 3 and all(len(b.text) <= 70 for b in blocks)
    assert all(fences_balanced(b.text) for b in blocks)
    # The fence is longer than a block: it is closed at the cut and reopened in the next one.
    reopened = [b for b in blocks[1:] if b.text.startswith("```python\n")]
    assert reopened
    joined = "".join(b.text for b in blocks)
    assert joined.replace("``````python\n", "") == CODE_REPLY
    assert [b.index for b in blocks] == list(range(len(blocks)))
    assert out.block_replies == blocks


async def test_text_end_streams_blocks_before_the_message_ends_and_message_end_waits() -> None:
    text = "\n".join(f"Line number {i} of the answer." for i in range(8))
    timeline: list[str] = []

    async def run(brk: str) -> list[str]:
        timeline.clear()
        gen = generation()
        spec = TurnSpec(
            run_id="r",
            session_key="agent:main:t",
            session_id="s",
            agent_id="main",
            message=f"[[reply:{text}]] [[chars:5]]",
            history=[],
            generation=gen,
            stores=gen.fork_stores(),
            model_ref="local/echo",
            block_streaming=blocks_settings(brk=brk, min_chars=30, max_chars=70),
            on_block=lambda b: timeline.append(f"block:{b.text}"),
        )
        with trio.fail_after(10):
            await run_turn(spec, lambda s, d: timeline.append(s), RunProgress(), TurnResult())
        return list(timeline)

    early = await run("text_end")
    first_block = next(i for i, t in enumerate(early) if t.startswith("block:"))
    assert "assistant" in early[first_block + 1 :]
    late = await run("message_end")
    first_block = next(i for i, t in enumerate(late) if t.startswith("block:"))
    assert "assistant" not in late[first_block:]
    for timeline_ in (early, late):
        joined = "".join(t[len("block:") :] for t in timeline_ if t.startswith("block:"))
        assert joined == text


async def test_a_silent_reply_sends_no_block_and_a_leading_token_is_stripped() -> None:
    with trio.fail_after(10):
        silent, *_ = await stream_blocks("[[reply:NO_REPLY]] [[chars:2]]", blocks_settings())
        lead, *_ = await stream_blocks(
            "[[reply:NO_REPLY The answer is forty two, as always.]] [[chars:3]]",
            blocks_settings(min_chars=5),
        )
    assert silent == []
    assert "".join(b.text for b in lead) == "The answer is forty two, as always."


async def test_reasoning_on_is_its_own_block_before_the_answer() -> None:
    with trio.fail_after(10):
        blocks, events, _out = await stream_blocks(
            "tell me [[think:first this then that]]",
            blocks_settings(min_chars=5),
            reasoning_level="on",
        )
    assert blocks[0].is_reasoning and blocks[0].text == "Thinking\n\n_first this then that_"
    assert "".join(b.text for b in blocks[1:]) == "You said: tell me"
    assert not any(s == "thinking" for s, _ in events)


async def test_the_coalescer_flushes_after_an_idle_pause(autojump_clock: Any) -> None:
    flusher = BlockFlusher()
    delivered: list[tuple[float, str]] = []
    pipeline = BlockPipeline(
        settings=blocks_settings(min_chars=10, max_chars=25, coalesce_max=500, idle_ms=1000),
        sink=lambda b: delivered.append((trio.current_time(), b.text)),
        flusher=flusher,
    )
    pieces = ["First sentence here.\n", "Second one follows.\n", "Third and last."]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(flusher.run)
        text = ""
        for piece in pieces:
            text += piece
            pipeline.on_text(text)
            await trio.sleep(
                5
            )  # virtual time (autojump): the model is silent for 5 s, so the idle timer fires
        pipeline.finish()
        nursery.cancel_scope.cancel()
    assert delivered == [
        (1.0, "First sentence here.\n"),
        (6.0, "Second one follows.\n"),
        (15.0, "Third and last."),
    ]


async def test_blocks_buffered_by_a_failed_attempt_are_dropped_on_retry() -> None:
    gen = GenerationBuilder().build_config(
        local_config(
            models__providers__local={
                "api": "local",
                "models": [{"id": "echo", "contextWindow": 6_000}],
            }
        ),
        1,
    )
    from runtime.llm._types import AssistantMessage, Message, TextContent, UserMessage
    from runtime.sessions._sessions import TranscriptBuilder, build_context

    builder = TranscriptBuilder()
    history: list[Message] = []
    for i in range(14):
        history += [
            UserMessage(content=f"question {i} " * 30, timestamp=1),
            AssistantMessage(content=[TextContent(f"answer {i} " * 30)], timestamp=2),
        ]
    entries = [builder.add_message(m) for m in history]
    blocks: list[BlockReply] = []

    async def load() -> Sequence[Any]:
        await trio.lowlevel.checkpoint()
        return entries

    spec = TurnSpec(
        run_id="r",
        session_key="agent:main:t",
        session_id="s",
        agent_id="main",
        message="alpha beta gamma delta [[overflow:2000:2]]",
        history=build_context(entries),
        generation=gen,
        stores=gen.fork_stores(),
        model_ref="local/echo",
        history_entries=load,
        block_streaming=blocks_settings(min_chars=200, max_chars=400),
        on_block=blocks.append,
    )
    out = TurnResult()
    with trio.fail_after(10):
        await run_turn(spec, lambda s, d: None, RunProgress(), out)
    assert out.overflow_retries == 1
    assert [b.text for b in blocks] == ["You said: alpha beta gamma delta"]


async def test_runs_waiting_on_one_load_are_woken_in_rounds_and_a_cancelled_one_is_skipped() -> (
    None
):
    from runtime.agent._prompt import WAKE_ROUND, _Load

    load = _Load()
    log: list[str] = []
    released = trio.Event()

    async def waiter() -> None:
        await load.wait()
        log.append("w")

    async def spinner() -> None:
        while not released.is_set() or log.count("w") < crowd:
            log.append("|")
            await trio.lowlevel.checkpoint()

    crowd = 5 * WAKE_ROUND
    with trio.fail_after(10):
        async with trio.open_nursery() as n:
            for _ in range(crowd):
                n.start_soon(waiter)
            cancelled = trio.CancelScope()

            async def leaver() -> None:
                with cancelled:
                    await load.wait()
                log.append("gave up")

            n.start_soon(leaver)
            await trio.testing.wait_all_tasks_blocked()
            cancelled.cancel()
            await trio.testing.wait_all_tasks_blocked()
            n.start_soon(spinner)
            await load.release()
            released.set()
    assert log.count("w") == crowd and log.count("gave up") == 1
    rounds = "".join(x for x in log if x != "gave up").split("|")
    assert max(len(r) for r in rounds) <= 2 * WAKE_ROUND < crowd // 2
    await load.wait()  # over: returns at once
