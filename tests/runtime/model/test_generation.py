"""The generation snapshot and its inputs: config decoding, auth templates, per-agent
catalogs, failed builds, provider reuse, stores forked per run, and the config file helpers
(snapshots, merge patch, redaction)."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from runtime.model._config import (
    MISSING_FILE_HASH,
    REDACTED_SENTINEL,
    ConfigError,
    apply_merge_patch,
    auth_profiles_path,
    config_text,
    hash_config_raw,
    load_auth_profiles,
    parse_config,
    read_config_snapshot,
    redact_config,
    restore_redacted,
    snapshot_from_text,
    write_config_text,
)
from runtime.model._generation import (
    GenerationBuilder,
    GenerationError,
    ProviderPool,
    build_generation,
    default_provider_factory,
)
from runtime.model._plugins import PluginSnapshot

NOW = 1_800_000_000_000


def remote(
    pid: str = "acme", *, models: tuple[str, ...] = ("big", "small"), **extra: Any
) -> dict[str, Any]:
    return {
        pid: {
            "api": "openai-completions",
            "baseUrl": "https://llm.acme.example/v1",
            "models": [{"id": m, "contextWindow": 64_000} for m in models],
            **extra,
        }
    }


LOCAL = {"local": {"api": "local", "models": [{"id": "echo"}]}}


def cfg(**raw: Any) -> Any:
    return parse_config(raw, env={"ACME_KEY": "sk-env"})


def write_store(state: Path, agent: str, data: dict[str, Any]) -> Path:
    path = auth_profiles_path(state, agent)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


# --- config ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ({"gateway": {"port": "x"}}, "gateway.port"),
        (
            {"models": {"providers": {"ok": {"api": "local"}, "bad": {"api": "nope"}}}},
            "models.providers.bad.api",
        ),
        (
            {"auth": {"profiles": {"acme:main": {"provider": "acme", "mode": "magic"}}}},
            "auth.profiles.acme:main.mode",
        ),
        (
            {"agents": {"list": [{"id": "a"}, {"id": "b", "models": {"p/m": {"alias": 1}}}]}},
            "agents.list[1].models[p/m].alias",
        ),
        ({"agents": {"defaults": {"models": {"no-slash": {}}}}}, "agents.defaults.models"),
        (
            {"models": {"providers": {"acme": {"api": "openai-completions"}}}},
            "models.providers.acme.baseUrl",
        ),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_config_errors_name_the_key_path(raw: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    assert info.value.path == path


def test_secrets_come_from_the_environment() -> None:
    config = cfg(models={"providers": remote(apiKey="${ACME_KEY}")})
    assert config.models.providers["acme"].apiKey == "sk-env"
    with pytest.raises(ConfigError, match="MISSING_ONE is not set") as info:
        parse_config(
            {"auth": {"profiles": {"x": {"provider": "a", "key": "${MISSING_ONE}"}}}}, env={}
        )
    assert info.value.path == "auth.profiles.x.key"


def test_a_config_file_snapshot_hashes_the_text_and_reports_issues(tmp_path: Path) -> None:
    path = tmp_path / "clawlane.json"
    missing = read_config_snapshot(path)
    assert not missing.exists and missing.valid and missing.hash == MISSING_FILE_HASH
    write_config_text(path, '{"gateway": {"port": 1234}}')
    good = read_config_snapshot(path)
    assert good.valid and good.config is not None and good.config.gateway.port == 1234
    assert good.hash == hash_config_raw(path.read_text()) != MISSING_FILE_HASH
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text('{"gateway": {"port": "no"}}')
    bad = read_config_snapshot(path)
    assert not bad.valid and bad.issues[0].path == "gateway.port"
    with pytest.raises(ConfigError, match=r"gateway\.port"):
        bad.require()
    assert not snapshot_from_text("{not json").valid


# --- merge patch and redaction ----------------------------------------------------------------


def test_merge_patch_merges_objects_deletes_nulls_and_merges_id_arrays_by_id() -> None:
    base = {
        "gateway": {"port": 1, "bind": "127.0.0.1"},
        "agents": {"list": [{"id": "a", "workspace": "wa"}, {"id": "b"}]},
    }
    patch = {
        "gateway": {"port": 2, "bind": None},
        "agents": {"list": [{"id": "b", "workspace": "wb"}, {"id": "c"}]},
    }
    assert apply_merge_patch(base, patch) == {
        "gateway": {"port": 2},
        "agents": {
            "list": [{"id": "a", "workspace": "wa"}, {"id": "b", "workspace": "wb"}, {"id": "c"}]
        },
    }
    assert base["gateway"] == {"port": 1, "bind": "127.0.0.1"}  # not mutated


def test_destructive_array_replacement_needs_replace_paths() -> None:
    base = {"agents": {"defaults": {"model": {"fallbacks": ["a/x", "b/y"]}}}}
    drop = {"agents": {"defaults": {"model": {"fallbacks": ["a/x"]}}}}
    with pytest.raises(ConfigError) as info:
        apply_merge_patch(base, drop)
    assert info.value.path == "agents.defaults.model.fallbacks"
    merged = apply_merge_patch(base, drop, replace_paths=["agents.defaults.model.fallbacks"])
    assert merged["agents"]["defaults"]["model"]["fallbacks"] == ["a/x"]
    grow = {"agents": {"defaults": {"model": {"fallbacks": ["a/x", "b/y", "c/z"]}}}}
    assert apply_merge_patch(base, grow)["agents"]["defaults"]["model"]["fallbacks"][-1] == "c/z"


def test_redaction_hides_secrets_and_restores_them_on_write() -> None:
    value = {
        "gateway": {"auth": {"mode": "token", "token": "t0p"}},
        "models": {
            "providers": {
                "acme": {
                    "apiKey": "sk-1",
                    "headers": {"X-Api-Key": "h"},
                    "models": [{"id": "m", "maxTokens": 5}],
                }
            }
        },
        "auth": {"profiles": {"p": {"provider": "acme", "key": "${ACME_KEY}"}}},
        "storage": {"postgres": {"url": "postgresql://app:pgpass@db:5432/clawlane"}},
        "cluster": {"redis": {"url": "redis://127.0.0.1:6379/0"}},
    }
    redacted = redact_config(value)
    text = json.dumps(redacted)
    for secret in ("t0p", "sk-1", '"h"', "pgpass"):
        assert secret not in text
    assert redacted["cluster"]["redis"]["url"] == "redis://127.0.0.1:6379/0"  # no password
    assert redacted["auth"]["profiles"]["p"]["key"] == "${ACME_KEY}"  # a reference, not a secret
    assert redacted["models"]["providers"]["acme"]["models"][0]["maxTokens"] == 5
    assert redacted["gateway"]["auth"]["mode"] == "token"
    assert restore_redacted(redacted, value) == value
    with pytest.raises(ConfigError) as info:
        restore_redacted({"gateway": {"auth": {"token": REDACTED_SENTINEL}}}, {})
    assert info.value.path == "gateway.auth.token"


# --- generations ------------------------------------------------------------------------------


def test_each_agent_gets_its_own_auth_providers_and_catalog(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_store(
        state,
        "ops",
        {
            "version": 1,
            "profiles": {"acme:ops": {"type": "api_key", "provider": "acme", "key": "sk-ops"}},
        },
    )
    config = cfg(
        models={"providers": {**remote(), **LOCAL}},
        agents={
            "defaults": {"model": "local/echo"},
            "list": [{"id": "main"}, {"id": "ops", "model": "acme/big"}],
        },
    )
    builder = GenerationBuilder(state_dir=state)
    gen = builder.build(builder.read_inputs(config), 7)
    main, ops = gen.agent_generations["main"], gen.agent_generations["ops"]
    assert gen.number == 7 and gen.default_agent == "main"
    assert "acme" not in main.providers and "acme" in ops.providers
    assert {e.id: e.available for e in main.catalog} == {"big": False, "small": False, "echo": True}
    assert all(e.available for e in ops.catalog)
    assert gen.catalog == main.catalog and gen.catalog_for("ops") == ops.catalog
    cred = ops.auth.credential("acme")
    assert cred is not None and cred.secret == "sk-ops" and cred.source == "file"
    assert "sk-ops" not in repr(cred)
    assert gen.resolve("acme/big", agent_id="ops").provider is ops.providers["acme"]
    with pytest.raises(GenerationError, match="no credential for provider 'acme'"):
        gen.resolve("acme/big")  # the default agent has no auth for acme


def test_auth_order_store_over_config_last_good_and_expiry() -> None:
    from runtime.model._auth import build_auth_template
    from runtime.model._config import AuthProfilesFile, parse_auth_profiles

    config = cfg(
        auth={
            "profiles": {
                "acme:a": {"provider": "acme", "key": "cfg-a"},
                "acme:meta": {"provider": "acme", "mode": "token"},
            }
        },
        models={"providers": remote()},
    )
    store = parse_auth_profiles(
        json.dumps(
            {
                "profiles": {
                    "acme:meta": {"type": "token", "provider": "acme", "token": "file-meta"},
                    "acme:old": {
                        "type": "token",
                        "provider": "acme",
                        "token": "gone",
                        "expires": NOW - 1,
                    },
                    "acme:z": {"type": "api_key", "provider": "acme", "key": "file-z"},
                },
                "lastGood": {"acme": "acme:z"},
            }
        ).encode(),
        source="store",
    )
    template = build_auth_template(config, "main", store, now_ms=NOW)
    assert template.order["acme"] == (
        "acme:z",
        "acme:a",
        "acme:meta",
    )  # lastGood first, expired out
    assert template.profiles["acme:meta"].secret == "file-meta"  # the store's secret wins
    explicit = msgspec.structs.replace(store, order={"acme": ["acme:meta", "acme:a"]})
    assert build_auth_template(config, "main", explicit, now_ms=NOW).order["acme"] == (
        "acme:meta",
        "acme:a",
    )
    # A run's store skips what failed during the run; the template stays untouched.
    run_store = template.fork()
    first = run_store.credential("acme")
    assert first is not None
    run_store.mark_failed(first, "auth")
    second = run_store.credential("acme")
    assert second is not None and second.profile_id == "acme:a"
    assert template.credential("acme") == first
    assert build_auth_template(config, "main", AuthProfilesFile(), now_ms=NOW).order["acme"] == (
        "acme:a",
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"models": {"providers": remote()}, "agents": {"defaults": {"model": "acme/big"}}},
            "agents.defaults.model: primary model 'acme/big' of agent 'main' has no auth",
        ),
        (
            {"models": {"providers": LOCAL}, "agents": {"defaults": {"model": "local/nope"}}},
            "unknown model 'local/nope'",
        ),
        (
            {
                "models": {"providers": LOCAL},
                "agents": {
                    "list": [{"id": "a", "model": {"primary": "local/echo", "fallbacks": ["x/y"]}}]
                },
            },
            "agents.list[0].model.fallbacks: unknown model 'x/y'",
        ),
        ({"models": {"providers": {"empty": {"api": "local"}}}}, "no models are configured"),
    ],
)
def test_a_build_that_cannot_complete_raises_and_names_the_key(
    raw: dict[str, Any], message: str
) -> None:
    with pytest.raises(GenerationError) as info:
        build_generation(cfg(**raw), 2)
    assert message in str(info.value)


def test_providers_that_need_no_credential() -> None:
    loopback = {
        "vllm": {
            "api": "openai-completions",
            "baseUrl": "http://127.0.0.1:8000/v1",
            "models": [{"id": "q"}],
        }
    }
    declared = {
        "keyless": {
            "api": "openai-completions",
            "baseUrl": "https://k.example/v1",
            "auth": "none",
            "models": [{"id": "q"}],
        }
    }
    gen = build_generation(
        cfg(
            models={"providers": {**loopback, **declared}}, agents={"defaults": {"model": "vllm/q"}}
        ),
        1,
    )
    assert set(gen.providers) == {"vllm", "keyless"}


def test_a_bad_auth_store_names_the_file_and_key(tmp_path: Path) -> None:
    path = write_store(tmp_path, "main", {"profiles": {"x": {"type": "api_key"}}})
    with pytest.raises(ConfigError) as info:
        load_auth_profiles(path)
    assert info.value.path == f"{path}:profiles.x"
    builder = GenerationBuilder(state_dir=tmp_path)
    with pytest.raises(GenerationError, match=r"auth-profiles\.json"):
        builder.build_config(cfg(), 1)


def test_inputs_hash_covers_config_auth_and_plugins(tmp_path: Path) -> None:
    builder = GenerationBuilder(state_dir=tmp_path)
    config = cfg(
        models={"providers": {**remote(), **LOCAL}}, agents={"defaults": {"model": "local/echo"}}
    )
    base = builder.read_inputs(config).digest()
    assert builder.read_inputs(config).digest() == base
    assert builder.read_inputs(config, PluginSnapshot(0, (), ())).digest() == base
    assert builder.read_inputs(config, PluginSnapshot(3, (), ())).digest() != base
    write_store(
        tmp_path,
        "main",
        {"profiles": {"acme:1": {"type": "api_key", "provider": "acme", "key": "k"}}},
    )
    with_auth = builder.read_inputs(config).digest()
    assert with_auth != base
    assert builder.build(builder.read_inputs(config), 1).inputs_hash == with_auth


def test_unchanged_providers_are_shared_across_generations_and_retired_ones_collected() -> None:
    made: list[str] = []

    def factory(pid: str, pconf: Any) -> Any:
        made.append(pid)
        return default_provider_factory(pid, pconf)

    pool = ProviderPool(factory)
    one = build_generation(cfg(models={"providers": {**LOCAL, **remote(apiKey="a")}}), 1, pool=pool)
    two = build_generation(cfg(models={"providers": {**LOCAL, **remote(apiKey="b")}}), 2, pool=pool)
    assert two.providers["local"] is one.providers["local"]
    assert two.providers["acme"] is not one.providers["acme"]
    assert made == ["acme", "local", "acme"]
    assert pool.collect_retired() == []  # both generations are alive
    old_acme = one.providers["acme"]
    del one
    gc.collect()
    assert pool.collect_retired() == [old_acme]
    assert len(pool) == 2


def test_a_run_forks_its_own_stores_and_keeps_its_generation() -> None:
    gen = build_generation(cfg(models={"providers": LOCAL}), 3)
    a, b = gen.fork_stores(), gen.fork_stores()
    assert a.generation == 3 and a.owner is gen and a.agent_id == "main"
    assert a.models is not b.models and a.auth is not b.auth
    a.models.clear()  # type: ignore[attr-defined]
    assert ("local", "echo") in gen.models and ("local", "echo") in b.models
    assert a.providers["local"] is gen.providers["local"]
    with pytest.raises(GenerationError, match="unknown agent"):
        gen.fork_stores("nobody")


def test_describe_is_json_ready() -> None:
    gen = build_generation(cfg(), 1)
    described = gen.describe()
    assert msgspec.json.decode(msgspec.json.encode(described)) == described
    assert described["number"] == 1 and described["harnesses"] == ["openclaw"]


def test_config_text_round_trips() -> None:
    value = {"gateway": {"port": 1}}
    assert json.loads(config_text(value)) == value and config_text(value).endswith("\n")
