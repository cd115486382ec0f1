"""Slash commands sent as chat messages (`/status`, `/new`, `/think high`, ...): the table
`commands.list` advertises, and the parsing. Sans-IO; `transports.methods._slash` carries them out.

As OpenClaw: a message is a command when its first word is `/` plus a known name or alias
(case-insensitive), followed by nothing or by whitespace and the arguments. Any other
`/word` is not a command and goes to the model as text.
"""

from __future__ import annotations

from typing import Any, Final

import attrs


@attrs.frozen
class SlashCommand:
    name: str
    description: str
    category: str
    aliases: tuple[str, ...] = ()
    args: tuple[dict[str, Any], ...] = ()
    accepts_args: bool = False

    def view(self, *, include_args: bool = True) -> dict[str, Any]:
        """A `CommandsListResult` entry."""
        out: dict[str, Any] = {
            "name": self.name,
            "nativeName": self.name,
            "textAliases": [f"/{self.name}", *(f"/{a}" for a in self.aliases)],
            "description": self.description,
            "category": self.category,
            "source": "native",
            "scope": "both",
            "acceptsArgs": self.accepts_args,
        }
        if include_args and self.args:
            out["args"] = [dict(a) for a in self.args]
        return out


def _choices(*values: str) -> list[dict[str, str]]:
    return [{"value": v, "label": v} for v in values]


QUEUE_MODES: Final = ("steer", "followup", "collect", "interrupt")
VERBOSE_LEVELS: Final = ("on", "off", "full")
REASONING_MODES: Final = ("on", "off", "stream")
THINK_LEVELS: Final = (
    "off",
    "minimal",
    "low",
    "medium",
    "high",
    "xhigh",
    "adaptive",
    "max",
    "ultra",
)
"""Every thinking level a session can hold (OpenClaw's `normalizeThinkLevel` results)."""

_THINK_WORDS: Final = {
    **dict.fromkeys(("off", "none"), "off"),
    **dict.fromkeys(("on", "enable", "enabled"), "low"),
    **dict.fromkeys(("min", "minimal", "think"), "minimal"),
    **dict.fromkeys(("low", "thinkhard", "think-hard", "think_hard"), "low"),
    **dict.fromkeys(("mid", "med", "medium", "thinkharder", "think-harder", "harder"), "medium"),
    **dict.fromkeys(("high", "ultrathink", "thinkhardest", "highest"), "high"),
}
_THINK_COLLAPSED: Final = {
    "adaptive": "adaptive",
    "auto": "adaptive",
    "max": "max",
    "ultra": "ultra",
    "xhigh": "xhigh",
    "extrahigh": "xhigh",
}
_VERBOSE_WORDS: Final = {
    **dict.fromkeys(("off", "false", "no", "0"), "off"),
    **dict.fromkeys(("full", "all", "everything"), "full"),
    **dict.fromkeys(("on", "minimal", "true", "yes", "1"), "on"),
}
_REASONING_WORDS: Final = {
    **dict.fromkeys(("off", "false", "no", "0", "hide", "hidden", "disable", "disabled"), "off"),
    **dict.fromkeys(("on", "true", "yes", "1", "show", "visible", "enable", "enabled"), "on"),
    **dict.fromkeys(("stream", "streaming", "draft", "live"), "stream"),
}


def normalize_think_level(raw: str) -> str | None:
    """One of `THINK_LEVELS` for what a user may write (`"think-harder"` is `medium`), or
    None: OpenClaw's synonyms, so `sessions.patch` stores what OpenClaw would."""
    key = raw.strip().lower()
    collapsed = "".join(key.replace("_", " ").replace("-", " ").split())
    return _THINK_COLLAPSED.get(collapsed) or _THINK_WORDS.get(key)


def normalize_verbose_level(raw: str) -> str | None:
    """One of `VERBOSE_LEVELS`, or None."""
    return _VERBOSE_WORDS.get(raw.strip().lower())


def normalize_reasoning_level(raw: str) -> str | None:
    """One of `REASONING_MODES`, or None."""
    return _REASONING_WORDS.get(raw.strip().lower())


