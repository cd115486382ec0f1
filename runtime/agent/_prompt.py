"""Prompt assembly: a run's system prompt, its parts, and a report of them for admins.

The system prompt of a run, in order:

1. the base prompt (`TurnSpec.system_prompt`);
2. the skills prompt: the skills found under `<workspace>/skills` (and the rest of the
   workspace's resource manifest) and under any configured resource package roots, those
   whose requirements are met here, listed as `skills_prompt` writes them;
3. the project context: the workspace's bootstrap files (`AGENTS.md`, `SOUL.md`, `TOOLS.md`,
   `IDENTITY.md`, `USER.md`, `HEARTBEAT.md`, `BOOTSTRAP.md`, `MEMORY.md`), after the
   `agent:bootstrap` internal hooks had their say (they may add, drop or rewrite files), each
   cut to `bootstrapMaxChars` (head 70 %, tail 20 %) and all together to the total cap
   (`_bootstrap`);
4. the per-run `extraSystemPrompt`;

and around it the `before_prompt_build` contributions, merged by `run_turn`:
`prependSystemContext` first, `systemPrompt` replacing 1–3, `appendSystemContext` last.

Model limits: the prompt budget is the context window minus the compaction reserve
(`ContextBudget.prompt_budget`); the project context may take at most half of it.

Skills snapshots: `PromptCache` keeps one `SkillsSnapshot` per set of roots and hands the same
object back while the files and the eligibility of every skill are unchanged
(`ResourceSet.snapshot_hash`), so the skills prompt of a session stays byte-identical between
runs. Extensions found in the manifests are plugins: the snapshot lists their paths for the
plugin loader, nothing here imports them.

`SystemPromptReport` (`_prompt_report`; built by `system_prompt_report` and
`PreparedPrompt.report`) lists the sections of a system prompt with their sizes and token
estimates, the injected files, the skills, the tool schemas, and the budget: what `/context`
shows.

Blocking file I/O (`_bootstrap.load_bootstrap_files`, `load_skills_snapshot`) runs in worker
threads from the async entry points (`prepare_prompt`, `PromptCache.skills`), which are
checkpoints.
Nothing here raises for missing or unreadable files: they are reported instead.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, Literal

import attrs
import trio

from ..hooks._internal import BootstrapFile, InternalHooks
from ..llm._types import Message, ToolSpec
from ._bootstrap import (
    DEFAULT_BOOTSTRAP_MAX_CHARS,
    DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS,
    InjectedFile,
    load_bootstrap_files,
    render_project_context,
)
from ._compaction import ContextBudget, estimate_context_tokens, estimate_text_tokens
from ._prompt_report import (
    ReportBudget,
    ReportFile,
    ReportProblem,
    ReportSection,
    ReportSkill,
    ReportSkills,
    SystemPromptReport,
    skill_block_chars,
    tools_report,
)
from ._resources import (
    ExtensionResource,
    PromptTemplate,
    ResourceProblem,
    Skill,
    discover_resources,
    skills_prompt,
)

__all__ = [
    "PreparedPrompt",
    "PromptCache",
    "PromptCacheStatistics",
    "PromptSection",
    "SkillsSnapshot",
    "assemble_system_prompt",
    "join_sections",
    "load_skills_snapshot",
    "prepare_prompt",
    "system_prompt_report",
    "with_tool_directory",
]

WAKE_ROUND: Final = 64  # runs woken per scheduler round when a shared load is done
_PLAIN_MAX: Final = 8  # the plain prompts a prepared prompt keeps (one per tool directory)


# --- skills ------------------------------------------------------------------------------


@attrs.frozen
class SkillsSnapshot:
    """The skills (and other resources) of a run, from every root, first name wins.

    `eligible` are the skills whose requirements are met here; `prompt` lists them.
    `extensions` are plugin paths for the plugin loader. `hash` covers every file read and
    which skills are eligible.
    """

    hash: str
    roots: tuple[Path, ...]
    skills: tuple[Skill, ...] = ()
    eligible: tuple[Skill, ...] = ()
    prompt: str = ""
    prompts: tuple[PromptTemplate, ...] = ()
    extensions: tuple[ExtensionResource, ...] = ()
    problems: tuple[ResourceProblem, ...] = ()

    @property
    def extension_paths(self) -> list[str]:
        return [str(e.path) for e in self.extensions]


def load_skills_snapshot(
    roots: Sequence[Path],
    *,
    previous: SkillsSnapshot | None = None,
    environ: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> SkillsSnapshot:
    """Discover the resources of every root (missing roots are skipped) and return their
    snapshot; `previous` itself when nothing changed. Blocking file I/O."""
    environ = os.environ if environ is None else environ
    digest = hashlib.sha256()
    skills: list[Skill] = []
    prompts: list[PromptTemplate] = []
    extensions: list[ExtensionResource] = []
    problems: list[ResourceProblem] = []
    names: dict[str, Path] = {}
    prompt_names: set[str] = set()
    for root in roots:
        if not root.is_dir():
            continue
        found = discover_resources(root)
        digest.update(str(found.root).encode() + b"\0" + found.snapshot_hash.encode() + b"\0")
        problems.extend(found.problems)
        extensions.extend(found.extensions)
        for skill in found.skills:
            if skill.name in names:
                problems.append(
                    ResourceProblem(
                        skill.path,
                        f"duplicate skill name {skill.name!r} (kept {names[skill.name]})",
                    )
                )
                continue
            names[skill.name] = skill.path
            skills.append(skill)
        for template in found.prompts:
            if template.name not in prompt_names:
                prompt_names.add(template.name)
                prompts.append(template)
    eligible = tuple(s for s in skills if not s.requirements.unmet(environ, which))
    for s in eligible:
        digest.update(b"eligible\0" + s.name.encode() + b"\0")
    snapshot_hash = digest.hexdigest()
    resolved = tuple(roots)
    if previous is not None and previous.hash == snapshot_hash and previous.roots == resolved:
        return previous
    return SkillsSnapshot(
        hash=snapshot_hash,
        roots=resolved,
        skills=tuple(skills),
        eligible=eligible,
        prompt=skills_prompt(eligible),
        prompts=tuple(prompts),
        extensions=tuple(extensions),
        problems=tuple(problems),
    )


@attrs.frozen
class PromptCacheStatistics:
    snapshots: int
    reused: int
    rebuilt: int


@attrs.define(eq=False)
class _Load:
    """A load in flight, and the runs waiting for it. They are woken in rounds of
    `WAKE_ROUND` (the loader yields between rounds): a thousand runs waiting on one load
    then go on a few dozen at a time, with what they emit written out in between, instead
    of all in one scheduler round that holds every event back for its whole length."""

    result: tuple[SkillsSnapshot, tuple[BootstrapFile, ...]] | None = None
    finished: bool = False
    waiters: list[list[trio.lowlevel.Task | None]] = attrs.field(factory=list)

    async def wait(self) -> None:
        """Until the load is over (whether it worked: see `result`). A checkpoint."""
        if self.finished:
            await trio.lowlevel.checkpoint()
            return
        cell: list[trio.lowlevel.Task | None] = [trio.lowlevel.current_task()]
        self.waiters.append(cell)

        def abort(_: object) -> trio.lowlevel.Abort:
            cell[0] = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    async def release(self) -> None:
        """Wake every waiter, a round at a time. Call shielded: the waiters depend on it."""
        self.finished = True
        waiters, self.waiters = self.waiters, []
        for i, cell in enumerate(waiters, 1):
            if cell[0] is not None:
                trio.lowlevel.reschedule(cell[0])
            if i % WAKE_ROUND == 0:
                await trio.lowlevel.checkpoint()


@attrs.define(eq=False)
class PromptCache:
    """Skills snapshots by roots, reused while unchanged. One per gateway; bounded (least
    recently used roots are forgotten past `max_entries`). Use from the trio thread."""

    max_entries: int = 256
    _snapshots: OrderedDict[tuple[Path, ...], SkillsSnapshot] = attrs.field(
        factory=OrderedDict, init=False
    )
    _reused: int = attrs.field(default=0, init=False)
    _rebuilt: int = attrs.field(default=0, init=False)
    _inflight: dict[tuple[tuple[Path, ...], Path | None], _Load] = attrs.field(
        factory=dict, init=False
    )
    _files: dict[Path, tuple[BootstrapFile, ...]] = attrs.field(factory=dict, init=False)
    _prepared: dict[tuple[object, ...], tuple[object, object, PreparedPrompt]] = attrs.field(
        factory=dict, init=False
    )

    def same_files(
        self, workspace: Path | None, files: Sequence[BootstrapFile]
    ) -> tuple[BootstrapFile, ...]:
        """`files` as a tuple: the one loaded last time for `workspace` when nothing in it
        changed (so later runs can tell by identity that their prompt is the same)."""
        loaded = tuple(files)
        if workspace is None:
            return loaded
        last = self._files.get(workspace)
        if last == loaded:
            return last
        if len(self._files) >= self.max_entries:
            self._files.clear()
        self._files[workspace] = loaded
        return loaded

    def prepared(
        self, key: tuple[object, ...], skills: SkillsSnapshot, files: tuple[BootstrapFile, ...]
    ) -> PreparedPrompt | None:
        """The prompt prepared last for these very `skills` and `files` objects (and `key`)."""
        known = self._prepared.get((id(skills), id(files), *key))
        if known is not None and known[0] is skills and known[1] is files:
            return known[2]
        return None

    def keep_prepared(
        self,
        key: tuple[object, ...],
        skills: SkillsSnapshot,
        files: tuple[BootstrapFile, ...],
        prepared: PreparedPrompt,
    ) -> None:
        if len(self._prepared) >= self.max_entries:
            self._prepared.clear()
        # The entry holds `skills` and `files`, so their ids are not reused while it lives.
        self._prepared[(id(skills), id(files), *key)] = (skills, files, prepared)

    async def load_shared(
        self,
        roots: tuple[Path, ...],
        workspace: Path | None,
        load: Callable[[], tuple[SkillsSnapshot, list[BootstrapFile]]],
    ) -> tuple[SkillsSnapshot, tuple[BootstrapFile, ...]]:
        """`load()` in a worker thread; runs that ask for the same roots and workspace while
        a load is in flight share it (one thread hop for a burst of runs, not one each).
        A load that starts after an edit sees the edit. A checkpoint."""
        key = (roots, workspace)
        while (pending := self._inflight.get(key)) is not None:
            await pending.wait()
            if pending.result is not None:
                return pending.result
            # The run that was loading failed or was cancelled: load ourselves.
        pending = self._inflight[key] = _Load()
        try:
            snapshot, files = await trio.to_thread.run_sync(load)
            pending.result = (snapshot, self.same_files(workspace, files))
            return pending.result
        finally:
            del self._inflight[key]
            with trio.CancelScope(shield=True):
                await pending.release()

    async def skills(self, roots: Sequence[Path]) -> SkillsSnapshot:
        """The snapshot of `roots`. A checkpoint (reads the files in a worker thread)."""
        key = tuple(roots)
        previous = self.previous(key)
        snapshot = await trio.to_thread.run_sync(
            lambda: load_skills_snapshot(key, previous=previous)
        )
        return self.keep(snapshot, previous)

    def previous(self, roots: tuple[Path, ...]) -> SkillsSnapshot | None:
        """The snapshot last kept for `roots` (to hand to `load_skills_snapshot`)."""
        return self._snapshots.get(roots)

    def keep(self, snapshot: SkillsSnapshot, previous: SkillsSnapshot | None) -> SkillsSnapshot:
        """Remember `snapshot` (loaded with `previous`) for its roots; returns it."""
        if snapshot is previous:
            self._reused += 1
        else:
            self._rebuilt += 1
        self._snapshots[snapshot.roots] = snapshot
        self._snapshots.move_to_end(snapshot.roots)
        while len(self._snapshots) > self.max_entries:
            self._snapshots.popitem(last=False)
        return snapshot

    def statistics(self) -> PromptCacheStatistics:
        return PromptCacheStatistics(len(self._snapshots), self._reused, self._rebuilt)


# --- assembly ----------------------------------------------------------------------------

SectionName = str
"""`base`, `skills`, `context`, `extra`, `hook:prependSystemContext`, `hook:systemPrompt`,
`hook:appendSystemContext`."""


@attrs.frozen
class PromptSection:
    name: SectionName
    text: str


def assemble_system_prompt(
    *,
    base: str,
    skills: str = "",
    context: str = "",
    extra: str | None = None,
    hook_system_prompt: str | None = None,
    prepend_system: str | None = None,
    append_system: str | None = None,
) -> list[PromptSection]:
    """The non-empty sections of a system prompt, in order; join their texts with a blank
    line (`join_sections`). A hook's `systemPrompt` replaces base, skills and context."""
    sections = [PromptSection("hook:prependSystemContext", prepend_system or "")]
    if hook_system_prompt is not None:
        sections.append(PromptSection("hook:systemPrompt", hook_system_prompt))
    else:
        sections += [
            PromptSection("base", base),
            PromptSection("skills", skills),
            PromptSection("context", context),
        ]
    sections += [
        PromptSection("extra", extra or ""),
        PromptSection("hook:appendSystemContext", append_system or ""),
    ]
    return [s for s in sections if s.text]


