"""The config file as OpenClaw writes it: JSON5 (comments, trailing commas, unquoted keys,
single quotes, hex numbers), still decoded strictly into the typed config with key paths in
the errors and `${VAR}` substitution; and what API writes do to such a file."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model._config import (
    ConfigError,
    load_config,
    parse_config,
    read_config_snapshot,
    snapshot_from_text,
    write_config_text,
)
from runtime.model._config_text import ConfigSyntaxError, decode_config_text, has_comments
from tests._logwatch import watch_logs
from tests.conftest import open_client, running_gateway

# An OpenClaw-style file: what `openclaw configure` and people write by hand.
OPENCLAW_STYLE = """// ~/.openclaw/openclaw.json
{
  $schema: './clawlane.schema.json',
  /* the gateway */
  gateway: {
    port: 0x4965,            // 18789, in hex
    bind: '127.0.0.1',
    auth: { mode: 'token', token: '${CLAWLANE_T_TOKEN}' },
  },
  agents: {
    defaults: {
      model: { primary: 'openai/gpt-4.1', fallbacks: ['local/echo',], },
      models: {
        'openai/gpt-4.1': { alias: 'gpt', params: { temperature: .2, maxTokens: +4096 } },
      },
      timeoutSeconds: 600,
      maxConcurrent: 4,
    },
    list: [
      { id: 'main', default: true, },
      { id: "work", workspace: "~/work", },
    ],
  },
  models: {
    mode: 'merge',
    providers: {
      openai: {
        api: 'openai-responses',
        baseUrl: 'https://api.openai.com/v1',   // not a comment: inside a string
        apiKey: '${CLAWLANE_T_KEY}',
        models: [{ id: 'gpt-4.1', contextWindow: 1047576, cost: { input: 2.0, output: 8. } }],
      },
      local: { api: 'local', models: [{ id: 'echo' }] },
    },
  },
  messages: { queue: { mode: 'collect', debounceMs: 250, }, },
}
"""

ENV = {"CLAWLANE_T_TOKEN": "tok-123", "CLAWLANE_T_KEY": "sk-abc"}

ADMIN = ["operator.admin", "operator.read", "operator.write"]


def test_an_openclaw_style_json5_file_decodes_into_the_typed_config() -> None:
    config = parse_config(decode_config_text(OPENCLAW_STYLE), env=ENV)
    assert config.json_schema == "./clawlane.schema.json"
    assert config.gateway.port == 18789 and config.gateway.auth.token == "tok-123"
    defaults = config.agents.defaults
    assert not isinstance(defaults.model, str) and defaults.model is not None
    assert defaults.model.primary == "openai/gpt-4.1" and defaults.model.fallbacks == ["local/echo"]
    assert defaults.models["openai/gpt-4.1"].params == {"temperature": 0.2, "maxTokens": 4096}
    assert [a.id for a in config.agents.entries] == ["main", "work"]
    openai = config.models.providers["openai"]
    assert openai.apiKey == "sk-abc" and openai.baseUrl == "https://api.openai.com/v1"
    cost = openai.models[0].cost
    assert cost is not None and cost.output == 8.0
    assert config.messages.queue.mode == "collect" and config.messages.queue.debounceMs == 250


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{a: 1,}", {"a": 1}),
        ('// only a comment line\n{"a": [1, 2,],}', {"a": [1, 2]}),
        ("{'single': 'quotes', \"mixed\": \"ok\"}", {"single": "quotes", "mixed": "ok"}),
        ("{ /* block */ a /* inside */ : 1 }", {"a": 1}),
        ("{long: 'one \\\ntwo'}", {"long": "one two"}),
        ('{"plain": "json", "n": 1.5}', {"plain": "json", "n": 1.5}),
        ("{a: -0x10, b: +.5, c: 5.}", {"a": -16, "b": 0.5, "c": 5.0}),
    ],
)
def test_json5_syntax(text: str, expected: dict[str, Any]) -> None:
    assert decode_config_text(text) == expected
    assert decode_config_text(text.encode()) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{\n  a: 1\n  b: 2\n}", 'line 3, column 3: unexpected "b"'),
        ("{a: 1}}", 'line 1, column 7: unexpected "}"'),
        ("{a: }", "line 1"),
        ("{a: Infinity}", "numbers must be finite"),
        ("{a: NaN}", "numbers must be finite"),
        ("{a: 1e400}", "numbers must be finite"),
        ('{"a": 1e400}', "numbers must be finite"),
        ("[" * 100_000, "nested too deeply"),
        ("[" * 80 + "]" * 80, "nested too deeply"),
        ("{a: " * 80 + "1" + "}" * 80, "nested too deeply"),
    ],
)
def test_syntax_errors_say_where(text: str, message: str) -> None:
    with pytest.raises(ConfigSyntaxError) as info:
        decode_config_text(text)
    assert message in str(info.value)


def test_json5_is_still_strict_unknown_keys_and_types_name_their_path() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(decode_config_text("{gateway: {prot: 1}, // typo\n}"))
    assert info.value.path == "gateway.prot" and 'did you mean "port"' in str(info.value)
    with pytest.raises(ConfigError) as info:
        parse_config(decode_config_text("{agents: {list: [{id: 'a', tools: {deny: 'x'}}]}}"))
    assert info.value.path == "agents.list[0].tools.deny"
    with pytest.raises(ConfigError, match="CLAWLANE_T_MISSING is not set"):
        parse_config(
            decode_config_text("{gateway: {auth: {token: '${CLAWLANE_T_MISSING}'}}}"), env={}
        )


def test_load_config_and_the_snapshot_read_json5_files(tmp_path: Path) -> None:
    path = tmp_path / "clawlane.json"
    path.write_text("{ // comment\n gateway: { port: 18790, }, }\n")
    assert load_config(path).gateway.port == 18790
    snapshot = read_config_snapshot(path)
    assert snapshot.valid and snapshot.parsed == {"gateway": {"port": 18790}}
    broken = snapshot_from_text("{ gateway: { port: 1 } agents: {} }")
    assert not broken.valid and broken.issues[0].message.startswith("not valid JSON5: line 1")
    path.write_text("{ nope")
    with pytest.raises(ConfigError, match="is not valid JSON5"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "https://x"}', False),
        ("{a: 'it\\'s // not'}", False),
        ('{"a": "/* no */"}', False),
        ("{a: 1} // yes", True),
        ("{/* yes */}", True),
        ('{"a": "\\\\"} // after an escaped backslash', True),
    ],
)
def test_comments_are_found_outside_strings_only(text: str, expected: bool) -> None:
    assert has_comments(text) is expected


# --- what API writes do to a JSON5 file ---------------------------------------------------------

COMMENTED = """// my gateway
{
  agents: { defaults: { maxConcurrent: 2 } },  // two at a time
  models: { providers: { local: { api: 'local', models: [{ id: 'echo' }] } } },
}
"""


async def test_a_patch_writes_json_keeps_the_old_file_as_bak_and_warns(tmp_path: Path) -> None:
    path = tmp_path / "clawlane.json"
    write_config_text(path, COMMENTED)
    with watch_logs() as logs, trio.fail_after(20):
        async with (
            running_gateway(tmp_path, load_config(path), config_path=path) as gw,
            open_client(gw, scopes=ADMIN) as client,
        ):
            snap = await client.request("config.get", {})
            assert snap["valid"] and snap["parsed"]["agents"]["defaults"]["maxConcurrent"] == 2
            await client.request(
                "config.patch",
                {
                    "raw": "{agents: {defaults: {maxConcurrent: 3}}, // JSON5 too\n}",
                    "baseHash": snap["hash"],
                },
            )
    written = path.read_text()
    assert json.loads(written)["agents"]["defaults"]["maxConcurrent"] == 3  # plain JSON now
    assert not has_comments(written)
    assert (tmp_path / "clawlane.json.bak").read_text() == COMMENTED
    assert (tmp_path / "clawlane.json.bak").stat().st_mode & 0o777 == 0o600
    [warning] = logs.events("config write drops the file's comments")
    assert warning["_level"] == "WARNING" and warning["previous"].endswith("clawlane.json.bak")


async def test_an_apply_of_json5_text_is_written_as_sent(tmp_path: Path) -> None:
    path = tmp_path / "clawlane.json"
    write_config_text(path, COMMENTED)
    new = COMMENTED.replace("maxConcurrent: 2", "maxConcurrent: 5")
    with watch_logs(logging.WARNING) as logs, trio.fail_after(20):
        async with (
            running_gateway(tmp_path, load_config(path), config_path=path) as gw,
            open_client(gw, scopes=ADMIN) as client,
        ):
            snap = await client.request("config.get", {})
            await client.request("config.apply", {"raw": new, "baseHash": snap["hash"]})
            assert gw.supervisor.generation.config.agents.defaults.maxConcurrent == 5
    assert path.read_text() == new  # its comments stay
    assert not logs.events("config write drops the file's comments")
