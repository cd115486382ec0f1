"""The exec policy's decisions: modes, allowlist by resolved path and argPattern, safe bins,
inline eval, commands that cannot be bound, the fallback, and document over config."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from runtime.tools._errors import ToolPolicyError
from runtime.tools._exec_command import (
    AllowlistEntry,
    CommandAnalysis,
    analyze_command,
    inline_eval_form,
)
from runtime.tools._exec_policy import (
    ExecPolicy,
    allow_always_entries,
    allowlist_of,
    decide,
    document_policy,
    effective_policy,
    fallback,
    requested_policy,
    validate_document,
)

PATH = os.environ.get("PATH", os.defpath)
ECHO = os.path.realpath(shutil.which("echo") or "/bin/echo")
PRINTF = os.path.realpath(shutil.which("printf") or "/usr/bin/printf")


def cfg(**keys: object) -> SimpleNamespace:
    return SimpleNamespace(**keys)


def an(command: str | list[str], tmp_path: Path | None = None) -> CommandAnalysis:
    return analyze_command(command, cwd=tmp_path or Path("/"), path=PATH)


def test_modes_map_to_security_and_ask() -> None:
    assert requested_policy(None) == ExecPolicy()  # OpenClaw: full / off, fallback deny
    assert requested_policy(cfg(mode="deny")).security == "deny"
    p = requested_policy(cfg(mode="ask"))
    assert (p.security, p.ask, p.ask_fallback) == ("allowlist", "on-miss", "deny")
    assert requested_policy(cfg(mode="auto")).ask == "on-miss"
    p = requested_policy(cfg(security="allowlist", ask="always", askFallback="allowlist"))
    assert (p.security, p.ask, p.ask_fallback) == ("allowlist", "always", "allowlist")


def test_agent_overrides_global_key_by_key() -> None:
    p = requested_policy(cfg(mode="full", askFallback="full"), cfg(mode="ask"))
    assert (p.security, p.ask, p.ask_fallback) == ("allowlist", "on-miss", "full")
    p = requested_policy(cfg(mode="ask", strictInlineEval=True), cfg(security="full"))
    assert (p.security, p.ask, p.strict_inline_eval) == ("full", "on-miss", True)


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        ({"mode": "yolo"}, "tools.exec.mode"),
        ({"security": "open"}, "tools.exec.security"),
        ({"ask": "sometimes"}, "tools.exec.ask"),
        ({"askFallback": "ask"}, "tools.exec.askFallback"),
        ({"mode": "full", "security": "full"}, "mode cannot be combined"),
    ],
)
def test_bad_config_is_refused_naming_the_key(keys: dict[str, str], named: str) -> None:
    with pytest.raises(ToolPolicyError, match=named.replace(".", r"\.")):
        requested_policy(cfg(**keys))


def test_deny_mode_refuses_everything() -> None:
    v = decide(requested_policy(cfg(mode="deny")), an("echo hi"), [])
    assert v.action == "deny" and "denied" in v.reason


def test_allowlist_matches_the_resolved_path_not_the_name(tmp_path: Path) -> None:
    policy = requested_policy(cfg(mode="allowlist"))
    by_path = [AllowlistEntry(pattern=ECHO)]
    assert decide(policy, an("echo hi"), by_path).action == "allow"
    assert decide(policy, an("printf hi"), by_path).action == "deny"  # a miss, no asking
    # a bare name matches only a command found through PATH, not ./echo
    fake = tmp_path / "echo"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    bare = [AllowlistEntry(pattern="echo")]
    assert decide(policy, an("echo hi", tmp_path), bare).action == "allow"
    assert decide(policy, an("./echo hi", tmp_path), bare).action == "deny"
    # globs: * within a directory, ** across
    parent = os.path.dirname(ECHO)
    assert decide(policy, an("echo hi"), [AllowlistEntry(pattern=parent + "/*")]).action == "allow"
    assert decide(policy, an("echo hi"), [AllowlistEntry(pattern="/**/echo")]).action == "allow"
    assert decide(policy, an("echo hi"), [AllowlistEntry(pattern="/nope/*")]).action == "deny"


def test_arg_pattern_restricts_the_arguments() -> None:
    policy = requested_policy(cfg(mode="allowlist"))
    entries = [AllowlistEntry(pattern=ECHO, arg_pattern=r"^safe$")]
    assert decide(policy, an("echo safe"), entries).action == "allow"
    assert decide(policy, an("echo other"), entries).action == "deny"
    broken = [AllowlistEntry(pattern=ECHO, arg_pattern="(")]
    assert decide(policy, an("echo safe"), broken).action == "deny"


def test_every_segment_must_pass() -> None:
    policy = requested_policy(cfg(mode="ask"))
    entries = [AllowlistEntry(pattern=ECHO)]
    assert decide(policy, an("echo a && echo b; echo c"), entries).action == "allow"
    assert decide(policy, an("echo a && printf b"), entries).action == "ask"
    # a safe bin passes without an entry, with flags only
    assert decide(policy, an("echo a | wc -l"), entries).action == "allow"
    assert decide(policy, an("echo a | head -n 3"), entries).action == "allow"
    assert decide(policy, an("echo a | wc -l notes.txt"), entries).action == "ask"
    assert decide(policy, an("echo a | tail -f"), entries).action == "ask"


def test_ask_modes() -> None:
    entries = [AllowlistEntry(pattern=ECHO)]
    ask = requested_policy(cfg(mode="ask"))
    assert decide(ask, an("echo hi"), entries).action == "allow"
    assert decide(ask, an("printf hi"), entries).action == "ask"
    always = requested_policy(cfg(security="allowlist", ask="always"))
    assert decide(always, an("echo hi"), entries).action == "ask"
    full = requested_policy(cfg(mode="full"))
    assert decide(full, an("printf hi"), []).action == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "echo $(id)",
        "echo `id`",
        "echo $((1+2))",
        "echo $HOME",
        "echo hi > /tmp/x",
        "cat < /etc/passwd",
        "(echo hi)",
        "sleep 1 &",
        "echo 'unclosed",
        "FOO=1 echo hi",
    ],
)
def test_commands_that_cannot_be_bound_are_refused_not_asked(command: str) -> None:
    analysis = an(command)
    assert analysis.unbindable is not None
    for mode in ("ask", "allowlist"):
        v = decide(requested_policy(cfg(mode=mode)), analysis, [AllowlistEntry(pattern="**")])
        assert v.action == "deny" and "cannot bind" in v.reason
    assert decide(requested_policy(cfg(mode="full")), analysis, []).action == "allow"


def test_quotes_are_honoured() -> None:
    analysis = an("echo 'a && $b' \"c d\"")
    assert analysis.unbindable is None
    assert [s.argv for s in analysis.segments] == [("echo", "a && $b", "c d")]


@pytest.mark.parametrize(
    ("argv", "form"),
    [
        (["python3", "-c", "print(1)"], "python3 -c"),
        (["python3.12", "-c", "print(1)"], "python3.12 -c"),
        (["node", "-e", "1"], "node -e"),
        (["node", "--eval", "1"], "node --eval"),
        (["perl", "-E", "say 1"], "perl -E"),
        (["ruby", "-e", "p 1"], "ruby -e"),
        (["php", "-r", "echo 1;"], "php -r"),
        (["bash", "-lc", "ls"], "bash -c"),
        (["awk", "{print}"], "awk"),
        (["find", ".", "-exec", "rm", "{}", ";"], "find -exec"),
        (["xargs", "rm"], "xargs"),
        (["python3", "script.py", "-c"], None),
        (["node", "app.js"], None),
        (["ls", "-c"], None),
    ],
)
def test_inline_eval_forms(argv: list[str], form: str | None) -> None:
    assert inline_eval_form(argv) == form


def test_strict_inline_eval_asks_even_for_allowlisted_interpreters() -> None:
    python = shutil.which("python3")
    assert python
    entries = [AllowlistEntry(pattern=os.path.realpath(python))]
    lax = requested_policy(cfg(mode="allowlist"))
    strict = requested_policy(cfg(mode="allowlist", strictInlineEval=True))
    command = ["python3", "-c", "print(1)"]
    assert decide(lax, an(command), entries).action == "allow"
    v = decide(strict, an(command), entries)
    assert v.action == "ask" and "python3 -c" in v.reason
    assert decide(strict, an(["python3", "x.py"]), entries).action == "allow"
    # full mode too, and the fallback never lets it through
    full_strict = requested_policy(cfg(mode="full", strictInlineEval=True, askFallback="full"))
    v = decide(full_strict, an(command), [])
    assert v.action == "ask"
    assert fallback(full_strict, an(command), v, "timeout").action == "deny"
    assert allow_always_entries(an(command)) == []  # never persisted


def test_shell_wrapper_is_looked_through() -> None:
    policy = requested_policy(cfg(mode="allowlist"))
    entries = [AllowlistEntry(pattern=ECHO)]
    assert decide(policy, an("sh -c 'echo a && echo b'"), entries).action == "allow"
    assert decide(policy, an("sh -c 'echo a; printf b'"), entries).action == "deny"
    assert an("sh -c 'echo $(id)'").unbindable is not None


@pytest.mark.parametrize(
    ("fallback_to", "matched_action", "miss_action"),
    [("deny", "deny", "deny"), ("allowlist", "allow", "deny"), ("full", "allow", "allow")],
)
def test_fallback(fallback_to: str, matched_action: str, miss_action: str) -> None:
    policy = requested_policy(cfg(security="full", ask="always", askFallback=fallback_to))
    entries = [AllowlistEntry(pattern=ECHO)]
    hit, miss = an("echo hi"), an("printf hi")
    assert fallback(policy, hit, decide(policy, hit, entries), "timeout").action == matched_action
    v = fallback(policy, miss, decide(policy, miss, entries), "no-route")
    assert v.action == miss_action
    if miss_action == "deny":
        assert "Headless runs cannot wait for interactive exec approval" in v.reason
    # under security allowlist even askFallback full keeps the allowlist
    ask = requested_policy(cfg(mode="ask", askFallback=fallback_to))
    assert fallback(ask, miss, decide(ask, miss, entries), "timeout").action == "deny"


def test_document_only_tightens() -> None:
    requested = requested_policy(cfg(mode="full", askFallback="full"))
    doc = {
        "version": 1,
        "defaults": {"security": "allowlist", "ask": "on-miss"},
        "agents": {"main": {"ask": "always", "security": "full", "askFallback": "allowlist"}},
    }
    eff = effective_policy(requested, document_policy(doc, "main"))
    assert (eff.security, eff.ask, eff.ask_fallback) == ("full", "always", "allowlist")
    eff = effective_policy(requested, document_policy(doc, "other"))
    assert (eff.security, eff.ask, eff.ask_fallback) == ("allowlist", "on-miss", "full")
    strict = requested_policy(cfg(mode="deny"))
    loose = {"version": 1, "defaults": {"security": "full", "ask": "off"}}
    assert effective_policy(strict, document_policy(loose, "main")).security == "deny"


def test_document_validation_and_allowlists() -> None:
    doc = {
        "version": 1,
        "agents": {
            "main": {"allowlist": [{"pattern": ECHO}]},
            "*": {"allowlist": [{"pattern": "printf", "argPattern": "^x$"}]},
        },
    }
    assert validate_document(doc) is doc
    assert [e.pattern for e in allowlist_of(doc, "main")] == [ECHO, "printf"]
    assert [e.pattern for e in allowlist_of(doc, "ops")] == ["printf"]
    for bad, named in [
        ({"version": 2}, "version"),
        ({"version": 1, "defaults": {"security": "open"}}, "file.defaults.security"),
        ({"version": 1, "agents": {"a": {"allowlist": [{"pattern": " "}]}}}, "pattern"),
        (
            {"version": 1, "agents": {"a": {"allowlist": [{"pattern": "x", "argPattern": "("}]}}},
            "argPattern",
        ),
    ]:
        with pytest.raises(ToolPolicyError, match=named):
            validate_document(bad)


def test_allow_always_entries_bind_path_and_arguments() -> None:
    entries = allow_always_entries(an("echo hi there"))
    assert entries == [
        {
            "pattern": ECHO,
            "argPattern": r"^hi\ there$",
            "source": "allow-always",
            "lastResolvedPath": ECHO,
        }
    ]
    policy = requested_policy(cfg(mode="allowlist"))
    listed = allowlist_of({"version": 1, "agents": {"main": {"allowlist": entries}}}, "main")
    assert decide(policy, an("echo hi there"), listed).action == "allow"
    assert decide(policy, an("echo hi elsewhere"), listed).action == "deny"
    assert PRINTF  # resolved on this host
