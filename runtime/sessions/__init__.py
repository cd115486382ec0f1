"""runtime.sessions: session keys and rows, transcripts (pi v3 entries, `TranscriptBuilder`,
`build_context`; custom messages: the hidden `CustomMessageEntry`, the displayed
`CustomMessage` of a call made through Tool Search, `_nested_tool`: `nested_tool_message`,
`history_row`; the display's text cap: `cap_row`), a subagent's completion in its parent's transcript (`_provenance`: the
completion's input provenance, which prompts are kept, which rows no history shows:
`hidden_in_display`), and a transcript's branches (`_branches`: `branch_tips`,
`cut_before_user_message`, `check_switch`, `BRANCH_MARKER`; errors `BranchError`)."""

from ._branches import BRANCH_MARKER as BRANCH_MARKER
from ._branches import BranchError as BranchError
from ._branches import branch_messages as branch_messages
from ._branches import branch_tips as branch_tips
from ._branches import check_switch as check_switch
from ._branches import cut_before_user_message as cut_before_user_message
from ._branches import message_text as message_text
from ._display_cap import DISPLAY_MAX_CHARS as DISPLAY_MAX_CHARS
from ._display_cap import cap_row as cap_row
from ._nested_tool import history_row as history_row
from ._nested_tool import nested_tool_message as nested_tool_message
from ._provenance import SUBAGENT_ANNOUNCE as SUBAGENT_ANNOUNCE
from ._provenance import SUBAGENT_SETTLE as SUBAGENT_SETTLE
from ._provenance import completion_provenance as completion_provenance
from ._provenance import hidden_in_display as hidden_in_display
from ._provenance import marked_prompt as marked_prompt
from ._provenance import prompt_kept as prompt_kept
from ._sessions import DEFAULT_MAIN_KEY as DEFAULT_MAIN_KEY
from ._sessions import CustomMessage as CustomMessage
from ._sessions import CustomMessageEntry as CustomMessageEntry
from ._sessions import MemoryFlushRecord as MemoryFlushRecord
from ._sessions import MessageEntry as MessageEntry
from ._sessions import SessionKeyError as SessionKeyError
from ._sessions import SessionRow as SessionRow
from ._sessions import TranscriptBuilder as TranscriptBuilder
from ._sessions import TranscriptEntry as TranscriptEntry
from ._sessions import added_context as added_context
from ._sessions import build_context as build_context
from ._sessions import conversation as conversation
from ._sessions import decode_entries as decode_entries
from ._sessions import decode_session_row as decode_session_row
from ._sessions import decode_session_rows as decode_session_rows
from ._sessions import encode_entry as encode_entry
from ._sessions import encode_session_row as encode_session_row
from ._sessions import fork_path as fork_path
from ._sessions import new_session_id as new_session_id
from ._sessions import new_session_row as new_session_row
from ._sessions import openclaw_row_meta as openclaw_row_meta
from ._sessions import parse_session_key as parse_session_key
from ._sessions import resolve_session_key as resolve_session_key
from ._sessions import session_kind as session_kind

__all__ = [
    "BRANCH_MARKER",
    "DEFAULT_MAIN_KEY",
    "DISPLAY_MAX_CHARS",
    "SUBAGENT_ANNOUNCE",
    "SUBAGENT_SETTLE",
    "BranchError",
    "CustomMessage",
    "CustomMessageEntry",
    "MemoryFlushRecord",
    "MessageEntry",
    "SessionKeyError",
    "SessionRow",
    "TranscriptBuilder",
    "TranscriptEntry",
    "added_context",
    "branch_messages",
    "branch_tips",
    "build_context",
    "cap_row",
    "check_switch",
    "completion_provenance",
    "conversation",
    "cut_before_user_message",
    "decode_entries",
    "decode_session_row",
    "decode_session_rows",
    "encode_entry",
    "encode_session_row",
    "fork_path",
    "hidden_in_display",
    "history_row",
    "marked_prompt",
    "message_text",
    "nested_tool_message",
    "new_session_id",
    "new_session_row",
    "openclaw_row_meta",
    "parse_session_key",
    "prompt_kept",
    "resolve_session_key",
    "session_kind",
]
