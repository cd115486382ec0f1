"""What an `exec` command is, as the exec policy sees it: its segments, each one's argv and
resolved executable, whether it evaluates inline code, and whether it can be bound at all.

`analyze_command` splits a shell command (`exec`'s string form, run as `/bin/sh -c`) on the
top-level operators `&&`, `||`, `;`, `|` and newlines into segments, honouring quotes; an argv
list is one segment. A command the policy cannot bind to what will actually run is marked
`unbindable` (with why) instead of being guessed at: command substitution (`$(...)`, backticks),
any other `$` expansion (variables, shell arithmetic `$((...))`), redirections and here
documents (`<`, `>`), subshells and groups (`(`, `)`, `{`, `}`), background `&`, an unclosed
quote. Such a command is refused under an allowlist or ask policy rather than prompted (an
operator would approve text that is not what runs); only `full` without asking runs it.

Each segment's executable is resolved as the shell would: a name with a `/` against the working
directory, a bare name through `PATH`; `resolved` is its real path (symlinks followed), None
when it is not an executable file. A shell wrapper (`sh|bash|zsh|dash|ksh -c SCRIPT`) is looked
through: its script's segments are the ones matched against the allowlist (nested at most
`_MAX_DEPTH` deep), and the segment counts as inline eval.

Inline eval (`inline_eval_form`): the forms OpenClaw's `strictInlineEval` treats as code given
on the command line: `python -c`, `node -e/--eval/-p/--print`, `deno eval`, `bun -e`, `ruby -e`,
`perl -e/-E`, `php -r`, `lua -e`, `Rscript -e`, `osascript -e`, a shell's `-c`, and the
command carriers `awk` (its program), `sed` (its script), `find -exec/-execdir/-ok`, `xargs`,
`make --eval/-E`.

Allowlist entries (`AllowlistEntry`, OpenClaw's fields): `pattern` is a glob of the resolved
path (`*` within one directory, `**` across them, `~` the home directory) or, with no `/`, a
glob of a bare command name, which matches only a command invoked through `PATH`;
`argPattern` (when set) is a regular expression searched in the arguments after `argv[0]`
joined with single spaces. Safe bins (`safe_bin_ok`): stdin-only filters that pass without an
entry when their arguments are flags only (see `SAFE_BIN_PROFILES`), resolved in a trusted
directory.

Pure functions; `resolve_executable` reads the file system (stat, realpath), nothing else does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

import attrs

__all__ = [
    "DEFAULT_SAFE_BINS",
    "DEFAULT_SAFE_BIN_TRUSTED_DIRS",
    "AllowlistEntry",
    "CommandAnalysis",
    "Segment",
    "analyze_command",
    "entry_matches",
    "inline_eval_form",
    "resolve_executable",
    "safe_bin_ok",
]

DEFAULT_SAFE_BINS: Final = ("cut", "uniq", "head", "tail", "tr", "wc")
DEFAULT_SAFE_BIN_TRUSTED_DIRS: Final = ("/bin", "/usr/bin")
_NEVER_SAFE: Final = frozenset({"awk", "gawk", "mawk", "nawk", "sed", "jq"})
_MAX_DEPTH: Final = 2
_SHELLS: Final = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "fish"})
_OPERATORS: Final = ("&&", "||", ";", "|", "\n")
_UNBINDABLE_CHARS: Final = {
    "`": "command substitution",
    "<": "a redirection",
    ">": "a redirection",
    "(": "a subshell",
    ")": "a subshell",
    "{": "a command group",
    "}": "a command group",
}


@attrs.frozen
class SafeBinProfile:
    """Which arguments a safe bin may take: flags taking a value, flags refused, and how
    many plain (positional) arguments."""

    value_flags: frozenset[str] = frozenset()
    denied_flags: frozenset[str] = frozenset()
    max_positional: int = 0


SAFE_BIN_PROFILES: Final[dict[str, SafeBinProfile]] = {
    "cut": SafeBinProfile(value_flags=frozenset({"-d", "-f", "-c", "-b"})),
    "uniq": SafeBinProfile(value_flags=frozenset({"-f", "-s", "-w"})),
    "head": SafeBinProfile(value_flags=frozenset({"-n", "-c"})),
    "tail": SafeBinProfile(
        value_flags=frozenset({"-n", "-c"}),
        denied_flags=frozenset({"-f", "-F", "--follow", "--retry"}),
    ),
    "tr": SafeBinProfile(max_positional=2),
    "wc": SafeBinProfile(denied_flags=frozenset({"--files0-from"})),
    "grep": SafeBinProfile(
        value_flags=frozenset({"-e", "--regexp", "-m", "-A", "-B", "-C"}),
        denied_flags=frozenset(
            {"-r", "-R", "-d", "-f", "--file", "--recursive", "--directories"}
            | {"--dereference-recursive", "--exclude-from"}
        ),
    ),
    "sort": SafeBinProfile(
        value_flags=frozenset({"-k", "-t"}),
        denied_flags=frozenset(
            {"-o", "-T", "--output", "--temporary-directory", "--compress-program"}
            | {"--files0-from", "--random-source"}
        ),
    ),
}


@attrs.frozen
class AllowlistEntry:
    """One entry of an agent's allowlist (the approvals document's fields)."""

    pattern: str
    arg_pattern: str | None = None
    id: str | None = None
    source: str | None = None


@attrs.frozen
class Segment:
    """One simple command: its argv, the executable it resolves to (real path, or None), and
    the inline-eval form it uses (None: none)."""

    argv: tuple[str, ...]
    resolved: str | None
    inline_eval: str | None = None
    via_path: bool = True
    """`argv[0]` is a bare name looked up through `PATH`."""


@attrs.frozen
class CommandAnalysis:
    """A command as the policy sees it. `segments` are the ones matched against the
    allowlist (a shell wrapper's script's, not the wrapper's); `unbindable` says why the
    command cannot be bound (None: it can)."""

    text: str
    segments: tuple[Segment, ...]
    unbindable: str | None = None

    @property
    def inline_eval(self) -> str | None:
        return next((s.inline_eval for s in self.segments if s.inline_eval), None)


# --- splitting ----------------------------------------------------------------------------


def _read_quoted(text: str, i: int) -> tuple[str, int] | str:
    """The quoted text starting at `text[i]` (a quote) and the index after it, or why it
    cannot be bound (an expansion inside double quotes, an unclosed quote)."""
    quote = text[i]
    if quote == "'":
        end = text.find("'", i + 1)
        return (text[i + 1 : end], end + 1) if end >= 0 else "an unclosed quote"
    out: list[str] = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "$" or ch == "`":
            return "$ expansion" if ch == "$" else "command substitution"
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in '"\\$`\n':
            i += 1
            ch = text[i]
        out.append(ch)
        i += 1
    return "an unclosed quote"


def _split(text: str) -> tuple[list[list[str]], str | None]:
    """Split shell text into segments' words, or say why it cannot be bound."""
    segments: list[list[str]] = []
    words: list[str] = []
    word: list[str] | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "'\"":
            quoted = _read_quoted(text, i)
            if isinstance(quoted, str):
                return [], quoted
            word = [*(word or []), quoted[0]]
            i = quoted[1]
            continue
        if ch == "\\":
            if i + 1 >= len(text):
                return [], "a trailing backslash"
            if text[i + 1] != "\n":
                word = [*(word or []), text[i + 1]]
            i += 2
            continue
        operator = next((op for op in _OPERATORS if text.startswith(op, i)), None)
        if operator is not None or ch in " \t":
            if word is not None:
                words.append("".join(word))
                word = None
            i += len(operator) if operator is not None else 1
            if operator is not None and words:
                segments.append(words)
                words = []
            elif operator is not None and operator != "\n":
                return [], f"an empty command before {operator!r}"
            continue
        if ch == "#" and word is None:
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        why = _unbindable_char(ch)
        if why is not None:
            return [], why
        word = [*(word or []), ch]
        i += 1
    if word is not None:
        words.append("".join(word))
    return _finish(segments, words)


def _unbindable_char(ch: str) -> str | None:
    if ch == "$":
        return "$ expansion"
    if ch == "&":
        return "a background command"
    return _UNBINDABLE_CHARS.get(ch)


def _finish(segments: list[list[str]], words: list[str]) -> tuple[list[list[str]], str | None]:
    if words:
        segments.append(words)
    elif segments:
        return [], "a trailing operator"
    if not segments:
        return [], "an empty command"
    for argv in segments:
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
            return [], "an environment assignment"
    return segments, None


# --- resolving ----------------------------------------------------------------------------


def resolve_executable(name: str, *, cwd: Path, path: str | None) -> str | None:
    """The real path of the executable `name` runs (None: not an executable file)."""
    if not name:
        return None
    if "/" in name:
        candidates: Iterable[Path] = [cwd / Path(name).expanduser()]
    else:
        dirs = (path if path is not None else os.defpath).split(os.pathsep)
        candidates = (Path(d or ".") / name for d in dirs)
    for candidate in candidates:
        if not candidate.is_absolute():
            candidate = cwd / candidate
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    return None


def _base(argv0: str) -> str:
    return argv0.rsplit("/", 1)[-1].lower()


_EVAL_FLAGS: Final[dict[str, frozenset[str]]] = {
    "python": frozenset({"-c"}),
    "pypy": frozenset({"-c"}),
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "nodejs": frozenset({"-e", "--eval", "-p", "--print"}),
    "bun": frozenset({"-e", "--eval", "-p", "--print"}),
    "ruby": frozenset({"-e"}),
    "perl": frozenset({"-e", "-E"}),
    "php": frozenset({"-r"}),
    "lua": frozenset({"-e"}),
    "luajit": frozenset({"-e"}),
    "rscript": frozenset({"-e"}),
    "osascript": frozenset({"-e"}),
    "make": frozenset({"--eval", "-E"}),
}


def _family(base: str) -> str:
    """`python3.12` → `python`, `perl5` → `perl`."""
    return re.sub(r"[\d.]+$", "", base) or base


def inline_eval_form(argv: Sequence[str]) -> str | None:
    """The inline-eval form `argv` uses (e.g. `python -c`), or None."""
    if not argv:
        return None
    base = _base(argv[0])
    family = _family(base)
    args = argv[1:]
    if family in _SHELLS or base in _SHELLS:
        return f"{base} -c" if _shell_script_index(argv) is not None else None
    if family in {"awk", "gawk", "mawk", "nawk"}:
        return None if any(a == "-f" or a.startswith("--file") for a in args) else base
    if base == "sed":
        return None if any(a == "-f" or a.startswith("--file") for a in args) else "sed"
    if base == "find":
        hit = next((a for a in args if a in {"-exec", "-execdir", "-ok", "-okdir"}), None)
        return f"find {hit}" if hit else None
    if base == "xargs":
        return "xargs"
    if base == "deno" and args[:1] == ["eval"]:
        return "deno eval"
    flags = _EVAL_FLAGS.get(family)
    if flags is None:
        return None
    for arg in args:
        if arg in flags or (
            len(arg) > 2 and arg.startswith("-") and not arg.startswith("--") and arg[:2] in flags
        ):
            return f"{base} {arg[:2] if arg[:2] in flags else arg}"
        if not arg.startswith("-"):
            return None  # a script operand: what follows are its arguments
    return None


def _shell_script_index(argv: Sequence[str]) -> int | None:
    """Where a shell wrapper's `-c` script is in `argv` (None: not `sh -c`)."""
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "--":
            return None
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return i + 1 if i + 1 < len(argv) else None
        if not arg.startswith("-"):
            return None
    return None


def analyze_command(
    command: str | Sequence[str], *, cwd: Path, path: str | None, _depth: int = 0
) -> CommandAnalysis:
    """Split, resolve and classify `command` (a shell string or an argv list)."""
    if isinstance(command, str):
        text = command
        split, why = _split(command)
        if why is not None:
            return CommandAnalysis(text, (), unbindable=why)
    else:
        text = " ".join(command)
        split = [list(command)] if command else []
        if not split:
            return CommandAnalysis(text, (), unbindable="an empty command")
    segments: list[Segment] = []
    for argv in split:
        script_at = _shell_script_index(argv) if _base(argv[0]) in _SHELLS else None
        if script_at is not None:
            if _depth >= _MAX_DEPTH:
                return CommandAnalysis(text, (), unbindable="shell wrappers nested too deep")
            inner = analyze_command(argv[script_at], cwd=cwd, path=path, _depth=_depth + 1)
            if inner.unbindable is not None:
                return CommandAnalysis(text, (), unbindable=inner.unbindable)
            form = f"{_base(argv[0])} -c"
            segments.extend(
                attrs.evolve(s, inline_eval=s.inline_eval or form) for s in inner.segments
            )
            continue
        resolved = resolve_executable(argv[0], cwd=cwd, path=path)
        segments.append(
            Segment(tuple(argv), resolved, inline_eval_form(argv), via_path="/" not in argv[0])
        )
    return CommandAnalysis(text, tuple(segments))


# --- matching -----------------------------------------------------------------------------


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            if pattern.startswith("/", i):
                out.append("/?")  # `a/**/b` also matches `a/b`
                i += 1
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(ch, re.escape(ch)))
        i += 1
    return re.compile("".join(out) + r"\Z")


