"""The CLI a person expects, run as the real entry point in a subprocess: one line and the
documented exit code for each bad input, tables and --json, --version, help on every flag,
config validate/schema, shell completion."""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import gateway_url, local_config, running_gateway
from transports.cli._completion import completion_script, walk_commands
from transports.cli._main import build_parser

CLI = [sys.executable, "-c", "import sys; from transports.cli._main import main; sys.exit(main())"]
EXIT_CONFIG, EXIT_UNREACHABLE, EXIT_ENVIRONMENT = 2, 3, 4


async def clawlane(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        [*CLI, *args], capture_stdout=True, capture_stderr=True, check=False, env=env
    )


def one_line(result: subprocess.CompletedProcess[bytes]) -> str:
    """The single stderr line of a failed command (asserting there is only one)."""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, result.stderr.decode()
    assert not result.stdout
    return lines[0]


def state_with_config(tmp_path: Path, config: dict[str, Any] | None = None) -> Path:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    config = config or {"gateway": {"auth": {"mode": "none"}}}
    (state / "clawlane.json").write_text(json.dumps(config))
    return state


# --- startup failures: one line, a documented code ----------------------------------------------


async def test_a_port_in_use_is_one_line_and_exit_4(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with trio.fail_after(60):
            result = await clawlane(
                "gateway", "--port", str(port), "--state-dir", str(state_with_config(tmp_path))
            )
    assert result.returncode == EXIT_ENVIRONMENT
    line = one_line(result)
    assert line.startswith(f"clawlane: cannot listen on 127.0.0.1:{port}: address already in use")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--log-level", "verbose"], "argument --log-level: invalid choice: 'verbose'"),
        (["--log-format", "xml"], "argument --log-format: invalid choice: 'xml'"),
        (["--port", "high"], "argument --port: invalid int value: 'high'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
async def test_bad_flags_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    with trio.fail_after(30):
        result = await clawlane("gateway", *args, "--state-dir", str(tmp_path / "s"))
    assert result.returncode == EXIT_CONFIG
    line = one_line(result)
    assert line.startswith(("clawlane gateway: ", "clawlane: ")) and expected in line
    assert line.endswith("--help)")
    assert not (tmp_path / "s").exists()  # nothing started


async def test_seed_config_with_workers_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Each worker started again would make its file the cluster's config once more."""
    with trio.fail_after(30):
        result = await clawlane(
            "gateway", "--seed-config", "--workers", "2", "--state-dir", str(tmp_path / "s")
        )
    assert result.returncode == EXIT_CONFIG
    assert one_line(result) == (
        "clawlane: --seed-config cannot be combined with --workers N (N > 1)"
    )
    assert not (tmp_path / "s").exists()  # nothing started


async def test_a_bad_log_level_in_the_environment_is_one_line(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "CLAWLANE_LOG_LEVEL": "chatty"}
    with trio.fail_after(30):
        result = await clawlane("gateway", "--state-dir", str(tmp_path / "s"), env=env)
    assert result.returncode == EXIT_CONFIG
    assert one_line(result) == (
        "clawlane: CLAWLANE_LOG_LEVEL=chatty is not one of debug, info, warning, error, critical"
    )


async def test_a_missing_config_file_named_on_the_command_line_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json5"
    with trio.fail_after(30):
        result = await clawlane(
            "gateway", "--config", str(missing), "--state-dir", str(tmp_path / "s")
        )
    assert result.returncode == EXIT_CONFIG
    assert one_line(result) == f"clawlane: config file {missing} does not exist"


async def test_an_invalid_config_names_the_key_and_counts_the_rest(tmp_path: Path) -> None:
    state = state_with_config(
        tmp_path, {"gateway": {"prot": 1, "bind": 7}, "agents": {"defualts": {}}}
    )
    with trio.fail_after(30):
        result = await clawlane("gateway", "--state-dir", str(state))
    assert result.returncode == EXIT_CONFIG
    line = one_line(result)
    assert line.startswith(
        'clawlane: config error at gateway.prot: unknown key (did you mean "port"?)'
    )
    assert line.endswith(f"(and 2 more: clawlane config validate {state / 'clawlane.json'})")


@pytest.mark.parametrize("case", ["a file", "under a file"])
async def test_an_unusable_state_dir_is_one_line_naming_it(tmp_path: Path, case: str) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    state = blocker if case == "a file" else blocker / "state"
    with trio.fail_after(30):
        result = await clawlane("gateway", "--port", "0", "--state-dir", str(state))
    assert result.returncode == EXIT_ENVIRONMENT
    line = one_line(result)
    assert str(state) in line and "listen" not in line
    expected = "is not a directory" if case == "a file" else "cannot create the state dir"
    assert expected in line


def _can_mount_read_only(path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        [
            "unshare",
            "-rm",
            "sh",
            "-c",
            f"mount --bind {path} {path} && mount -o remount,bind,ro {path} {path}",
        ],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


async def test_a_read_only_state_dir_is_one_line_naming_it(tmp_path: Path) -> None:
    """A read-only state dir (a read-only bind mount in a private mount namespace,
    so that it holds for root too) used to be "cannot listen" or a traceback."""
    state = state_with_config(tmp_path)
    if not _can_mount_read_only(state):
        pytest.skip("cannot make a read-only mount here (unshare -rm)")
    command = " ".join(
        [
            f"mount --bind {state} {state} && mount -o remount,bind,ro {state} {state} &&",
            "exec",
            *(f"'{part}'" for part in CLI),
            "gateway --port 0 --state-dir",
            str(state),
        ]
    )
    with trio.fail_after(60):
        result = await trio.run_process(
            ["unshare", "-rm", "sh", "-c", command],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == EXIT_ENVIRONMENT
    assert one_line(result) == (
        f"clawlane: the state dir {state} is not writable: Read-only file system"
    )


# --- talking to a gateway: tables, --json, unreachable -----------------------------------------


async def test_status_health_sessions_and_models_print_tables_and_json(tmp_path: Path) -> None:
    no_auth = local_config(gateway__auth={"mode": "none"})
    async with running_gateway(tmp_path, no_auth) as gw:
        url = gateway_url(gw)
        with trio.fail_after(60):
            ran = await clawlane("agent", "-m", "hello table", "--session-key", "tbl", "--url", url)
            assert ran.returncode == 0
            tables = {
                name: await clawlane(*name.split(), "--url", url)
                for name in ("status", "health", "sessions list", "models list")
            }
            machine = {
                name: await clawlane(*name.split(), "--json", "--url", url)
                for name in ("status", "sessions list", "models list")
            }
    for name, result in tables.items():
        assert result.returncode == 0, (name, result.stderr)
        with pytest.raises(json.JSONDecodeError):
            json.loads(result.stdout)  # a table, not JSON
    sessions = tables["sessions list"].stdout.decode().splitlines()
    assert sessions[0].startswith("1 session")
    header = sessions[2].split()
    assert header[:3] == ["KEY", "KIND", "AGENT"] and "TOKENS" in header
    assert sessions[3].split()[0] == "agent:main:tbl"
    models = tables["models list"].stdout.decode().splitlines()
    assert models[0].split()[:2] == ["PROVIDER", "MODEL"] and models[1].split()[:2] == [
        "local",
        "echo",
    ]
    status = tables["status"].stdout.decode()
    assert "uptimeMs" in status and "lanes" in status and "CAPACITY" in status
    assert any(
        line.split() == ["ok", "yes"] for line in tables["health"].stdout.decode().splitlines()
    )
    assert json.loads(machine["sessions list"].stdout)["sessions"][0]["key"] == "agent:main:tbl"
    assert json.loads(machine["models list"].stdout)["models"][0]["id"] == "echo"
    assert "uptimeMs" in json.loads(machine["status"].stdout)["clawlane"]


async def test_an_unreachable_gateway_is_one_line_and_exit_3() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with trio.fail_after(30):
        result = await clawlane("status", "--url", f"ws://127.0.0.1:{port}")
    assert result.returncode == EXIT_UNREACHABLE
    assert one_line(result).startswith("clawlane: cannot reach the gateway")


# --- version and help --------------------------------------------------------------------------


async def test_version_prints_the_version_and_the_protocol() -> None:
    from transports.server import VERSION

    with trio.fail_after(30):
        result = await clawlane("--version")
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"clawlane {VERSION} (OpenClaw Gateway protocol 4)"


def _parsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(parser.prog, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def test_every_flag_and_every_command_has_help() -> None:
    missing = []
    for prog, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {a.dest for a in action._choices_actions if a.help}
                missing += [f"{prog} {n}" for n in action.choices if n not in helped]
            elif not action.help or not action.help.strip():
                missing.append(f"{prog} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


# --- config validate / schema -------------------------------------------------------------------


async def test_config_validate_reports_every_problem_at_once(tmp_path: Path) -> None:
    config = tmp_path / "openclaw.json"
    config.write_text(
        """// written by hand, OpenClaw style
{
  gatway: { port: 18789 },            // misspelt
  gateway: { port: "high", auth: { mode: "tokn" } },
  agents: {
    defaults: { maxConcurent: 4, timeoutSeconds: -1, },
    list: [ { name: "no id" } ],
  },
  models: { providers: { openai: { baseURL: "https://api.openai.com/v1", apiKey: "${CLAWLANE_TEST_UNSET_KEY}" } } },
}
"""
    )
    with trio.fail_after(30):
        text = await clawlane("config", "validate", str(config))
        machine = await clawlane("config", "validate", str(config), "--json")
    assert text.returncode == machine.returncode == EXIT_CONFIG
    lines = text.stdout.decode().splitlines()
    assert lines[0] == f"{config}: 8 problems"
    assert '  gatway: unknown key (did you mean "gateway"?)' in lines
    assert "  gateway.port: Expected `int`, got `str`" in lines
    assert "  gateway.auth.mode: Invalid enum value 'tokn' (did you mean \"token\"?)" in lines
    assert '  agents.defaults.maxConcurent: unknown key (did you mean "maxConcurrent"?)' in lines
    assert "  agents.defaults.timeoutSeconds: Expected `int` >= 0" in lines
    assert "  agents.list[0].id: missing required key" in lines
    assert '  models.providers.openai.baseURL: unknown key (did you mean "baseUrl"?)' in lines
    assert (
        "  models.providers.openai.apiKey: environment variable CLAWLANE_TEST_UNSET_KEY is not set"
        in lines
    )
    report = json.loads(machine.stdout)
    assert report["valid"] is False and report["path"] == str(config)
    assert len(report["issues"]) == 8
    assert {i["path"] for i in report["issues"]} >= {"gatway", "agents.list[0].id"}


async def test_config_validate_passes_a_good_json5_file_and_explains_a_broken_one(
    tmp_path: Path,
) -> None:
    good = tmp_path / "good.json5"
    good.write_text(
        "{ gateway: { port: 18790, }, /* fine */ agents: { defaults: { maxConcurrent: 2 } } }"
    )
    broken = tmp_path / "broken.json5"
    broken.write_text("{\n  gateway: { port: 1 }\n  agents: {}\n}")
    with trio.fail_after(30):
        ok = await clawlane("config", "validate", str(good))
        bad = await clawlane("config", "validate", str(broken))
        missing = await clawlane("config", "validate", str(tmp_path / "missing.json"))
        default = await clawlane("config", "validate", "--state-dir", str(tmp_path / "empty"))
    assert ok.returncode == 0 and ok.stdout.decode().strip() == f"{good}: valid"
    assert bad.returncode == EXIT_CONFIG
    assert bad.stdout.decode().splitlines()[1] == (
        '  (file): not valid JSON5: line 3, column 3: unexpected "a"'
    )
    assert missing.returncode == EXIT_CONFIG and "does not exist" in one_line(missing)
    assert default.returncode == 0 and "the defaults apply" in default.stdout.decode()


async def test_config_schema_is_a_json_schema_that_judges_configs(tmp_path: Path) -> None:
    import jsonschema

    with trio.fail_after(30):
        result = await clawlane("config", "schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    validator = jsonschema.Draft202012Validator(schema)
    validator.check_schema(schema)
    good = {
        "$schema": "./clawlane.schema.json",
        "gateway": {"port": 18789, "auth": {"mode": "token", "token": "${T}"}},
        "agents": {"defaults": {"model": {"primary": "local/echo"}}, "list": [{"id": "main"}]},
        "models": {"providers": {"local": {"api": "local", "models": [{"id": "echo"}]}}},
    }
    assert list(validator.iter_errors(good)) == []
    assert [e.validator for e in validator.iter_errors({"gateway": {"prot": 1}})] == [
        "additionalProperties"
    ]
    assert list(validator.iter_errors({"gateway": {"port": 70000}}))


# --- completion ----------------------------------------------------------------------------------


async def test_bash_completion_completes_commands_flags_and_choices(tmp_path: Path) -> None:
    with trio.fail_after(30):
        result = await clawlane("completion", "bash")
    assert result.returncode == 0
    script = tmp_path / "clawlane.bash"
    script.write_bytes(result.stdout)
    probe = (
        f"source {script}\n"
        't(){ COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _clawlane;'
        ' echo "${COMPREPLY[*]}"; }\n'
        't clawlane ""\n'
        "t clawlane gateway --log-\n"
        't clawlane gateway --log-level ""\n'
        "t clawlane config v\n"
        't clawlane --version sessions ""\n'
        "t clawlane loadtest --rep\n"
    )
    with trio.fail_after(30):
        ran = await trio.run_process(["bash", "-c", probe], capture_stdout=True, check=True)
    lines = ran.stdout.decode().splitlines()
    assert lines[0].split() == [
        "gateway", "agent", "call", "health", "status", "sessions", "models", "loadtest",
        "dashboard", "config", "completion",
    ]  # fmt: skip
    assert lines[1].split() == ["--log-level", "--log-format"]
    assert lines[2].split() == ["debug", "info", "warning", "error", "critical"]
    assert lines[3] == "validate"
    assert lines[4] == "list"
    assert lines[5] == "--report"


def test_the_completion_scripts_know_every_command_of_the_parser() -> None:
    parser = build_parser()
    commands = [" ".join(c.path) for c in walk_commands(parser)]
    assert {"", "gateway", "config validate", "config schema", "completion"} <= set(commands)
    zsh = completion_script(parser, "zsh")
    assert zsh.startswith("#compdef clawlane")
    for cmd in walk_commands(parser):
        assert ("_clawlane" + "".join(f"_{p}" for p in cmd.path)).replace("-", "_") + "()" in zsh
    assert (
        "'--log-level[log level (default\\: $CLAWLANE_LOG_LEVEL or info)]:log-level:(debug info warning error critical)'"
        in zsh
    )
    with pytest.raises(ValueError, match="unknown shell"):
        completion_script(parser, "tcsh")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
async def test_the_zsh_completion_is_valid_zsh_that_registers_itself(tmp_path: Path) -> None:
    script = tmp_path / "_clawlane"
    script.write_text(completion_script(build_parser(), "zsh"))
    with trio.fail_after(30):
        await trio.run_process(["zsh", "-n", str(script)], check=True)
        ran = await trio.run_process(
            [
                "zsh",
                "-f",
                "-c",
                f"autoload -U compinit; compinit -u -D; source {script};"
                " print -r -- ${_comps[clawlane]}; whence -w _clawlane_config_validate",
            ],
            capture_stdout=True,
            check=True,
        )
    assert ran.stdout.decode().split() == ["_clawlane", "_clawlane_config_validate:", "function"]
