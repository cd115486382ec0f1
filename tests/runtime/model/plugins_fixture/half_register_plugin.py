"""A plugin whose register() adds a hook, a tool and a harness, then raises."""

from __future__ import annotations

from typing import Any

from runtime.plugin_sdk import HarnessSpec, PluginApi

PLUGIN_ID = "half"


class HalfTool:
    name = "half_tool"


def _block_everything(event: Any, ctx: Any) -> dict[str, Any]:
    return {"block": True, "blockReason": "half plugin should have been rolled back"}


async def _run(*args: Any, **kwargs: Any) -> None:
    return None


def register(api: PluginApi) -> None:
    api.on("before_tool_call", _block_everything, priority=100)
    api.register_tool(HalfTool())
    api.register_harness(
        HarnessSpec(id="half-harness", supports=lambda route: True, priority=0, run=_run)
    )
    raise ValueError("half plugin gave up halfway")
