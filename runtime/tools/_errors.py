"""The tools package's error tree.

- `ToolError`: base of every error raised by `runtime.tools`.
  - `SandboxError`: a path was refused because it would leave the session workspace (or names
    something that is not a regular file or directory). File tools turn it into an error
    `ToolResult`; it never reaches the agent loop from `invoke_tool`.
  - `ToolPolicyError`: a tool policy is malformed (unknown profile or `group:` name). Raised
    when the policy is built, so a bad config fails before any run starts.
  - `EgressBlockedError`: `web_fetch` refused a target (a private, loopback or link-local
    address, a local name, a blocked host name), before connecting to it. `web_fetch` turns
    it into an error `ToolResult`.
  - `PatchError`: an `apply_patch` input is malformed, does not match the files, or names a
    refused path. The tool turns it into an error `ToolResult`, having changed nothing.
  - `JobLimitError`: `exec` refused a command: its agent has as many running commands as
    `ProcessLimits` allows, or the host is closing. `exec` turns it into an error result.

A tool that fails at run time does not raise to its caller: `invoke_tool` returns an error
`ToolResult`. Only `trio.Cancelled` (and other `BaseException`s) escape it.
"""

from __future__ import annotations

from ..protocol import ClawlaneError


class ToolError(ClawlaneError):
    """Base class of the errors raised by `runtime.tools`."""


class SandboxError(ToolError):
    """A path was refused by the workspace sandbox. The message says why, for the model."""


class ToolPolicyError(ToolError):
    """A tool policy names an unknown profile or tool group."""


class PatchError(ToolError):
    """A patch is malformed, does not match the files, or names a refused path. The message
    is meant for the model."""


class EgressBlockedError(ToolError):
    """A network target was refused by the SSRF guard. The message says why, for the model."""


class JobLimitError(ToolError):
    """A command was refused: its agent runs as many as allowed, or the host is closing."""