COMMANDS: Final = (
    SlashCommand("help", "Show available commands.", "status"),
    SlashCommand("commands", "List all slash commands.", "status"),
    SlashCommand("status", "Show current status.", "status", accepts_args=True),
    SlashCommand("stop", "Stop the current run.", "session"),
    SlashCommand("approve", "Approve or deny exec requests.", "management", accepts_args=True),
    SlashCommand("reset", "Reset the current session.", "session", accepts_args=True),
    SlashCommand("new", "Start a new session.", "session", accepts_args=True),
    SlashCommand(
        "name",
        "Name or rename the current session.",
        "session",
        args=({"name": "title", "description": "New session name", "type": "string"},),
        accepts_args=True,
    ),
    SlashCommand(
        "compact",
        "Compact the session context.",
        "session",
        args=(
            {
                "name": "instructions",
                "description": "Extra compaction instructions",
                "type": "string",
            },
        ),
        accepts_args=True,
    ),
    SlashCommand(
        "think",
        "Set thinking level.",
        "options",
        aliases=("thinking", "t"),
        args=(
            {"name": "level", "description": "Thinking level", "type": "string", "dynamic": True},
        ),
        accepts_args=True,
    ),
    SlashCommand(
        "verbose",
        "Toggle verbose mode.",
        "options",
        aliases=("v",),
        args=(
            {
                "name": "mode",
                "description": "on, off, or full",
                "type": "string",
                "choices": _choices(*VERBOSE_LEVELS),
            },
        ),
        accepts_args=True,
    ),
    SlashCommand(
        "reasoning",
        "Toggle reasoning visibility.",
        "options",
        aliases=("reason",),
        args=(
            {
                "name": "mode",
                "description": "on, off, or stream",
                "type": "string",
                "choices": _choices(*REASONING_MODES),
            },
        ),
        accepts_args=True,
    ),
    SlashCommand(
        "model",
        "Show or set the model.",
        "options",
        args=(
            {
                "name": "model",
                "description": "Model id (provider/model or alias)",
                "type": "string",
            },
        ),
        accepts_args=True,
    ),
    SlashCommand("models", "List model providers/models.", "options", accepts_args=True),
    SlashCommand(
        "usage",
        "Usage footer or cost summary.",
        "options",
        args=(
            {
                "name": "mode",
                "description": "off, tokens, full, or cost",
                "type": "string",
                "choices": _choices("off", "tokens", "full", "cost"),
            },
        ),
        accepts_args=True,
    ),
    SlashCommand(
        "queue",
        "Adjust queue settings.",
        "options",
        args=(
            {
                "name": "mode",
                "description": "queue mode",
                "type": "string",
                "choices": _choices(*QUEUE_MODES),
            },
            {
                "name": "debounce",
                "description": "debounce duration (e.g. 500ms, 2s)",
                "type": "string",
            },
            {"name": "cap", "description": "queue cap", "type": "number"},
            {
                "name": "drop",
                "description": "drop policy",
                "type": "string",
                "choices": _choices("old", "new", "summarize"),
            },
        ),
        accepts_args=True,
    ),
)
_BY_NAME: Final = {
    alias: command for command in COMMANDS for alias in (command.name, *command.aliases)
}


def find_command(text: str) -> tuple[SlashCommand, str] | None:
    """The command `text` invokes and its argument text, or None (not a command)."""
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    word, _, rest = stripped[1:].partition(" ")
    word, nl, tail = word.partition("\n")
    if nl:
        rest = tail + (" " + rest if rest else "")
    command = _BY_NAME.get(word.lower())
    if command is None:
        return None
    args = rest.strip()
    if args and not command.accepts_args:
        return None  # "/help me with this" is a message, not /help
    return command, args


def commands_view(*, include_args: bool = True) -> list[dict[str, Any]]:
    return [c.view(include_args=include_args) for c in COMMANDS]


def help_text() -> str:
    return "\n".join(
        [
            "ℹ️ Help",
            "",
            "Session",
            "  /new  |  /reset  |  /compact [instructions]  |  /stop  |  /name <title>",
            "",
            "Options",
            "  /think <level|default>  |  /model <id>  |  /verbose on|off|full  |  /reasoning on|off|stream",
            "  /queue steer|followup|collect|interrupt [debounce:<ms>] [cap:<n>] [drop:old|new|summarize]",
            "",
            "Status",
            "  /status  |  /models",
            "",
            "More: /commands for the full list",
        ]
    )


def commands_text() -> str:
    lines = ["ℹ️ Slash commands", ""]
    for c in COMMANDS:
        aliases = "".join(f", /{a}" for a in c.aliases)
        lines.append(f"/{c.name}{aliases}: {c.description}")
    return "\n".join(lines)


def parse_duration_ms(text: str) -> int | None:
    """`500`, `500ms`, `2s`, `1m` as milliseconds (None when not a duration)."""
    t = text.strip().lower()
    for suffix, factor in (("ms", 1), ("s", 1000), ("m", 60_000)):
        if t.endswith(suffix) and t[: -len(suffix)].isdigit():
            return int(t[: -len(suffix)]) * factor
    return int(t) if t.isdigit() else None


def format_tokens(n: int) -> str:
    return f"{n / 1000:.0f}k" if n >= 1000 else str(n)
