"""What a tool's failure looks like when it is answered as OpenClaw answers a tool that throws
(`runtime.tools.thrown_result`): `{status: "error", tool, error}` as two-space JSON text and as
details, an error result."""

from __future__ import annotations

import json
from typing import Any

from runtime.llm._types import TextContent
from runtime.tools import ToolResult


def thrown(result: ToolResult | dict[str, Any], tool: str) -> str:
    """The error message of `result` (a `ToolResult`, or one as a client or the transcript
    receives it: `{content, details, isError}`), asserting OpenClaw's thrown-tool shape."""
    if isinstance(result, ToolResult):
        assert result.is_error
        assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
        text, details = result.content[0].text, result.details
    else:
        assert result.get("isError") is True
        (block,) = result["content"]
        text, details = block["text"], result.get("details")
    assert isinstance(details, dict) and list(details) == ["status", "tool", "error"]
    assert details["status"] == "error" and details["tool"] == tool
    assert text == json.dumps(details, indent=2, ensure_ascii=False)
    message = details["error"]
    assert isinstance(message, str)
    return message
