"""One run's lifecycle and the turn around the attempt loop: what every host of a run shares.

- `_run`: the run lifecycle, sans-IO: a run's start, its one outcome (`ok`, `error`,
  `aborted` with its stop reason), its one terminal event and its final `{payloads, meta}`;
  `TrackedRun` adds the event its waiters wait on and the scope that stops it.
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
- `_session_calls`, `_session_views`, `_session_visibility`, `_subagent_book`: what the
  session tools answer (`_session_calls` reading the host's sessions through its
  callbacks) and what a session may reach (`tools.sessions.visibility`), the subagents'
  limits, receipt and announce, and the `TaskBook` of spawned runs (`subagents`, `agents_wait`,
  `sessions_yield`), shared by the gateway's host (`actors`) and the embedded runtime's.
  `_announce`: a child's end told to its parent as OpenClaw's `task_completion` event
  (`announce_message`) under OpenClaw's idempotency key (`announce_key`).
- `_cron_host`: what the `automations` tool answers (`CronToolHost`: validation, the
  caller's scope, the `cron.*` results) over a host's `JobScheduler`: the gateway's cron
  scheduler (`actors.cron`) or the embedded runtime's (`_embedded_cron`, in memory).
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

from ._announce import announce_key as announce_key
from ._announce import announce_of as announce_of
from ._announce import announce_task as announce_task
from ._blocks import BlockReply as BlockReply
from ._compaction import MessageTags as MessageTags
from ._compaction import compact_session as compact_session
from ._compaction import context_budget as context_budget
from ._compaction import persist_run as persist_run
from ._cron_host import CronToolHost as CronToolHost
from ._cron_host import JobScheduler as JobScheduler
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
from ._run import TrackedRun as TrackedRun
from ._run import ended_row as ended_row
from ._run import final_payload as final_payload
from ._run import run_guarded as run_guarded
from ._run import run_messages as run_messages
from ._run import run_tags as run_tags
from ._run_notes import YieldClaim as YieldClaim
from ._run_notes import run_notes as run_notes
from ._run_notes import yield_claims as yield_claims
from ._services import TurnServices as TurnServices
from ._session_calls import history_for as history_for
from ._session_calls import list_result_for as list_result_for
from ._session_calls import reach_denial as reach_denial
from ._session_calls import send_admission as send_admission
from ._session_calls import send_waited as send_waited
from ._session_calls import status_for as status_for
from ._session_views import AGENTS_WAIT_DEFAULT_S as AGENTS_WAIT_DEFAULT_S
from ._session_views import CHILDREN_KEPT as CHILDREN_KEPT
from ._session_views import MISSING_FOR_MODE as MISSING_FOR_MODE
from ._session_views import RESUME_REFUSED as RESUME_REFUSED
from ._session_views import SEND_TIMEOUT_DEFAULT_S as SEND_TIMEOUT_DEFAULT_S
from ._session_views import agent_allowed as agent_allowed
from ._session_views import agents_view as agents_view
from ._session_views import announce_message as announce_message
from ._session_views import branch_dicts as branch_dicts
from ._session_views import history_result as history_result
from ._session_views import list_kind as list_kind
from ._session_views import model_ref as model_ref
from ._session_views import notify_result as notify_result
from ._session_views import notify_text as notify_text
from ._session_views import recent_messages as recent_messages
from ._session_views import resume_prompt as resume_prompt
from ._session_views import resume_receipt as resume_receipt
from ._session_views import send_error as send_error
from ._session_views import send_outcome as send_outcome
from ._session_views import send_prompt as send_prompt
from ._session_views import spawn_admission as spawn_admission
from ._session_views import spawn_receipt as spawn_receipt
from ._session_views import status_result as status_result
from ._session_views import subagent_context as subagent_context
from ._session_views import subagent_model as subagent_model
from ._session_views import subagent_role as subagent_role
from ._session_views import subagents_call as subagents_call
from ._session_views import yield_claim as yield_claim
from ._session_views import yielded as yielded
from ._session_visibility import denial as denial
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
from ._spawn_options import StagedAttachments as StagedAttachments
from ._spawn_options import prepare_child as prepare_child
from ._spawn_options import remove_attachments as remove_attachments
from ._subagent_book import BOOK_MAX as BOOK_MAX
from ._subagent_book import SpawnedRun as SpawnedRun
from ._subagent_book import TaskBook as TaskBook
from ._subagent_book import TaskLink as TaskLink
from ._subagent_book import TaskRecord as TaskRecord
from ._subagent_book import pending_children_message as pending_children_message
from ._subagent_book import reply_text as reply_text
from ._turn import run_turn as run_turn
from ._turnspec import BASE_SYSTEM_PROMPT as BASE_SYSTEM_PROMPT
from ._turnspec import TurnResult as TurnResult
from ._yield_batch import Teller as Teller
from ._yield_batch import batch_children as batch_children
from ._yield_batch import batch_run_id as batch_run_id
from ._yield_batch import private_replaced as private_replaced
from ._yield_batch import settle_message as settle_message
from ._yield_batch import settle_provenance as settle_provenance
from ._yield_batch import settled_children as settled_children
from ._yield_batch import take_batch as take_batch
from ._yield_batch import take_waves as take_waves
from ._yield_batch import tell as tell
from ._yield_batch import wait_child as wait_child
from ._yield_batch import wait_for_requester as wait_for_requester
from ._yield_batch import wait_settled as wait_settled

__all__ = [
    "AGENTS_WAIT_DEFAULT_S",
    "BASE_SYSTEM_PROMPT",
    "BOOK_MAX",
    "CHILDREN_KEPT",
    "MISSING_FOR_MODE",
    "QUEUE_MODES",
    "REASONING_MODES",
    "RESUME_REFUSED",
    "SEND_TIMEOUT_DEFAULT_S",
    "THINK_LEVELS",
    "VERBOSE_LEVELS",
    "AbortReason",
    "BlockReply",
    "ChatDeltaThrottle",
    "CronToolHost",
    "DeadlineFlusher",
    "DeltaEmit",
    "JobScheduler",
    "MessageTags",
    "RunOutcome",
    "RunRefusedError",
    "RunState",
    "SilentStreamFilter",
    "Skill",
    "SlashCommand",
    "SpawnedRun",
    "StagedAttachments",
    "TaskBook",
    "TaskLink",
    "TaskRecord",
    "Teller",
    "TrackedRun",
    "TurnResult",
    "TurnServices",
    "YieldClaim",
    "agent_allowed",
    "agents_view",
    "announce_key",
    "announce_message",
    "announce_of",
    "announce_task",
    "batch_children",
    "batch_run_id",
    "branch_dicts",
    "commands_text",
    "commands_view",
    "compact_session",
    "context_budget",
    "denial",
    "discover_resources",
    "ended_row",
    "final_payload",
    "find_command",
    "format_tokens",
    "help_text",
    "history_for",
    "history_result",
    "is_silent_reply",
    "list_kind",
    "list_result_for",
    "memory_settings",
    "model_ref",
    "normalize_reasoning_level",
    "normalize_think_level",
    "normalize_verbose_level",
    "notify_result",
    "notify_text",
    "parse_duration_ms",
    "pending_children_message",
    "persist_run",
    "prepare_child",
    "private_replaced",
    "reach_denial",
    "recent_messages",
    "remove_attachments",
    "reply_text",
    "resume_prompt",
    "resume_receipt",
    "run_guarded",
    "run_messages",
    "run_notes",
    "run_tags",
    "run_turn",
    "send_admission",
    "send_error",
    "send_outcome",
    "send_prompt",
    "send_waited",
    "settle_message",
    "settle_provenance",
    "settled_children",
    "skills_now",
    "spawn_admission",
    "spawn_receipt",
    "status_for",
    "status_result",
    "subagent_context",
    "subagent_model",
    "subagent_role",
    "subagents_call",
    "system_prompt_report",
    "take_batch",
    "take_waves",
    "tell",
    "wait_child",
    "wait_for_requester",
    "wait_settled",
    "yield_claim",
    "yield_claims",
    "yielded",
]
