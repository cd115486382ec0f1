"""The report of a system prompt (`SystemPromptReport`: what `/context` and
`sessions.systemPromptReport` show): its sections with their sizes and token estimates, the
injected workspace files, the skills, the tool schemas and the budget. Plain msgspec records;
`_prompt.PreparedPrompt.report` fills them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import msgspec

from ..llm._types import ToolSpec
from ._resources import Skill, skills_prompt

__all__ = [
    "ReportBudget",
    "ReportFile",
    "ReportProblem",
    "ReportSection",
    "ReportSkill",
    "ReportSkills",
    "ReportTool",
    "ReportTools",
    "SystemPromptReport",
    "skill_block_chars",
    "tools_report",
]


class _Report(msgspec.Struct, frozen=True, omit_defaults=True):
    pass


class ReportSection(_Report, frozen=True):
    name: str
    chars: int
    tokens: int


class ReportFile(_Report, frozen=True):
    name: str
    path: str
    missing: bool
    rawChars: int
    injectedChars: int
    truncated: bool


class ReportSkill(_Report, frozen=True):
    name: str
    path: str
    eligible: bool
    blockChars: int = 0
    unmetBins: list[str] = []
    unmetEnv: list[str] = []


class ReportSkills(_Report, frozen=True):
    snapshotHash: str
    promptChars: int
    promptTokens: int
    entries: list[ReportSkill]


class ReportTool(_Report, frozen=True):
    name: str
    schemaChars: int
    schemaTokens: int


class ReportTools(_Report, frozen=True):
    schemaChars: int
    schemaTokens: int
    entries: list[ReportTool]


class ReportProblem(_Report, frozen=True):
    path: str
    message: str


class ReportBudget(_Report, frozen=True):
    contextWindow: int
    reserveTokens: int
    promptBudget: int
    keepRecentTokens: int


class SystemPromptReport(_Report, frozen=True):
    """What a run's system prompt is made of (`/context`, `sessions.systemPromptReport`).

    `source` is "run" for the prompt of a run that happened, "estimate" for one assembled on
    request (no `before_prompt_build` hooks run then). `contextTokens` estimates a request
    made now: system prompt + history + tool schemas.
    """

    source: Literal["run", "estimate"]
    generatedAt: int
    sessionKey: str
    sessionId: str
    agentId: str
    systemPromptChars: int
    systemPromptTokens: int
    sections: list[ReportSection]
    injectedWorkspaceFiles: list[ReportFile]
    bootstrapMaxChars: int
    bootstrapTotalMaxChars: int
    skills: ReportSkills
    tools: ReportTools
    budget: ReportBudget
    extensions: list[str] = []
    problems: list[ReportProblem] = []
    provider: str | None = None
    model: str | None = None
    workspaceDir: str | None = None
    historyMessages: int = 0
    historyTokens: int = 0
    contextTokens: int = 0


_encoder: Final = msgspec.json.Encoder()


def tools_report(tools: Sequence[ToolSpec]) -> ReportTools:
    entries = []
    for spec in tools:
        chars = len(_encoder.encode(spec))
        entries.append(ReportTool(spec.name, chars, (chars + 3) // 4))
    total = len(_encoder.encode(list(tools))) if tools else 0
    return ReportTools(schemaChars=total, schemaTokens=(total + 3) // 4, entries=entries)


def skill_block_chars(skill: Skill) -> int:
    """What one skill adds to the skills prompt (its `<skill>` element)."""
    return len(skills_prompt([skill, skill])) - len(skills_prompt([skill]))
