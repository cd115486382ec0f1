"""`gateway`: the agent reads its gateway's config and the config's schema (OpenClaw's
`gateway` tool: `config.get`, `config.schema.lookup`, `update.run`).

The tool knows nothing of the config's files: the host hands it a `ConfigReader` (the
gateway's config methods, `transports.methods`), which answers what `config.get` and
`config.schema.lookup` answer an operator, secrets redacted. As OpenClaw's tool:

- `config.get` with `path` (`agents.defaults.model`, `models.providers.openai`,
  `agents.list[0]`): `{ok: true, result: {hash, path, config: <that subtree>}}`; a path that
  is not there is a tool error (`config path not found: <path>`); without `path` the whole
  snapshot, unless its text passes 12,000 characters (then the error asks for a `path`,
  which in practice every real config needs);
- `config.schema.lookup` with `path` (required): `{ok: true, result: <the node, its hint and
  children>}`, or `{ok: false, code: "schema_path_not_found", path, message}`;
- `update.run`: OpenClaw's self-update; clawlane does not update itself, so it answers
  `{ok: false, code: "unsupported", ...}`. The tool writes nothing: OpenClaw 2026.9.6's tool
  has no config writes either (operators change the config with `config.set/patch/apply`).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Final, Literal, Protocol

import msgspec

from ._errors import ToolError
from ._tool import ToolContext, ToolResult, text_result

__all__ = ["ConfigReader", "GatewayTool", "GatewayToolParams"]

MAX_TEXT_CHARS: Final = 12_000
SCHEMA_PATH_NOT_FOUND: Final = "config schema path not found"


class ConfigReader(Protocol):
    """The gateway's config as its operators read it (secrets redacted)."""

    async def config_snapshot(self) -> dict[str, Any]:
        """What `config.get` answers (`{path, exists, hash, valid, config, ...}`). A
        checkpoint."""
        ...

    async def schema_lookup(self, path: str) -> dict[str, Any] | None:
        """What `config.schema.lookup` answers for `path`, or None when the schema has no
        such path. A checkpoint."""
        ...


class GatewayToolParams(msgspec.Struct, frozen=True, rename="camel"):
    """OpenClaw 2026.9.6's gateway tool schema (GatewayToolSchema), unknown fields ignored."""

    action: Literal["config.get", "config.schema.lookup", "update.run"]
    gateway_url: str | None = None
    gateway_token: str | None = None
    timeout_ms: Annotated[int, msgspec.Meta(ge=1)] | None = None
    note: (
        Annotated[
            str, msgspec.Meta(description="Short human note for the post-update restart notice.")
        ]
        | None
    ) = None
    path: (
        Annotated[
            str,
            msgspec.Meta(description="Required for config.schema.lookup; optional for config.get."),
        ]
        | None
    ) = None


def _json_result(payload: dict[str, Any]) -> ToolResult:
    return text_result(json.dumps(payload, indent=2, ensure_ascii=False), details=payload)


def _subtree(config: Any, path: str) -> Any:
    """The value at `path` (dots, `[n]` indexes), or `...` (Ellipsis) when absent."""
    parts = [p for p in re.sub(r"\[(\d+)\]", r".\1", path.strip()).split(".") if p]
    current = config
    for part in parts:
        if isinstance(current, list):
            if not part.isdigit() or int(part) >= len(current):
                return ...
            current = current[int(part)]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            return ...
    return current if parts else ...


class GatewayTool:
    """`gateway` (see the module docstring), reading through the host's `reader`."""

    name = "gateway"
    description = (
        "Read gateway config/schema: config.get with a path (e.g. agents.defaults.model), "
        "config.schema.lookup with a path. update.run is not available on this gateway. "
        "Never via shell."
    )
    params = GatewayToolParams
    mutating = False

    def __init__(self, reader: ConfigReader) -> None:
        self._reader = reader

    async def run(self, args: GatewayToolParams, ctx: ToolContext) -> ToolResult:
        """A checkpoint (the config is read). A bad request raises `ToolError`."""
        if args.gateway_url is not None:
            raise ToolError("gatewayUrl is not supported: the gateway tool reads this gateway")
        if args.action == "update.run":
            return _json_result(
                {
                    "ok": False,
                    "code": "unsupported",
                    "reason": "unsupported",
                    "message": "clawlane does not update itself; update it where it is installed",
                }
            )
        if args.action == "config.schema.lookup":
            if not args.path or not args.path.strip():
                raise ToolError("path required")
            found = await self._reader.schema_lookup(args.path)
            if found is None:
                payload = {
                    "ok": False,
                    "code": "schema_path_not_found",
                    "path": args.path,
                    "message": SCHEMA_PATH_NOT_FOUND,
                }
                return _json_result(payload)
            return _json_result({"ok": True, "result": found})
        return await self._config_get(args.path)

    async def _config_get(self, path: str | None) -> ToolResult:
        snapshot = await self._reader.config_snapshot()
        result: dict[str, Any] = snapshot
        if path:
            value = _subtree(snapshot.get("config"), path)
            if value is ...:
                raise ToolError(f"config path not found: {path}")
            result = {"path": path, "config": value}
            if snapshot.get("hash"):
                result = {"hash": snapshot["hash"], **result}
        payload = {"ok": True, "result": result}
        text = json.dumps(payload, indent=2, ensure_ascii=False)
        if len(text) > MAX_TEXT_CHARS:
            raise ToolError(
                "config.get response is too large; use path to request a narrower config subtree"
            )
        return text_result(text, details=payload)
