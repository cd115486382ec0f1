"""Tools: definitions, OpenClaw's catalog and policy, the workspace sandbox and the built-ins.

The built-ins (`builtin_tools`) are OpenClaw's `ls`, `read`, `write`, `edit`, `apply_patch`,
`exec` and `message`, with its names, parameters and result shapes. `CORE_TOOLS`,
`TOOL_GROUPS`, `PROFILES` and `TOOL_ALIASES` are OpenClaw's catalog (`_catalog`): every tool
it defines, whether clawlane has it or not. `ToolPolicy.resolve` applies OpenClaw's layered
allow/deny (`_policy`); `normalize_tool_name` resolves an alias (`bash` → `exec`,
`apply-patch` → `apply_patch`) for a model's call as for a policy entry. `edit` (`_edit`) takes
OpenClaw's `edits` array, matches each against the original text as OpenClaw does (exactly,
else fuzzily: `_edit_match`, `_graphemes`) and reports jsdiff's line diff (`_line_diff`).

Commands: `exec` (`ExecTool`, its `tools.exec.*` in `ExecSettings`) runs each command under a
keeper that owns its whole process tree (`_proctree`); with the host's `ProcessRegistry`
(`open_process_registry`, bounded per agent by `ProcessLimits`) a command outliving `yieldMs`
becomes a background `Job` of its session, which `process` (`ProcessTool`) lists, polls, feeds
and kills; the registry tells the host of a job's end (`Job.exit_event`, `exec_event_prompt`).
In a cluster the registry's `peers` (`ProcessPeers`) are the other nodes': `process` reaches
the session's jobs there (`act_here` is what a node does for another, `job_entry` a job's `list`
entry; `lost_entry` and `lost_result` answer for a job whose node is gone).

Exec policy (`_exec_policy`, `_exec_command`, `_exec_guard`): OpenClaw's `tools.exec.mode`
(or `security` + `ask`), `askFallback`, `strictInlineEval`, `safeBins` as `ExecPolicy`
(`requested_policy`), tightened by the host approvals document (`effective_policy`); `exec`
asks its host's `ExecApprover` (`guard_exec`) before a command the policy does not allow
outright, and runs nothing before an allow. `mode: auto` asks the auto-reviewer model first
(`_exec_review`: `ModelReviewer`, `ExecReviewer`, `DenialStreaks`, `parse_review`).

The web tools, given `WebSettings` (`tools.web.*`): `web_fetch` reads a page through an SSRF
guard (`EgressPolicy`); a target it refuses raises `EgressBlockedError` (a `ToolError`) inside
the tool, which reports it as an error result. `web_search` is offered, without a provider.

The tools that reach the gateway's operators are shells over small interfaces the host hands
`builtin_tools` (the gateway's actors implement them; the embedded runtime has none, so it
offers none of these): `ask_user` (`AskUserTool`, a `QuestionDesk`: `_ask`), `progress_card`
(`ProgressCardTool`, a `CardDesk`: `_progress`) and `gateway` (`GatewayTool`, a
`ConfigReader`: the config and its schema, read only: `_gateway`).

Sessions: OpenClaw's session tools (`session_tools(host)`: `sessions_list`,
`sessions_history`, `sessions_send`, `sessions_spawn`, `agents_wait`, `sessions_yield`,
`subagents`, `session_status`, `agents_list`) are shells over a `SessionsHost` the host
that owns the sessions passes in (the gateway's `actors._session_tools`);
`sanitize_history` is `sessions_history`'s bounded, redacted view. Automation: OpenClaw's
`automations` (alias `cron`; `automations_tools(host, sessions)`) is a shell over an
`AutomationsHost`, the gateway's cron scheduler (`actors.cron`), each action one `cron.*`
operation (`_automations`; OpenClaw's typed `job` in `_automations_job`), `sessions` reading
the history `contextMessages` adds to a reminder.

Tool Search (`_search`, ranking in `_search_rank`): OpenClaw's default surface, where a run
is offered its core coding tools and `tool_search` / `tool_describe` / `tool_call` directly
and finds the rest in a `ToolCatalog` (`ToolSurface.of`, `tool_search_settings` for
`tools.toolSearch`; `call_target` reads a `tool_call`'s target and input, which the agent
loop then runs as a call of its own).

Errors: `ToolError` → `SandboxError` (a path leaves the workspace), `ToolPolicyError` (an
unknown group or profile in the policy), `PatchError` (an `apply_patch` input that is
malformed or does not match; the tool reports it as an error result), `ToolSearchError`
(a Tool Search call names no catalog entry or a bad query: an error result), `JobLimitError` (a
command refused: its agent has as many running commands as allowed, or the host is closing).
"""