def entry_matches(entry: AllowlistEntry, segment: Segment, *, home: str | None = None) -> bool:
    """Whether `entry` allows `segment` (its path or bare-name glob, and its argPattern)."""
    pattern = entry.pattern.strip()
    if not pattern or segment.resolved is None:
        return False
    if "/" in pattern or pattern.startswith("~"):
        if pattern.startswith("~"):
            pattern = (home or os.path.expanduser("~")) + pattern[1:]
        if not _glob_regex(pattern).match(segment.resolved):
            return False
    elif not segment.via_path or not _glob_regex(pattern).match(segment.argv[0].rsplit("/", 1)[-1]):
        return False
    if entry.arg_pattern is None:
        return True
    try:
        return re.search(entry.arg_pattern, " ".join(segment.argv[1:])) is not None
    except re.error:
        return False


def safe_bin_ok(segment: Segment, safe_bins: Iterable[str], trusted_dirs: Iterable[str]) -> bool:
    """Whether `segment` runs a safe bin, stdin only: named in `safe_bins`, never one that
    cannot be bound to stdin (`awk`, `sed`, `jq`), resolved in a trusted directory, and only
    flags its profile allows (no file operands, nothing path-like)."""
    if not segment.argv or segment.resolved is None:
        return False
    name = _base(segment.argv[0])
    if name not in set(safe_bins) or name in _NEVER_SAFE or segment.inline_eval:
        return False
    dirs = {os.path.realpath(d) for d in trusted_dirs}
    if os.path.dirname(segment.resolved) not in dirs:
        return False
    profile = SAFE_BIN_PROFILES.get(name, SafeBinProfile())
    positional = 0
    args = iter(segment.argv[1:])
    for arg in args:
        if "/" in arg or arg.startswith("~"):
            return False
        flag = arg.split("=", 1)[0]
        if flag in profile.denied_flags or (
            arg.startswith("-") and not arg.startswith("--") and arg[:2] in profile.denied_flags
        ):
            return False
        if arg in profile.value_flags:
            value = next(args, None)
            if value is None or "/" in value:
                return False
        elif arg.startswith("-") and arg != "-":
            continue
        else:
            positional += 1
            if positional > profile.max_positional:
                return False
    return True
