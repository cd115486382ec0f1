"""Plugin loading, rollback of failed plugins, unloading, and the plugin SDK's public face."""

from __future__ import annotations

import logging
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import trio

import runtime.hooks._events as hooks_module
import runtime.plugin_sdk as sdk
from runtime.hooks._events import AgentEndEvent, BeforeToolCallEvent
from runtime.hooks._registry import HookRegistry
from runtime.model._plugins import HarnessSpec, PluginApi, PluginRegistry, load_plugins

LIMIT = 10  # seconds; every async test runs under trio.fail_after(LIMIT)
FIXTURES = Path(__file__).parent / "plugins_fixture"
GOOD = FIXTURES / "good_plugin.py"
BROKEN_IMPORT = FIXTURES / "broken_import_plugin.py"
HALF = FIXTURES / "half_register_plugin.py"
ASYNC_REGISTER = FIXTURES / "async_register_plugin.py"
NO_REGISTER = FIXTURES / "no_register_plugin.py"


def exec_event() -> BeforeToolCallEvent:
    return BeforeToolCallEvent(toolName="exec", params={"command": "ls"})


def loaded_module(stem: str) -> Any:
    """The module a file plugin named `stem` was loaded as."""
    [module] = [
        m for name, m in sys.modules.items() if name.startswith(f"_clawlane_plugin_{stem}_")
    ]
    return module


def write_plugin(directory: Path, name: str, body: str) -> Path:
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


async def test_good_plugin_registers_hooks_tools_and_harness() -> None:
    with trio.fail_after(LIMIT):
        hooks, registry = HookRegistry(), PluginRegistry()
        [result] = await load_plugins([GOOD], hooks, registry)
        assert result.ok, result.error
        assert (result.plugin_id, result.hooks) == ("good", 2)
        assert result.tools == ("good_echo",)
        assert result.harnesses == ("good-harness",)
        assert hooks.has("before_tool_call") and hooks.has("agent_end")
        assert [t.name for t in registry.tools()] == ["good_echo"]
        assert registry.tool_owner("good_echo") == "good"
        [harness] = registry.harnesses()
        assert isinstance(harness, HarnessSpec) and harness.priority == 1
        assert set(registry.plugins) == {"good"}
        assert registry.version > 0
        snapshot = registry.snapshot()
        assert snapshot.version == registry.version
        assert snapshot.harnesses == (harness,)

        decision = await hooks.run_before_tool_call(exec_event())
        assert (decision.block, decision.block_reason) == (True, "good plugin forbids exec")
        await hooks.fire("agent_end", AgentEndEvent(messages=[], success=True))


async def test_plugin_by_dotted_module_name(monkeypatch: pytest.MonkeyPatch) -> None:
    with trio.fail_after(LIMIT):
        monkeypatch.syspath_prepend(str(FIXTURES))
        hooks, registry = HookRegistry(), PluginRegistry()
        [result] = await load_plugins(["async_register_plugin"], hooks, registry)
        assert result.ok, result.error
        assert result.plugin_id == "async_register_plugin"
        assert await hooks.run_message_sending(sdk.MessageSendingEvent(to="u", content="hi")) == (
            "HI",
            False,
        )


async def test_async_register_from_a_file() -> None:
    with trio.fail_after(LIMIT):
        hooks, registry = HookRegistry(), PluginRegistry()
        [result] = await load_plugins([str(ASYNC_REGISTER)], hooks, registry)
        assert result.ok, result.error
        assert hooks.has("message_sending")