from ._ask import AskOutcome as AskOutcome
from ._ask import AskUserTool as AskUserTool
from ._ask import InvalidAnswerError as InvalidAnswerError
from ._ask import QuestionDesk as QuestionDesk
from ._ask import QuestionShapeError as QuestionShapeError
from ._ask import canonical_answers as canonical_answers
from ._ask import question_shape_error as question_shape_error
from ._automations import AutomationsHost as AutomationsHost
from ._automations import AutomationsParams as AutomationsParams
from ._automations import automations_tools as automations_tools
from ._builtins import MessageTool as MessageTool
from ._builtins import builtin_tools as builtin_tools
from ._catalog import CORE_TOOLS as CORE_TOOLS
from ._catalog import PROFILES as PROFILES
from ._catalog import SECTIONS as SECTIONS
from ._catalog import TOOL_ALIASES as TOOL_ALIASES
from ._catalog import TOOL_GROUPS as TOOL_GROUPS
from ._catalog import CoreTool as CoreTool
from ._catalog import normalize_tool_name as normalize_tool_name
from ._edit import EditTool as EditTool
from ._egress import EgressPolicy as EgressPolicy
from ._errors import EgressBlockedError as EgressBlockedError
from ._errors import JobLimitError as JobLimitError
from ._errors import SandboxError as SandboxError
from ._errors import ToolError as ToolError
from ._errors import ToolPolicyError as ToolPolicyError
from ._exec import ExecSettings as ExecSettings
from ._exec import ExecTool as ExecTool
from ._exec_guard import DEFAULT_EXEC_APPROVAL_TIMEOUT_MS as DEFAULT_EXEC_APPROVAL_TIMEOUT_MS
from ._exec_guard import ExecAnswer as ExecAnswer
from ._exec_guard import ExecApprover as ExecApprover
from ._exec_guard import ExecAsk as ExecAsk
from ._exec_guard import ExecReviewer as ExecReviewer
from ._exec_guard import guard_exec as guard_exec
from ._exec_policy import ExecPolicy as ExecPolicy
from ._exec_policy import document_policy as document_policy
from ._exec_policy import effective_policy as effective_policy
from ._exec_policy import requested_policy as requested_policy
from ._exec_policy import validate_document as validate_document
from ._exec_review import DenialStreaks as DenialStreaks
from ._exec_review import ModelReviewer as ModelReviewer
from ._exec_review import parse_review as parse_review
from ._fs import LsTool as LsTool
from ._fs import ReadTool as ReadTool
from ._fs import WriteTool as WriteTool
from ._gateway import ConfigReader as ConfigReader
from ._gateway import GatewayTool as GatewayTool
from ._images import sanitize_result_images as sanitize_result_images
from ._patch import ApplyPatchTool as ApplyPatchTool
from ._patch import PatchError as PatchError
from ._patch import apply_patch as apply_patch
from ._patch import parse_patch as parse_patch
from ._policy import ToolPolicy as ToolPolicy
from ._policy import ToolScope as ToolScope
from ._policy import expand_tool_names as expand_tool_names
from ._policy import unknown_entries as unknown_entries
from ._process import Job as Job
from ._process import ProcessLimits as ProcessLimits
from ._process import ProcessPeers as ProcessPeers
from ._process import ProcessRegistry as ProcessRegistry
from ._process import exec_event_prompt as exec_event_prompt
from ._process import open_process_registry as open_process_registry
from ._process_tool import ProcessParams as ProcessParams
from ._process_tool import ProcessTool as ProcessTool
from ._process_tool import act_here as act_here
from ._process_tool import job_entry as job_entry
from ._process_tool import lost_entry as lost_entry
from ._process_tool import lost_result as lost_result
from ._progress import CardDesk as CardDesk
from ._progress import ProgressCardError as ProgressCardError
from ._progress import ProgressCardTool as ProgressCardTool
from ._progress import normalize_card as normalize_card
from ._sandbox import ensure_workspace as ensure_workspace
from ._sandbox import resolve_in_workspace as resolve_in_workspace
from ._search import CatalogEntry as CatalogEntry
from ._search import ToolCatalog as ToolCatalog
from ._search import ToolSearchError as ToolSearchError
from ._search import ToolSearchSettings as ToolSearchSettings
from ._search import ToolSurface as ToolSurface
from ._search import call_target as call_target
from ._search import serves_locally as serves_locally
from ._search import tool_search_settings as tool_search_settings
from ._sessions_history import HistoryView as HistoryView
from ._sessions_history import sanitize_history as sanitize_history
from ._sessions_tools import AgentsWaitParams as AgentsWaitParams
from ._sessions_tools import SessionsHistoryParams as SessionsHistoryParams
from ._sessions_tools import SessionsHost as SessionsHost
from ._sessions_tools import SessionsListParams as SessionsListParams
from ._sessions_tools import SessionsSendParams as SessionsSendParams
from ._sessions_tools import SessionsSpawnParams as SessionsSpawnParams
from ._sessions_tools import SessionStatusParams as SessionStatusParams
from ._sessions_tools import SessionsYieldParams as SessionsYieldParams
from ._sessions_tools import SubagentsParams as SubagentsParams
from ._sessions_tools import session_tools as session_tools
from ._sessions_tools import subagent_denied as subagent_denied
from ._sessions_tools import subagent_policy as subagent_policy
from ._tool import Tool as Tool
from ._tool import ToolContext as ToolContext
from ._tool import ToolResult as ToolResult
from ._tool import invoke_tool as invoke_tool
from ._tool import sanitize_result as sanitize_result
from ._tool import text_result as text_result
from ._tool import thrown_message as thrown_message
from ._tool import thrown_result as thrown_result
from ._tool import tool_spec as tool_spec
from ._web import WebFetchSettings as WebFetchSettings
from ._web import WebFetchTool as WebFetchTool
from ._web import WebSearchTool as WebSearchTool
from ._web import WebSettings as WebSettings

