"""OpenClaw's tool catalog: every core tool id it defines, its section, its profiles.

The data is OpenClaw 2026.9.6's core tool catalog (`src/agents/tool-catalog.ts` and
`tool-policy-shared.ts` in the openclaw package), so a config written for OpenClaw names the
same tools, groups and profiles here:

- `TOOL_GROUPS`: `group:<section>` for each section (`group:fs`, `group:runtime`,
  `group:web`, `group:memory`, `group:sessions`, `group:ui`, `group:messaging`,
  `group:automation`, `group:nodes`, `group:agents`, `group:media`), plus `group:openclaw`
  (the tools OpenClaw marks as its own, file and shell tools excluded). `group:plugins` is
  not here: its members are whatever plugins registered, resolved by the policy.
- `PROFILES`: `minimal`, `coding`, `messaging` (each the tools that list it, `coding` and
  `messaging` also `bundle-mcp`), and `full` (`*`).
- `TOOL_ALIASES`: `bash` → `exec`, `apply-patch` → `apply_patch`, `cron` → `automations`,
  and the renamed `update_plan` → `progress_card`.

clawlane implements only some of these tools; `CORE_TOOLS` still lists them all, so a policy
that names one clawlane lacks is valid and the tool is simply not offered. Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from attrs import frozen

__all__ = [
    "CORE_TOOLS",
    "PROFILES",
    "SECTIONS",
    "SPECIAL_ENTRIES",
    "TOOL_ALIASES",
    "TOOL_GROUPS",
    "CoreTool",
    "normalize_tool_name",
]


@frozen
class CoreTool:
    """One OpenClaw core tool: its id, UI section, the profiles that include it, whether
    `group:openclaw` has it, and OpenClaw's one-line description."""

    id: str
    section: str
    profiles: tuple[str, ...]
    openclaw: bool
    description: str


SECTIONS: Final[tuple[tuple[str, str], ...]] = (
    ("fs", "Files"),
    ("runtime", "Runtime"),
    ("web", "Web"),
    ("memory", "Memory"),
    ("sessions", "Sessions"),
    ("ui", "UI"),
    ("messaging", "Messaging"),
    ("automation", "Automation"),
    ("nodes", "Nodes"),
    ("agents", "Agents"),
    ("media", "Media"),
)
"""OpenClaw's sections, in its order: (id, label)."""

_C = ("coding",)
_CM = ("coding", "messaging")
_ALL3 = ("minimal", "coding", "messaging")
_NONE: tuple[str, ...] = ()

