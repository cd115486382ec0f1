"""Runtime selection, rule by rule (each with its negative case), and a plugin harness that
really runs a turn."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from runtime.agent._embedded import open_embedded_runtime
from runtime.hooks._registry import HookRegistry
from runtime.model._config import parse_config
from runtime.model._generation import GenerationError, build_generation
from runtime.model._harness import (
    AUTO,
    BUILTIN_HARNESS_ID,
    HarnessRegistry,
    HarnessSelectionError,
    ProviderRoute,
    RuntimePolicy,
    classify_openai_route,
    normalize_runtime_id,
    resolve_runtime_policy,
)
from runtime.model._plugins import HarnessSpec, PluginRegistry, PluginSnapshot, load_plugins

OFFICIAL = "https://api.openai.com/v1"


async def _noop_run(*args: Any, **kwargs: Any) -> None:
    return None


def harness(hid: str, *, priority: int = 0, supports: Any = None) -> HarnessSpec:
    return HarnessSpec(
        id=hid,
        supports=supports if supports is not None else (lambda route: True),
        priority=priority,
        run=_noop_run,
    )


def openai_only(route: ProviderRoute) -> bool:
    return route.provider in ("openai", "openai-codex")


CODEX = harness("codex", priority=1, supports=openai_only)
EVERYTHING = harness("everything", priority=100)
ALPHA = harness("alpha", priority=5)
BETA = harness("beta", priority=5)
LOW = harness("low", priority=1)
NEVER = harness("never", priority=1000, supports=lambda route: False)
COPILOT = harness("copilot", priority=50, supports=lambda route: route.modelId == "claims-me")


def provider(
    pid: str,
    *,
    api: str = "openai-completions",
    base: str = "https://llm.example/v1",
    models: tuple[str, ...] = ("m",),
    **extra: Any,
) -> dict[str, Any]:
    return {
        pid: {
            "api": api,
            "baseUrl": base,
            "apiKey": "k",
            "models": [{"id": m} for m in models],
            **extra,
        }
    }


def openai(*, api: str = "openai-responses", base: str = OFFICIAL, **extra: Any) -> dict[str, Any]:
    return provider("openai", api=api, base=base, models=("gpt",), **extra)


def config(
    providers: dict[str, Any],
    *,
    primary: str,
    models: dict[str, Any] | None = None,
    agents: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "models": {"providers": providers},
        "agents": {"defaults": {"model": {"primary": primary}, "models": models or {}}},
    }
    if agents is not None:
        raw["agents"]["list"] = agents
    return raw


def rt(runtime_id: str) -> dict[str, Any]:
    return {"agentRuntime": {"id": runtime_id}}


@attrs.frozen
class Row:
    rule: str
    raw: dict[str, Any]
    ref: str
    harnesses: tuple[HarnessSpec, ...] = ()
    expect: str | None = None  # harness id
    reason: str | None = None
    error: str | None = None
    agent: str | None = None


P = provider("p")
ROWS = [
    # Built-in and aliases.
    Row(
        "unset is auto, nothing registered: openclaw",
        config(P, primary="p/m"),
        "p/m",
        expect="openclaw",
        reason="auto_builtin",
    ),
    Row(
        "'default' means auto: a supporting plugin is picked",
        config(provider("p", agentRuntime={"id": "default"}), primary="p/m"),
        "p/m",
        (ALPHA,),
        expect="alpha",
        reason="auto_plugin",
    ),
    Row(
        "'pi' is openclaw, even when a plugin would claim the route",
        config(provider("p", agentRuntime={"id": "pi"}), primary="p/m"),
        "p/m",
        (EVERYTHING,),
        expect="openclaw",
        reason="forced_builtin",
    ),
    Row(
        "explicit 'openclaw' beats auto's plugin",
        config(provider("p", agentRuntime={"id": "openclaw"}), primary="p/m"),
        "p/m",
        (EVERYTHING,),
        expect="openclaw",
        reason="forced_builtin",
    ),
    Row(
        "'codex-app-server' is 'codex'",
        config(openai(agentRuntime={"id": "codex-app-server"}), primary="openai/gpt"),
        "openai/gpt",
        (CODEX,),
        expect="codex",
        reason="forced_plugin",
    ),
    Row(
        "'codex-app-server' with no codex registered fails closed",
        config(openai(agentRuntime={"id": "codex-app-server"}), primary="openai/gpt"),
        "openai/gpt",
        error='agent runtime "codex"',
    ),
    # Explicit plugin ids.
    Row(
        "an explicit registered plugin that supports the route runs it",
        config(provider("p", agentRuntime={"id": "alpha"}), primary="p/m"),
        "p/m",
        (ALPHA, EVERYTHING),
        expect="alpha",
        reason="forced_plugin",
    ),
    Row(
        "an explicit plugin that does not support the route fails closed",
        config(provider("p", agentRuntime={"id": "never"}), primary="p/m"),
        "p/m",
        (NEVER,),
        error='agent runtime "never" (set by models.providers.p.agentRuntime.id) '
        "does not support p/m",
    ),
    Row(
        "an explicit id that is not registered fails closed, naming where it was set",
        config(P, primary="p/m", models={"p/m": rt("ghost")}),
        "p/m",
        (EVERYTHING,),
        error='agent runtime "ghost" (set by agents.defaults.models[p/m].agentRuntime.id) '
        "is not registered",
    ),
    # auto.
    Row(
        "auto picks the supporting plugin with the highest priority",
        config(P, primary="p/m"),
        "p/m",
        (LOW, ALPHA, EVERYTHING, NEVER),
        expect="everything",
        reason="auto_plugin",
    ),
    Row(
        "auto breaks priority ties by id",
        config(P, primary="p/m"),
        "p/m",
        (BETA, ALPHA),
        expect="alpha",
        reason="auto_plugin",
    ),
    Row(
        "auto with no supporting plugin is openclaw",
        config(P, primary="p/m"),
        "p/m",
        (NEVER,),
        expect="openclaw",
        reason="auto_builtin",
    ),
    Row(
        "a provider id alone never selects a harness (provider 'copilot')",
        config(provider("copilot"), primary="copilot/m"),
        "copilot/m",
        (COPILOT,),
        expect="openclaw",
        reason="auto_builtin",
    ),
    Row(
        "...but the harness's own supports() does",
        config(provider("copilot", models=("claims-me",)), primary="copilot/claims-me"),
        "copilot/claims-me",
        (COPILOT,),
        expect="copilot",
        reason="auto_plugin",
    ),
    Row(
        "a model id alone never selects a harness (model 'codex-mini')",
        config(provider("p", models=("codex-mini",)), primary="p/codex-mini"),
        "p/codex-mini",
        (CODEX,),
        expect="openclaw",
        reason="auto_builtin",
    ),
    # Policy scope and precedence.
    Row(
        "the model entry beats the provider entry",
        config(
            provider("p", agentRuntime={"id": "alpha"}, models=())
            | {
                "p": {
                    "api": "openai-completions",
                    "baseUrl": "https://x/v1",
                    "apiKey": "k",
                    "agentRuntime": {"id": "alpha"},
                    "models": [{"id": "m", "agentRuntime": {"id": "beta"}}],
                }
            },
            primary="p/m",
        ),
        "p/m",
        (ALPHA, BETA),
        expect="beta",
        reason="forced_plugin",
    ),
    Row(
        "the provider entry applies to models without their own",
        config(provider("p", agentRuntime={"id": "beta"}), primary="p/m"),
        "p/m",
        (ALPHA, BETA),
        expect="beta",
        reason="forced_plugin",
    ),
    Row(
        "agents.defaults.models['p/m'] beats the provider entry",
        config(
            provider("p", agentRuntime={"id": "alpha"}), primary="p/m", models={"p/m": rt("beta")}
        ),
        "p/m",
        (ALPHA, BETA),
        expect="beta",
    ),
    Row(
        "the provider wildcard 'p/*' applies when no exact entry does",
        config(provider("p", models=("m", "n")), primary="p/m", models={"p/*": rt("beta")}),
        "p/n",
        (ALPHA, BETA),
        expect="beta",
        reason="forced_plugin",
    ),
    Row(
        "an exact model entry beats the wildcard",
        config(
            provider("p", models=("m", "n")),
            primary="p/m",
            models={"p/*": rt("beta"), "p/m": rt("alpha")},
        ),
        "p/m",
        (ALPHA, BETA),
        expect="alpha",
    ),
    Row(
        "the wildcard beats the provider entry",
        config(
            provider("p", agentRuntime={"id": "alpha"}), primary="p/m", models={"p/*": rt("beta")}
        ),
        "p/m",
        (ALPHA, BETA),
        expect="beta",
    ),
    Row(
        "a per-agent model entry beats the defaults (for that agent)",
        config(
            P,
            primary="p/m",
            models={"p/m": rt("alpha")},
            agents=[{"id": "main"}, {"id": "ops", "models": {"p/m": rt("beta")}}],
        ),
        "p/m",
        (ALPHA, BETA),
        expect="beta",
        agent="ops",
    ),
    Row(
        "...and not for another agent",
        config(
            P,
            primary="p/m",
            models={"p/m": rt("alpha")},
            agents=[{"id": "main"}, {"id": "ops", "models": {"p/m": rt("beta")}}],
        ),
        "p/m",
        (ALPHA, BETA),
        expect="alpha",
        agent="main",
    ),
    # OpenAI routes.
    Row(
        "official HTTPS Platform Responses route: auto picks codex implicitly",
        config(openai(), primary="openai/gpt"),
        "openai/gpt",
        (CODEX,),
        expect="codex",
        reason="implicit_codex",
    ),
    Row(
        "the official route without codex registered stays on openclaw",
        config(openai(), primary="openai/gpt"),
        "openai/gpt",
        (),
        expect="openclaw",
        reason="openai_builtin",
    ),
    Row(
        "ChatGPT Responses route: auto picks codex implicitly",
        config(openai(base="https://chatgpt.com/backend-api"), primary="openai/gpt"),
        "openai/gpt",
        (CODEX,),
        expect="codex",
        reason="implicit_codex",
    ),
    Row(
        "a completions adapter on the official host stays on openclaw",
        config(openai(api="openai-completions"), primary="openai/gpt"),
        "openai/gpt",
        (CODEX,),
        expect="openclaw",
        reason="openai_builtin",
    ),
    Row(
        "a custom endpoint stays on openclaw",
        config(openai(base="https://proxy.example.com/v1"), primary="openai/gpt"),
        "openai/gpt",
        (CODEX,),
        expect="openclaw",
        reason="openai_builtin",
    ),
    Row(
        "a non-standard path on the official host stays on openclaw",
        config(openai(base="https://api.openai.com/v2"), primary="openai/gpt"),
        "openai/gpt",
        (CODEX,),
        expect="openclaw",
    ),
    Row(
        "authored request headers keep the route on openclaw",
        config(openai(headers={"x-org": "a"}), primary="openai/gpt"),
        "openai/gpt",
        (CODEX,),
        expect="openclaw",
        reason="openai_builtin",
    ),
    Row(
        "authored request params keep the route on openclaw",
        config(
            openai(), primary="openai/gpt", models={"openai/gpt": {"params": {"temperature": 0.2}}}
        ),
        "openai/gpt",
        (CODEX,),
        expect="openclaw",
        reason="openai_builtin",
    ),
    Row(
        "other plugins are not asked about OpenAI routes under auto",
        config(openai(), primary="openai/gpt"),
        "openai/gpt",
        (EVERYTHING,),
        expect="openclaw",
        reason="openai_builtin",
    ),
    Row(
        "an explicit codex on a custom OpenAI endpoint is honoured",
        config(
            openai(base="https://proxy.example.com/v1", agentRuntime={"id": "codex"}),
            primary="openai/gpt",
        ),
        "openai/gpt",
        (CODEX,),
        expect="codex",
        reason="forced_plugin",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.rule for r in ROWS])
def test_runtime_selection(row: Row) -> None:
    snapshot = PluginSnapshot(version=1, tools=(), harnesses=row.harnesses)
    gen = build_generation(parse_config(row.raw), 1, plugins=snapshot)
    if row.error is not None:
        with pytest.raises(GenerationError, match=r"not registered|does not support") as info:
            gen.resolve(row.ref, agent_id=row.agent)
        assert row.error in str(info.value)
        assert isinstance(info.value.__cause__, HarnessSelectionError)
        return
    selection = gen.resolve(row.ref, agent_id=row.agent).harness
    assert selection is not None
    assert selection.id == row.expect
    if row.reason is not None:
        assert selection.reason == row.reason
    assert (selection.spec is None) == (row.expect == BUILTIN_HARNESS_ID)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, AUTO),
        ("", AUTO),
        ("default", AUTO),
        ("auto", AUTO),
        ("pi", "openclaw"),
        ("PI", "openclaw"),
        ("openclaw", "openclaw"),
        ("codex-app-server", "codex"),
        ("codex", "codex"),
        ("my-harness", "my-harness"),
    ],
)
def test_runtime_ids_are_normalised(raw: str | None, expected: str) -> None:
    assert normalize_runtime_id(raw) == expected


def test_a_model_level_default_overrides_a_provider_pin() -> None:
    cfg = parse_config(
        config(
            provider("p", agentRuntime={"id": "alpha"}),
            primary="p/m",
            models={"p/m": rt("default")},
        )
    )
    assert resolve_runtime_policy(cfg, "p", "m").id == AUTO


def test_plaintext_http_to_the_official_endpoint_is_rejected() -> None:
    raw = config(openai(base="http://api.openai.com/v1"), primary="openai/gpt")
    with pytest.raises(GenerationError, match=r"plaintext HTTP.*rejected"):
        build_generation(parse_config(raw), 1)
    route = ProviderRoute("openai", "gpt", "openai-responses", "http://api.openai.com/v1")
    with pytest.raises(HarnessSelectionError, match="plaintext"):
        HarnessRegistry.of([CODEX]).select(RuntimePolicy(AUTO), route)
    # ...while plaintext HTTP elsewhere (a local server) is fine.
    local = ProviderRoute("openai", "gpt", "openai-responses", "http://127.0.0.1:8000/v1")
    assert HarnessRegistry.of([CODEX]).select(RuntimePolicy(AUTO), local).id == "openclaw"


@pytest.mark.parametrize(
    ("base", "api", "kind"),
    [
        (OFFICIAL, "openai-responses", "platform-responses"),
        (OFFICIAL + "/", "openai-responses", "platform-responses"),
        ("https://chatgpt.com/backend-api/codex", "openai-responses", "chatgpt-responses"),
        ("https://api.openai.com:8443/v1", "openai-responses", "other-openai"),
        ("https://api.openai.com/v1?x=1", "openai-responses", "other-openai"),
        (OFFICIAL, "openai-completions", "other-openai"),
        ("https://api.openai.com.evil.example/v1", "openai-responses", "other-openai"),
    ],
)
def test_official_route_classification(base: str, api: str, kind: str) -> None:
    assert classify_openai_route(ProviderRoute("openai", "gpt", api, base)) == kind


def test_a_harness_whose_supports_raises_fails_the_build() -> None:
    def boom(route: ProviderRoute) -> bool:
        raise RuntimeError("plugin bug")

    snapshot = PluginSnapshot(1, (), (harness("buggy", supports=boom),))
    with pytest.raises(GenerationError, match=r"buggy.*plugin bug"):
        build_generation(parse_config(config(P, primary="p/m")), 1, plugins=snapshot)


def test_an_unregistered_primary_runtime_is_a_build_warning_not_a_failure() -> None:
    gen = build_generation(parse_config(config(P, primary="p/m", models={"p/m": rt("ghost")})), 1)
    assert gen.agent_generations["main"].primary_runtime is None
    assert any("ghost" in w for w in gen.warnings)


def test_reserved_and_duplicate_harness_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="reserved"):
        HarnessRegistry.of([harness("codex-app-server")])
    with pytest.raises(ValueError, match="twice"):
        HarnessRegistry.of([harness("x"), harness("x")])


# --- a plugin harness that really runs a turn ------------------------------------------------

HARNESS_PLUGIN = textwrap.dedent(
    '''
    """A test plugin: an agent harness that owns its loop for `local` routes."""

    import trio

    from runtime.plugin_sdk import AssistantMessage, HarnessSpec, PluginApi, TextContent

    PLUGIN_ID = "echo-harness-plugin"
    RUNS = []


    async def run(inp, emit, progress):
        RUNS.append(inp.run_id)
        text = ""
        for word in ["[echo-harness]", " ", inp.user_message.content]:
            await trio.lowlevel.checkpoint()
            text += word
            progress.text = text
            progress.streamed_output = True
            emit("assistant", {"text": text, "delta": word})
        message = AssistantMessage(
            content=[TextContent(text)], timestamp=inp.user_message.timestamp,
            provider=inp.provider_id, model=inp.model_id,
        )
        progress.messages.append(message)
        progress.turns += 1
        return progress


    def register(api: PluginApi) -> None:
        api.register_harness(
            HarnessSpec(
                id="echo-harness",
                supports=lambda route: route.api == "local",
                priority=10,
                run=run,
            )
        )
    '''
)


async def test_a_plugin_harness_registered_through_the_sdk_runs_a_turn(tmp_path: Path) -> None:
    plugin_file = tmp_path / "echo_harness_plugin.py"
    plugin_file.write_text(HARNESS_PLUGIN)
    registry = PluginRegistry()
    with trio.fail_after(10):
        async with open_embedded_runtime(
            workspace_root=tmp_path, config=parse_config({}), plugins=registry
        ) as runtime:
            before = await runtime.run_turn("hi there", session_key="s")
            assert before.meta["runtime"] == "openclaw" and before.text == "You said: hi there"

            [loaded] = await load_plugins([plugin_file], HookRegistry(), registry)
            assert loaded.ok and loaded.harnesses == ("echo-harness",)
            generation = runtime.publish()
            assert generation.number == 2 and "echo-harness" in generation.harnesses.ids()
            assert generation.agent_generations["main"].primary_runtime == "echo-harness"

            events: list[dict[str, Any]] = []
            after = await runtime.run_turn("hi there", session_key="s", on_event=events.append)
            assert after.status == "ok"
            assert after.meta["runtime"] == "echo-harness" and after.meta["generation"] == 2
            assert after.text == "[echo-harness] hi there"
            deltas = [e["data"]["delta"] for e in events if e["stream"] == "assistant"]
            assert "".join(deltas) == "[echo-harness] hi there"
            phases = [e["data"]["phase"] for e in events if e["stream"] == "lifecycle"]
            assert phases == ["start", "end"]
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
            # The turn went into the session's transcript like any other.
            assert [type(m).__name__ for m in runtime.transcript("s")] == [
                "UserMessage",
                "AssistantMessage",
                "UserMessage",
                "AssistantMessage",
            ]

            assert registry.unload_plugin("echo-harness-plugin")
            assert runtime.publish().agent_generations["main"].primary_runtime == "openclaw"