__all__ = [
    "CORE_TOOLS",
    "DEFAULT_EXEC_APPROVAL_TIMEOUT_MS",
    "PROFILES",
    "SECTIONS",
    "TOOL_ALIASES",
    "TOOL_GROUPS",
    "AgentsWaitParams",
    "ApplyPatchTool",
    "AskOutcome",
    "AskUserTool",
    "AutomationsHost",
    "AutomationsParams",
    "CardDesk",
    "CatalogEntry",
    "ConfigReader",
    "CoreTool",
    "DenialStreaks",
    "EditTool",
    "EgressBlockedError",
    "EgressPolicy",
    "ExecAnswer",
    "ExecApprover",
    "ExecAsk",
    "ExecPolicy",
    "ExecReviewer",
    "ExecSettings",
    "ExecTool",
    "GatewayTool",
    "HistoryView",
    "InvalidAnswerError",
    "Job",
    "JobLimitError",
    "LsTool",
    "MessageTool",
    "ModelReviewer",
    "PatchError",
    "ProcessLimits",
    "ProcessParams",
    "ProcessPeers",
    "ProcessRegistry",
    "ProcessTool",
    "ProgressCardError",
    "ProgressCardTool",
    "QuestionDesk",
    "QuestionShapeError",
    "ReadTool",
    "SandboxError",
    "SessionStatusParams",
    "SessionsHistoryParams",
    "SessionsHost",
    "SessionsListParams",
    "SessionsSendParams",
    "SessionsSpawnParams",
    "SessionsYieldParams",
    "SubagentsParams",
    "Tool",
    "ToolCatalog",
    "ToolContext",
    "ToolError",
    "ToolPolicy",
    "ToolPolicyError",
    "ToolResult",
    "ToolScope",
    "ToolSearchError",
    "ToolSearchSettings",
    "ToolSurface",
    "WebFetchSettings",
    "WebFetchTool",
    "WebSearchTool",
    "WebSettings",
    "WriteTool",
    "act_here",
    "apply_patch",
    "automations_tools",
    "builtin_tools",
    "call_target",
    "canonical_answers",
    "document_policy",
    "effective_policy",
    "ensure_workspace",
    "exec_event_prompt",
    "expand_tool_names",
    "guard_exec",
    "invoke_tool",
    "job_entry",
    "lost_entry",
    "lost_result",
    "normalize_card",
    "normalize_tool_name",
    "open_process_registry",
    "parse_patch",
    "parse_review",
    "question_shape_error",
    "requested_policy",
    "resolve_in_workspace",
    "sanitize_history",
    "sanitize_result",
    "sanitize_result_images",
    "serves_locally",
    "session_tools",
    "subagent_denied",
    "subagent_policy",
    "text_result",
    "thrown_message",
    "thrown_result",
    "tool_search_settings",
    "tool_spec",
    "unknown_entries",
    "validate_document",
]