# (id, section, profiles, in group:openclaw, description), in OpenClaw's order.
_DEFINITIONS: Final = (
    ("ls", "fs", _C, False, "List directory entries"),
    ("read", "fs", _C, False, "Read file contents"),
    ("write", "fs", _C, False, "Create or overwrite files"),
    ("edit", "fs", _C, False, "Make precise edits"),
    ("apply_patch", "fs", _C, False, "Patch files"),
    ("exec", "runtime", _C, False, "Run shell now."),
    ("process", "runtime", _C, False, "Inspect/control exec sessions."),
    ("code_execution", "runtime", _C, True, "Run sandboxed remote analysis"),
    ("secrets", "runtime", _CM, True, "Request and manage write-only credentials"),
    ("web_search", "web", _C, True, "Search the web"),
    ("web_fetch", "web", _C, True, "Fetch web content"),
    ("x_search", "web", _C, True, "Search X posts"),
    ("memory_search", "memory", _C, True, "Semantic search"),
    ("memory_get", "memory", _C, True, "Read memory files"),
    ("sessions", "sessions", _CM, True, "Session settings: label, pin, archive, groups"),
    ("sessions_list", "sessions", _CM, True, "List visible sessions; filters/previews."),
    ("sessions_history", "sessions", _CM, True, "Read sanitized session history."),
    ("sessions_search", "sessions", _CM, True, "Search past session transcripts."),
    ("conversations_list", "sessions", _CM, True, "List exact external conversation addresses"),
    ("conversations_send", "sessions", _CM, True, "Send to an exact external conversation"),
    (
        "conversations_turn",
        "sessions",
        _CM,
        True,
        "Send and wait for a correlated external reply",
    ),
    ("sessions_send", "sessions", _CM, True, "Run same-Gateway session/agent."),
    (
        "sessions_spawn",
        "sessions",
        _CM,
        True,
        "Spawn hidden subagent (ephemeral) or visible work session (durable).",
    ),
    (
        "github_identity_status",
        "sessions",
        _C,
        True,
        "Inspect the effective GitHub identity and credential health",
    ),
    (
        "github_publish",
        "sessions",
        _C,
        True,
        "Publish the reconciled session worktree as a draft GitHub pull request",
    ),
    ("agents_wait", "sessions", _C, True, "Wait for collector subagents."),
    ("sessions_yield", "sessions", _CM, True, "End turn to receive sub-agent results"),
    (
        "subagents",
        "sessions",
        _CM,
        True,
        "Background work: subagents, media gen, automation runs. list/cancel.",
    ),
    ("session_status", "sessions", _ALL3, True, "Show session status/model/usage."),
    ("suggest_task", "sessions", _C, True, "Suggest follow-up work for operator approval."),
    ("dismiss_task", "sessions", _C, True, "Withdraw a pending task suggestion."),
    ("browser", "ui", _NONE, True, "Control web browser"),
    ("screen", "ui", _C, True, "Drive operator web UI"),
    ("theme", "ui", _CM, True, "List, select, and create appearance themes"),
    ("dashboard", "ui", _C, True, "Read and arrange the session dashboard"),
    ("terminal", "ui", _C, True, "Use shared operator terminals with policy-governed input"),
    ("portal", "ui", _C, True, "Expose local web apps through the gateway"),
    (
        "canvas",
        "ui",
        _NONE,
        False,
        "Control node Canvas surfaces when the Canvas plugin is enabled",
    ),
    (
        "show_widget",
        "ui",
        _NONE,
        True,
        "Show an interactive widget on chat or an auto-fitting dashboard",
    ),
    ("message", "messaging", ("messaging",), True, "Send messages"),
    (
        "heartbeat_respond",
        "automation",
        _NONE,
        True,
        "Accept heartbeat outcomes for post-turn handling",
    ),
    ("automations", "automation", _C, True, "Schedule reminders, automations, wake events."),
    (
        "gateway",
        "automation",
        _ALL3,
        True,
        "Update OpenClaw; read Gateway config/schema when permitted",
    ),
    ("plugins", "automation", _C, True, "Manage and reload plugins"),
    ("openclaw", "automation", _NONE, True, "Delegate OpenClaw setup and repair"),
    ("nodes", "nodes", _NONE, True, "Nodes + devices"),
    ("computer", "nodes", _NONE, True, "Control the Gateway desktop or a paired computer"),
    ("mobile_ui", "nodes", _NONE, True, "Observe and control a paired Android app"),
    ("agents_list", "agents", _NONE, True, "List agents"),
    ("get_goal", "agents", _C, True, "Get current thread goal"),
    ("create_goal", "agents", _C, True, "Create a thread goal"),
    ("update_goal", "agents", _C, True, "Complete or block a thread goal"),
    ("progress_card", "agents", _C, True, "Maintain the session progress card"),
    ("ask_user", "agents", _CM, True, "Ask the user and wait for an answer."),
    (
        "skill_workshop",
        "agents",
        _C,
        True,
        "Author reusable skills under the available tool's publication and review policy. "
        "Read one complete artifact when it fits the model budget.",
    ),
    ("view_image", "media", _C, True, "Image understanding"),
    ("image_generate", "media", _C, True, "Image generation"),
    ("music_generate", "media", _C, True, "Music generation"),
    ("video_generate", "media", _C, True, "Video generation"),
    ("tts", "media", _NONE, True, "Text-to-speech conversion"),
    ("pdf", "media", _NONE, True, "PDF reading and extraction"),
)

CORE_TOOLS: Final[Mapping[str, CoreTool]] = {
    d[0]: CoreTool(id=d[0], section=d[1], profiles=d[2], openclaw=d[3], description=d[4])
    for d in _DEFINITIONS
}
"""Every OpenClaw core tool by id, in OpenClaw's order."""


def _groups() -> dict[str, tuple[str, ...]]:
    groups: dict[str, tuple[str, ...]] = {
        "group:openclaw": tuple(t.id for t in CORE_TOOLS.values() if t.openclaw)
    }
    for section, _label in SECTIONS:
        groups[f"group:{section}"] = tuple(
            t.id for t in CORE_TOOLS.values() if t.section == section
        )
    return groups


TOOL_GROUPS: Final[Mapping[str, tuple[str, ...]]] = _groups()
"""OpenClaw's core tool groups: `group:openclaw`, then one per section."""


def _profile(name: str) -> tuple[str, ...]:
    return tuple(t.id for t in CORE_TOOLS.values() if name in t.profiles)


PROFILES: Final[Mapping[str, tuple[str, ...] | None]] = {
    "minimal": _profile("minimal"),
    "coding": (*_profile("coding"), "bundle-mcp"),
    "messaging": (*_profile("messaging"), "bundle-mcp"),
    "full": None,
}
"""Each profile's allow list; None (`full`): every tool, plugin tools included."""

TOOL_ALIASES: Final[Mapping[str, str]] = {
    "bash": "exec",
    "apply-patch": "apply_patch",
    "cron": "automations",
    "update_plan": "progress_card",
}
"""Names OpenClaw accepts for a tool, both from a model and in a policy list."""

SPECIAL_ENTRIES: Final = frozenset({"*", "group:plugins", "bundle-mcp"})
"""Policy entries that name no core tool yet are OpenClaw's: everything, every plugin's
tools, the MCP servers' tools."""


def normalize_tool_name(name: str) -> str:
    """The canonical form of a tool name: trimmed, lower-case, aliases resolved."""
    key = name.strip().lower()
    return TOOL_ALIASES.get(key, key)