def join_sections(sections: Iterable[PromptSection]) -> str:
    return "\n\n".join(s.text for s in sections if s.text)


def with_tool_directory(
    sections: Sequence[PromptSection], directory: str | None
) -> list[PromptSection]:
    """`sections` with the directory of the tools Tool Search defers (`tools:deferred`,
    `runtime.tools.ToolCatalog.directory`) where OpenClaw has it: with the tools, after the
    base (or a hook's system prompt), before the context; `directory` None: as they are."""
    found = list(sections)
    if directory is not None:
        at = next(
            (i + 1 for i, s in enumerate(found) if s.name in ("base", "hook:systemPrompt")), 0
        )
        found.insert(at, PromptSection("tools:deferred", f"### Deferred Tool Schemas\n{directory}"))
    return found


# --- preparation -------------------------------------------------------------------------


@attrs.frozen
class PreparedPrompt:
    """Everything a run's system prompt is assembled from, before the plugin hooks."""

    base: str
    extra: str | None
    skills: SkillsSnapshot
    files: tuple[BootstrapFile, ...]
    injected: tuple[InjectedFile, ...]
    context: str
    budget: ContextBudget
    bootstrap_max_chars: int
    bootstrap_total_max_chars: int
    workspace_dir: str | None = None
    _plain: dict[int, tuple[str | None, tuple[PromptSection, ...], str]] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )

    def sections(
        self,
        *,
        hook_system_prompt: str | None = None,
        prepend_system: str | None = None,
        append_system: str | None = None,
    ) -> list[PromptSection]:
        if hook_system_prompt is None and not prepend_system and not append_system:
            return list(self.plain()[0])
        return assemble_system_prompt(
            base=self.base,
            skills=self.skills.prompt,
            context=self.context,
            extra=self.extra,
            hook_system_prompt=hook_system_prompt,
            prepend_system=prepend_system,
            append_system=append_system,
        )

    def plain(self, directory: str | None = None) -> tuple[tuple[PromptSection, ...], str]:
        """The sections and the system prompt without hook contributions, with the deferred
        tools' `directory` when given (`with_tool_directory`). Assembled once for each
        directory (told apart by identity: a tool set's is one string, its catalog's): runs
        share a prepared prompt while nothing changed, and the runs of one tool set its
        directory, up to 18,000 characters not joined into the prompt again by each."""
        known = self._plain.get(id(directory))
        if known is not None and known[0] is directory:
            return known[1], known[2]
        sections = tuple(
            with_tool_directory(
                assemble_system_prompt(
                    base=self.base,
                    skills=self.skills.prompt,
                    context=self.context,
                    extra=self.extra,
                ),
                directory,
            )
        )
        if len(self._plain) >= _PLAIN_MAX:
            self._plain.clear()
        # The entry holds `directory`, so its id is not reused while the entry lives.
        self._plain[id(directory)] = (directory, sections, join_sections(sections))
        return sections, self._plain[id(directory)][2]

    @property
    def system_prompt(self) -> str:
        """The system prompt without hook contributions."""
        return self.plain()[1]

    def report(
        self,
        *,
        source: Literal["run", "estimate"],
        session_key: str,
        session_id: str,
        agent_id: str,
        sections: Sequence[PromptSection] | None = None,
        tools: Sequence[ToolSpec] = (),
        history: Sequence[Message] = (),
        provider: str | None = None,
        model: str | None = None,
        now_ms: int | None = None,
    ) -> SystemPromptReport:
        sections = list(sections) if sections is not None else self.sections()
        system = join_sections(sections)
        eligible = {s.name for s in self.skills.eligible}
        skill_entries = []
        for skill in self.skills.skills:
            unmet = skill.requirements.unmet()
            skill_entries.append(
                ReportSkill(
                    name=skill.name,
                    path=str(skill.path),
                    eligible=skill.name in eligible,
                    blockChars=skill_block_chars(skill) if skill.name in eligible else 0,
                    unmetBins=list(unmet.bins),
                    unmetEnv=list(unmet.env),
                )
            )
        history_tokens = estimate_context_tokens("", history)
        return SystemPromptReport(
            source=source,
            generatedAt=now_ms if now_ms is not None else int(time.time() * 1000),
            sessionKey=session_key,
            sessionId=session_id,
            agentId=agent_id,
            provider=provider,
            model=model,
            workspaceDir=self.workspace_dir,
            systemPromptChars=len(system),
            systemPromptTokens=estimate_text_tokens(system),
            sections=[
                ReportSection(s.name, len(s.text), estimate_text_tokens(s.text)) for s in sections
            ],
            injectedWorkspaceFiles=[
                ReportFile(
                    name=f.name,
                    path=f.path,
                    missing=f.missing,
                    rawChars=f.raw_chars,
                    injectedChars=f.injected_chars,
                    truncated=f.truncated,
                )
                for f in self.injected
            ],
            bootstrapMaxChars=self.bootstrap_max_chars,
            bootstrapTotalMaxChars=self.bootstrap_total_max_chars,
            skills=ReportSkills(
                snapshotHash=self.skills.hash,
                promptChars=len(self.skills.prompt),
                promptTokens=estimate_text_tokens(self.skills.prompt),
                entries=skill_entries,
            ),
            tools=tools_report(tools),
            budget=ReportBudget(
                contextWindow=self.budget.context_window,
                reserveTokens=self.budget.reserve_tokens,
                promptBudget=self.budget.prompt_budget,
                keepRecentTokens=self.budget.keep_recent_tokens,
            ),
            extensions=self.skills.extension_paths,
            problems=[ReportProblem(str(p.path), p.message) for p in self.skills.problems],
            historyMessages=len(history),
            historyTokens=history_tokens,
            contextTokens=estimate_context_tokens(system, history, tools),
        )


