"""One run's lifecycle and the turn around the attempt loop: what every host of a run shares.

- `_run`: the run lifecycle, sans-IO: a run's start, its one outcome (`ok`, `error`,
  `aborted` with its stop reason), its one terminal event and its final `{payloads, meta}`.
  The gateway's session actor and the embedded runtime (`_embedded`,
  `open_embedded_runtime`: the runtime as a library) are hosts around it that say where
  events go and where the transcript is kept; both run `_turn.run_turn` with the same
  `TurnServices` (`_services`), and `tests/e2e/test_embedded_parity.py` compares them.
- `_turn`, `_turnspec`: one turn with its plugin hooks around it.
- `_prompt`, `_bootstrap`, `_resources`, `_frontmatter`, `_prompt_report`: the system prompt:
  base prompt + skills (`<workspace>/skills/**/SKILL.md` and `agents.defaults.resources`
  roots; eligible ones are listed and the environment variables they require passed to
  `exec`; front matter is real YAML, so OpenClaw's bundled skills load as they ship) +
  bootstrap files (`AGENTS.md`, `SOUL.md`, `TOOLS.md`, ..., after `agent:bootstrap`
  handlers) + `extraSystemPrompt` + plugin contributions, within the context window minus
  the compaction reserve. Admins see the report with `sessions.systemPrompt`.
- `_reply`, `_blocks`, `_chunking`, `_flusher`: replies: `NO_REPLY` silences one (never
  leaking through deltas), what the `message` tool already sent is not repeated, a failed
  tool gets a fallback reply; block streaming (`agents.defaults.blockStreamingDefault: "on"`,
  `blockStreamingBreak`, `blockStreamingChunk`, `blockStreamingCoalesce`) and reasoning per
  the session's `reasoningLevel`.
- `_compaction`, `_compactor`: when the context passes the window minus the reserve
  (`agents.defaults.compaction`), or a provider says the context overflowed (then the
  attempt is retried, at most 3 times), the model summarises the older part (`compaction`
  events); the summary is a transcript entry and the full history stays in the store.
  `sessions.compact` and `/compact` do it by hand.
- `_fallback`: the primary model, then each of `agents.defaults.model.fallbacks`, for one
  model turn (on auth, rate-limit, overload or timeout failures before any output).
- `_slash`: slash commands sent as chat messages: `/status`, `/help`, `/commands`,
  `/new [text]`, `/reset [text]`, `/stop`, `/model [provider/model|default]`, `/models`,
  `/think LEVEL` (`/thinking`, `/t`), `/verbose on|off|full` (`/v`), `/reasoning
  on|off|stream`, `/queue MODE [debounce:2s] [cap:N] [drop:old|new|summarize]`,
  `/name TITLE`, `/compact [instructions]`; any other `/word` goes to the model as text
  (`transports.methods` carries them out).

The agent's workspace is `agents.defaults.workspace` or the agent's own `workspace`, by
default `<state-dir>/workspaces/<agentId>`, created when missing; its tools and their
sandbox are `runtime.tools`.
"""

from ._blocks import BlockReply as BlockReply
from ._compaction import MessageTags as MessageTags
from ._compaction import compact_session as compact_session
from ._compaction import context_budget as context_budget
from ._compaction import persist_run as persist_run
from ._flusher import DeadlineFlusher as DeadlineFlusher
from ._memorysettings import memory_settings as memory_settings
from ._prompt import skills_now as skills_now
from ._prompt import system_prompt_report as system_prompt_report
from ._reply import ChatDeltaThrottle as ChatDeltaThrottle
from ._reply import DeltaEmit as DeltaEmit
from ._reply import SilentStreamFilter as SilentStreamFilter
from ._reply import is_silent_reply as is_silent_reply
from ._resources import Skill as Skill
from ._resources import discover_resources as discover_resources
from ._run import AbortReason as AbortReason
from ._run import RunOutcome as RunOutcome
from ._run import RunRefusedError as RunRefusedError
from ._run import RunState as RunState
from ._run import ended_row as ended_row
from ._run import final_payload as final_payload
from ._run import run_guarded as run_guarded
from ._run import run_messages as run_messages
from ._run import run_tags as run_tags
from ._services import TurnServices as TurnServices
from ._slash import QUEUE_MODES as QUEUE_MODES
from ._slash import REASONING_MODES as REASONING_MODES
from ._slash import THINK_LEVELS as THINK_LEVELS
from ._slash import VERBOSE_LEVELS as VERBOSE_LEVELS
from ._slash import SlashCommand as SlashCommand
from ._slash import commands_text as commands_text
from ._slash import commands_view as commands_view
from ._slash import find_command as find_command
from ._slash import format_tokens as format_tokens
from ._slash import help_text as help_text
from ._slash import normalize_reasoning_level as normalize_reasoning_level
from ._slash import normalize_think_level as normalize_think_level
from ._slash import normalize_verbose_level as normalize_verbose_level
from ._slash import parse_duration_ms as parse_duration_ms
from ._turn import run_turn as run_turn
from ._turnspec import BASE_SYSTEM_PROMPT as BASE_SYSTEM_PROMPT
from ._turnspec import TurnResult as TurnResult

__all__ = [
    "BASE_SYSTEM_PROMPT",
    "QUEUE_MODES",
    "REASONING_MODES",
    "THINK_LEVELS",
    "VERBOSE_LEVELS",
    "AbortReason",
    "BlockReply",
    "ChatDeltaThrottle",
    "DeadlineFlusher",
    "DeltaEmit",
    "MessageTags",
    "RunOutcome",
    "RunRefusedError",
    "RunState",
    "SilentStreamFilter",
    "Skill",
    "SlashCommand",
    "TurnResult",
    "TurnServices",
    "commands_text",
    "commands_view",
    "compact_session",
    "context_budget",
    "discover_resources",
    "ended_row",
    "final_payload",
    "find_command",
    "format_tokens",
    "help_text",
    "is_silent_reply",
    "memory_settings",
    "normalize_reasoning_level",
    "normalize_think_level",
    "normalize_verbose_level",
    "parse_duration_ms",
    "persist_run",
    "run_guarded",
    "run_messages",
    "run_tags",
    "run_turn",
    "skills_now",
    "system_prompt_report",
]