async def test_import_failure_is_reported_and_the_rest_still_load(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(LIMIT):
        hooks, registry = HookRegistry(), PluginRegistry()
        with caplog.at_level(logging.ERROR, logger="clawlane.plugins"):
            broken, good = await load_plugins([BROKEN_IMPORT, GOOD], hooks, registry)
        assert not broken.ok
        assert broken.error is not None
        assert "RuntimeError: broken_import_plugin cannot be imported" in broken.error
        assert str(BROKEN_IMPORT) in caplog.text
        assert "failed to import" in caplog.text
        assert good.ok
        assert set(registry.plugins) == {"good"}


async def test_failing_register_is_rolled_back(caplog: pytest.LogCaptureFixture) -> None:
    with trio.fail_after(LIMIT):
        hooks, registry = HookRegistry(), PluginRegistry()
        with caplog.at_level(logging.ERROR, logger="clawlane.plugins"):
            half, good = await load_plugins([HALF, GOOD], hooks, registry)
        assert not half.ok
        assert half.plugin_id == "half"
        assert half.error == "register failed: ValueError: half plugin gave up halfway"
        assert "'half'" in caplog.text and "rolled back" in caplog.text
        assert good.ok
        assert set(registry.plugins) == {"good"}
        assert [t.name for t in registry.tools()] == ["good_echo"]
        assert [h.id for h in registry.harnesses()] == ["good-harness"]
        assert hooks.statistics().plugins == ("good",)
        decision = await hooks.run_before_tool_call(BeforeToolCallEvent(toolName="read", params={}))
        assert decision.block is False


async def test_module_without_register_is_reported() -> None:
    with trio.fail_after(LIMIT):
        hooks, registry = HookRegistry(), PluginRegistry()
        [result] = await load_plugins([NO_REGISTER], hooks, registry)
        assert not result.ok
        assert result.error is not None and "register" in result.error
        [missing] = await load_plugins([FIXTURES / "no_such_plugin.py"], hooks, registry)
        assert not missing.ok and missing.error is not None and "no plugin file" in missing.error
        [unknown] = await load_plugins(["clawlane_no_such_module_xyz"], hooks, registry)
        assert not unknown.ok and unknown.error is not None
        assert "ModuleNotFoundError" in unknown.error
        assert registry.plugins == {}


async def test_unload_removes_everything_and_bumps_version() -> None:
    with trio.fail_after(LIMIT):
        hooks, registry = HookRegistry(), PluginRegistry()
        await load_plugins([GOOD], hooks, registry)
        before = registry.version
        assert registry.unload_plugin("good") is True
        assert registry.version > before
        assert not hooks.has("before_tool_call") and not hooks.has("agent_end")
        assert registry.tools() == () and registry.harnesses() == ()
        assert registry.plugins == {}
        assert registry.unload_plugin("good") is False
        [again] = await load_plugins([GOOD], hooks, registry)
        assert again.ok, again.error


async def test_api_kept_by_a_plugin_is_closed_after_unload(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        path = write_plugin(
            tmp_path,
            "keeper",
            """
            KEPT = []

            def register(api):
                KEPT.append(api)
                api.on("session_start", lambda event: None)
            """,
        )
        hooks, registry = HookRegistry(), PluginRegistry()
        [result] = await load_plugins([path], hooks, registry)
        assert result.ok and result.plugin_id == "keeper"
        api: PluginApi = loaded_module("keeper").KEPT[0]
        api.on("session_end", lambda event: None)
        assert hooks.has("session_end")
        registry.unload_plugin("keeper")
        assert not hooks.has("session_start") and not hooks.has("session_end")
        with pytest.raises(RuntimeError, match="keeper"):
            api.on("session_start", lambda event: None)


async def test_duplicate_plugin_id_is_refused_and_the_first_stays() -> None:
    with trio.fail_after(LIMIT):
        hooks, registry = HookRegistry(), PluginRegistry()
        first, second = await load_plugins([GOOD, GOOD], hooks, registry)
        assert first.ok
        assert not second.ok and second.error is not None and "already loaded" in second.error
        assert hooks.statistics().registrations == 2
        assert [t.name for t in registry.tools()] == ["good_echo"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            """
            def register(api):
                api.on("session_start", lambda event: None)
                api.on("before_tool_cal", lambda event: None)
            """,
            "unknown hook name 'before_tool_cal'",
            id="unknown-hook",
        ),
        pytest.param(
            """
            class T:
                name = "good_echo"

            def register(api):
                api.on("session_start", lambda event: None)
                api.register_tool(T())
            """,
            "tool 'good_echo' is already registered by plugin 'good'",
            id="duplicate-tool",
        ),
        pytest.param(
            """
            from runtime.plugin_sdk import HarnessSpec

            async def run(*args):
                pass

            def register(api):
                api.on("session_start", lambda event: None)
                api.register_harness(HarnessSpec("openclaw", lambda route: True, 0, run))
            """,
            "harness id 'openclaw' is reserved",
            id="reserved-harness",
        ),
        pytest.param(
            """
            import trio

            async def register(api):
                api.on("session_start", lambda event: None)
                await trio.lowlevel.checkpoint()
                raise KeyError("late")
            """,
            "register failed: KeyError: 'late'",
            id="async-register-raises",
        ),
    ],
)
async def test_bad_registrations_fail_the_plugin_and_roll_back(
    tmp_path: Path, body: str, message: str
) -> None:
    with trio.fail_after(LIMIT):
        hooks, registry = HookRegistry(), PluginRegistry()
        await load_plugins([GOOD], hooks, registry)
        version = registry.version
        [result] = await load_plugins([write_plugin(tmp_path, "bad", body)], hooks, registry)
        assert not result.ok
        assert result.error is not None and message in result.error
        assert not hooks.has("session_start")
        assert set(registry.plugins) == {"good"}
        assert [t.name for t in registry.tools()] == ["good_echo"]
        assert [h.id for h in registry.harnesses()] == ["good-harness"]
        assert registry.version != version