@functools.lru_cache(maxsize=256)
def _paths(
    workspace_dir: str | None, configured: tuple[str | Path, ...]
) -> tuple[Path | None, tuple[Path, ...]]:
    """The workspace and the resource roots as paths (the same for every run of an agent)."""
    workspace = Path(workspace_dir) if workspace_dir else None
    return workspace, tuple(_resource_roots(workspace, configured))


def _resource_roots(workspace: Path | None, configured: Sequence[str | Path]) -> list[Path]:
    """The workspace first, then the configured package roots (`~` expanded)."""
    roots = [workspace] if workspace is not None else []
    return roots + [Path(r).expanduser() for r in configured]


async def prepare_prompt(
    *,
    base: str,
    budget: ContextBudget,
    workspace_dir: str | None = None,
    extra: str | None = None,
    resource_roots: Sequence[str | Path] = (),
    cache: PromptCache | None = None,
    internal_hooks: InternalHooks | None = None,
    session_key: str = "",
    session_id: str | None = None,
    agent_id: str | None = None,
    bootstrap_max_chars: int = DEFAULT_BOOTSTRAP_MAX_CHARS,
    bootstrap_total_max_chars: int = DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS,
    bootstrap_files: bool = True,
) -> PreparedPrompt:
    """Load the skills snapshot (the workspace first, then `resource_roots`) and the
    bootstrap files (through `agent:bootstrap`), and render the project context within the
    budget. `bootstrap_files` False: none of the workspace's (OpenClaw's lightweight
    context; the hooks may still add some). A checkpoint: file I/O runs in worker threads."""
    workspace, roots = _paths(workspace_dir, tuple(resource_roots))
    files_dir = workspace if bootstrap_files else None
    if cache is None:
        cache = PromptCache(max_entries=1)
    previous = cache.previous(roots)

    def load() -> tuple[SkillsSnapshot, list[BootstrapFile]]:
        snapshot = load_skills_snapshot(roots, previous=previous)
        return snapshot, load_bootstrap_files(files_dir) if files_dir is not None else []

    if roots:
        loaded, files = await cache.load_shared(roots, files_dir, load)
    else:
        await trio.lowlevel.checkpoint()
        loaded, listed = load()
        files = tuple(listed)
    skills = cache.keep(loaded, previous)
    hooked = (
        workspace is not None
        and internal_hooks is not None
        and internal_hooks.has_listeners("agent", "bootstrap")
    )
    key: tuple[object, ...] = (base, extra, budget, bootstrap_max_chars, bootstrap_total_max_chars)
    key += (workspace, bootstrap_files)
    if not hooked:
        known = cache.prepared(key, skills, files)
        if known is not None:
            return known
    if hooked:
        assert workspace is not None and internal_hooks is not None
        files = tuple(
            await internal_hooks.run_agent_bootstrap(
                files,
                workspace_dir=str(workspace),
                session_key=session_key,
                session_id=session_id,
                agent_id=agent_id,
            )
        )
    total_cap = min(bootstrap_total_max_chars, max(0, budget.prompt_budget) * 4 // 2)
    context, injected = render_project_context(
        files, max_chars=bootstrap_max_chars, total_max_chars=total_cap
    )
    prepared = PreparedPrompt(
        base=base,
        extra=extra,
        skills=skills,
        files=tuple(files),
        injected=tuple(injected),
        context=context,
        budget=budget,
        bootstrap_max_chars=bootstrap_max_chars,
        bootstrap_total_max_chars=total_cap,
        workspace_dir=str(workspace) if workspace is not None else None,
    )
    if not hooked:
        cache.keep_prepared(key, skills, files, prepared)
    return prepared


async def skills_now(
    workspace_dir: str, resource_roots: Sequence[str | Path], cache: PromptCache
) -> SkillsSnapshot:
    """The skills a run in this workspace would see now: the workspace first, then the
    resource roots (`skills.status`). A checkpoint (the files are read in a worker thread)."""
    _, roots = _paths(workspace_dir, tuple(resource_roots))
    return await cache.skills(roots)


async def system_prompt_report(
    *,
    session_key: str,
    session_id: str,
    agent_id: str,
    base: str,
    budget: ContextBudget,
    workspace_dir: str | None = None,
    extra: str | None = None,
    resource_roots: Sequence[str | Path] = (),
    cache: PromptCache | None = None,
    internal_hooks: InternalHooks | None = None,
    tools: Sequence[ToolSpec] = (),
    history: Sequence[Message] = (),
    provider: str | None = None,
    model: str | None = None,
) -> SystemPromptReport:
    """The report of the system prompt a run of this session would get now (source
    "estimate"; plugin `before_prompt_build` hooks are not run). A checkpoint."""
    prepared = await prepare_prompt(
        base=base,
        budget=budget,
        workspace_dir=workspace_dir,
        extra=extra,
        resource_roots=resource_roots,
        cache=cache,
        internal_hooks=internal_hooks,
        session_key=session_key,
        session_id=session_id,
        agent_id=agent_id,
    )
    return prepared.report(
        source="estimate",
        session_key=session_key,
        session_id=session_id,
        agent_id=agent_id,
        tools=tools,
        history=history,
        provider=provider,
        model=model,
    )
