"""Tools: definitions, policy, the workspace sandbox and the built-ins.

Errors: `ToolError` → `SandboxError` (a path leaves the workspace), `ToolPolicyError` (an
unknown group or profile in the policy).
"""

from ._builtins import MessageTool as MessageTool
from ._builtins import builtin_tools as builtin_tools
from ._errors import SandboxError as SandboxError
from ._errors import ToolError as ToolError
from ._errors import ToolPolicyError as ToolPolicyError
from ._exec import ExecTool as ExecTool
from ._fs import EditTool as EditTool
from ._fs import ReadTool as ReadTool
from ._fs import WriteTool as WriteTool
from ._policy import PROFILES as PROFILES
from ._policy import TOOL_GROUPS as TOOL_GROUPS
from ._policy import ToolPolicy as ToolPolicy
from ._policy import expand_tool_names as expand_tool_names
from ._sandbox import ensure_workspace as ensure_workspace
from ._sandbox import resolve_in_workspace as resolve_in_workspace
from ._tool import Tool as Tool
from ._tool import ToolContext as ToolContext
from ._tool import ToolResult as ToolResult
from ._tool import invoke_tool as invoke_tool
from ._tool import sanitize_result as sanitize_result
from ._tool import text_result as text_result
from ._tool import tool_spec as tool_spec

__all__ = [
    "PROFILES",
    "TOOL_GROUPS",
    "EditTool",
    "ExecTool",
    "MessageTool",
    "ReadTool",
    "SandboxError",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolPolicy",
    "ToolPolicyError",
    "ToolResult",
    "WriteTool",
    "builtin_tools",
    "ensure_workspace",
    "expand_tool_names",
    "invoke_tool",
    "resolve_in_workspace",
    "sanitize_result",
    "text_result",
    "tool_spec",
]
