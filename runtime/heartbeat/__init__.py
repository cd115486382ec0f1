"""Heartbeats as OpenClaw 2026.9.6 runs them, the parts without I/O: settings, prompt, reply.

- `_settings`: which agents run heartbeats and how (`heartbeat_agents`; `resolve_heartbeat`
  → `HeartbeatSettings`: cadence, session, prompt, `ackMaxChars`, timeout, `activeHours`
  checked by `in_active_hours`; `heartbeat_summary`, what `health` and `status` show).
- `_reply`: OpenClaw's default prompt (`HEARTBEAT_PROMPT`, `build_prompt` with the workspace's
  `HEARTBEAT.md` as the monitor scratch, `is_effectively_empty` for the skip), `HEARTBEAT_OK`
  (`strip_heartbeat_token`), the verdict on a reply (`classify_reply`) and the `heartbeat`
  event's payload (`heartbeat_event`).
- `_events`: `SystemEventQueue`, the texts `system-event` and `wake` queue for a session's
  next turn, read by the model as `System: [time] text` lines before its message (but a
  background command's completion, which only a heartbeat tells).
- `_wake`: when a wake may run (`should_defer`: OpenClaw's `not-due`, `min-spacing` and
  `flood` guards over an agent's `WakePacing`; `retain`), when a busy one is tried again
  (`retry_delay_s`, `idle_grace`, `RETRY_REASONS`) and how it ended (`WakeResult`; a cron job's event
  and its wake: `EventDelivery`).
- `_event_prompts`: the message of a heartbeat a background command's completion or a cron
  job's system event woke (`build_exec_event_prompt`, `build_cron_event_prompt`,
  `is_exec_completion_event`, `is_cron_system_event`).
- `_history`: what `chat.history` hides of heartbeats (`hidden_in_history`: the prompt's
  user message, acknowledgment-only replies), as OpenClaw's chat display does, and what
  the model's context leaves out (`drop_heartbeat_turns`: heartbeat turns that were noise).
- `_respond`: the `heartbeat_respond` tool, offered in heartbeat runs only, and
  `HeartbeatResponses`, where its accepted responses wait for the runner.

The runner (schedule, wakes, runs, the event, `last-heartbeat`) is `actors.heartbeat`; the
methods (`set-heartbeats`, `wake`, `system-event`, `last-heartbeat`) are
`transports.methods._heartbeat`.
"""

from ._event_prompts import build_cron_event_prompt as build_cron_event_prompt
from ._event_prompts import build_exec_event_prompt as build_exec_event_prompt
from ._event_prompts import is_cron_system_event as is_cron_system_event
from ._event_prompts import is_exec_completion_event as is_exec_completion_event
from ._events import SystemEvent as SystemEvent
from ._events import SystemEventQueue as SystemEventQueue
from ._events import format_system_events as format_system_events
from ._history import drop_heartbeat_turns as drop_heartbeat_turns
from ._history import hidden_in_history as hidden_in_history
from ._history import holds_heartbeat_turns as holds_heartbeat_turns
from ._history import is_heartbeat_prompt as is_heartbeat_prompt
from ._reply import HEARTBEAT_PROMPT as HEARTBEAT_PROMPT
from ._reply import HEARTBEAT_RESPONSE_TOOL_PROMPT as HEARTBEAT_RESPONSE_TOOL_PROMPT
from ._reply import HEARTBEAT_TOKEN as HEARTBEAT_TOKEN
from ._reply import HEARTBEAT_TRANSCRIPT_MARKER as HEARTBEAT_TRANSCRIPT_MARKER
from ._reply import ReplyVerdict as ReplyVerdict
from ._reply import StrippedReply as StrippedReply
from ._reply import build_prompt as build_prompt
from ._reply import classify_reply as classify_reply
from ._reply import heartbeat_event as heartbeat_event
from ._reply import indicator_type as indicator_type
from ._reply import is_effectively_empty as is_effectively_empty
from ._reply import strip_heartbeat_token as strip_heartbeat_token
from ._respond import HeartbeatRespondParams as HeartbeatRespondParams
from ._respond import HeartbeatRespondTool as HeartbeatRespondTool
from ._respond import HeartbeatResponses as HeartbeatResponses
from ._settings import DEFAULT_ACK_MAX_CHARS as DEFAULT_ACK_MAX_CHARS
from ._settings import DEFAULT_EVERY as DEFAULT_EVERY
from ._settings import HeartbeatSettings as HeartbeatSettings
from ._settings import heartbeat_agents as heartbeat_agents
from ._settings import heartbeat_summary as heartbeat_summary
from ._settings import in_active_hours as in_active_hours
from ._settings import resolve_heartbeat as resolve_heartbeat
from ._wake import COALESCE_S as COALESCE_S
from ._wake import RETRY_REASONS as RETRY_REASONS
from ._wake import Deferral as Deferral
from ._wake import EventDelivery as EventDelivery
from ._wake import WakeIntent as WakeIntent
from ._wake import WakePacing as WakePacing
from ._wake import WakeResult as WakeResult
from ._wake import idle_grace as idle_grace
from ._wake import retain as retain
from ._wake import retry_delay_s as retry_delay_s
from ._wake import should_defer as should_defer

__all__ = [
    "COALESCE_S",
    "DEFAULT_ACK_MAX_CHARS",
    "DEFAULT_EVERY",
    "HEARTBEAT_PROMPT",
    "HEARTBEAT_RESPONSE_TOOL_PROMPT",
    "HEARTBEAT_TOKEN",
    "HEARTBEAT_TRANSCRIPT_MARKER",
    "RETRY_REASONS",
    "Deferral",
    "EventDelivery",
    "HeartbeatRespondParams",
    "HeartbeatRespondTool",
    "HeartbeatResponses",
    "HeartbeatSettings",
    "ReplyVerdict",
    "StrippedReply",
    "SystemEvent",
    "SystemEventQueue",
    "WakeIntent",
    "WakePacing",
    "WakeResult",
    "build_cron_event_prompt",
    "build_exec_event_prompt",
    "build_prompt",
    "classify_reply",
    "drop_heartbeat_turns",
    "format_system_events",
    "heartbeat_agents",
    "heartbeat_event",
    "heartbeat_summary",
    "hidden_in_history",
    "holds_heartbeat_turns",
    "idle_grace",
    "in_active_hours",
    "indicator_type",
    "is_cron_system_event",
    "is_effectively_empty",
    "is_exec_completion_event",
    "is_heartbeat_prompt",
    "resolve_heartbeat",
    "retain",
    "retry_delay_s",
    "should_defer",
    "strip_heartbeat_token",
]