async def test_package_directory_plugin_with_declared_id(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        package = tmp_path / "my-pkg"
        package.mkdir()
        (package / "helpers.py").write_text("PRIORITY = 7\n")
        (package / "__init__.py").write_text(
            textwrap.dedent(
                """
                from .helpers import PRIORITY

                PLUGIN_ID = "declared"

                def register(api):
                    api.on("gateway_start", lambda event: None, priority=PRIORITY)
                """
            )
        )
        hooks, registry = HookRegistry(), PluginRegistry()
        [result] = await load_plugins([package], hooks, registry)
        assert result.ok, result.error
        assert result.plugin_id == "declared"
        assert [r.priority for r in hooks.handlers("gateway_start")] == [7]


async def test_version_changes_on_every_register_and_unregister(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        versions: list[int] = []
        registry = PluginRegistry()
        path = write_plugin(
            tmp_path,
            "counting",
            """
            KEPT = []

            def register(api):
                KEPT.append(api)
            """,
        )
        hooks = HookRegistry()
        await load_plugins([path], hooks, registry)
        api: PluginApi = loaded_module("counting").KEPT[0]
        versions.append(registry.version)

        async def run(*args: Any) -> None:
            pass

        api.on("agent_end", lambda event: None)
        versions.append(registry.version)
        api.register_tool(type("T", (), {"name": "counted"})())
        versions.append(registry.version)
        api.register_harness(HarnessSpec("counted", lambda route: True, 0, run))
        versions.append(registry.version)
        registry.unload_plugin("counting")
        versions.append(registry.version)
        assert versions == sorted(set(versions))


def test_plugin_sdk_public_face() -> None:
    assert sorted(sdk.__all__) == sorted(set(sdk.__all__))
    for name in sdk.__all__:
        assert getattr(sdk, name) is not None, name
    for needed in (
        "PluginApi",
        "HarnessSpec",
        "BeforeToolCallEvent",
        "BeforeToolCallResult",
        "MessageSendingResult",
        "ToolResultMessage",
        "Tool",
        "text_result",
    ):
        assert needed in sdk.__all__
    # Internals stay internal: the registries and loader are not part of the SDK.
    for internal in ("HookRegistry", "PluginRegistry", "load_plugins", "InternalHooks"):
        assert internal not in sdk.__all__
    # Every plugin-facing hook event, result and context type is exported.
    runner_records = {"InternalHookEvent", "PromptBuildResult", "AgentStartResult"}
    hook_types = {
        name
        for name in hooks_module.__all__
        if name.endswith(("Event", "Result", "Context")) and name not in runner_records
    }
    assert len(hook_types) == 38
    assert hook_types <= set(sdk.__all__)
