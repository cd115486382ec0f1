"""`clawlane config validate [FILE]` and `clawlane config schema`: offline, no gateway.

`validate` reads the file as the gateway would (JSON5, `${VAR}` from this environment) and
lists every problem at once (`runtime.model._config_check.config_issues`), one `path: message` line
each; exit 0 when it is valid, 2 when it is not or cannot be read. `--json` prints
`{"valid", "path", "exists", "issues": [{"path", "message"}]}` instead (the exit code is the
same). Without FILE it checks `<state-dir>/clawlane.json`, where a missing file is valid (the
defaults apply); a FILE named explicitly must exist.

`schema` prints the config's JSON Schema (2020-12), for editors (`"$schema"` in the file).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from runtime.model import ConfigIssue

# `runtime.model` (the config's types, and the providers they name) is imported by the
# functions that check a config, not here: every `clawlane` start builds the parser
# (`add_offline_config_commands`), and a client command must stay light.

__all__ = ["add_offline_config_commands", "config_error_summary", "run_offline_config"]

_EXIT_INVALID = 2


def _state_dir_default() -> Path:
    return Path(os.environ.get("CLAWLANE_STATE_DIR", ".clawlane"))


def add_offline_config_commands(actions: Any) -> None:
    """Add `validate` and `schema` to the `config` subcommands."""
    validate = actions.add_parser(
        "validate", help="check a config file and list every problem (no gateway needed)"
    )
    validate.add_argument(
        "file",
        type=Path,
        nargs="?",
        default=None,
        help="the config file (default: <state-dir>/clawlane.json)",
    )
    validate.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where the default config file is (default: $CLAWLANE_STATE_DIR or .clawlane)",
    )
    validate.add_argument("--json", action="store_true", help="print the result as JSON")
    actions.add_parser("schema", help="print the config file's JSON Schema")


def _issues_of(path: Path, *, explicit: bool) -> tuple[bool, list[ConfigIssue]] | str:
    """(exists, issues), or a one-line error when the file cannot be checked at all."""
    from runtime.model import ConfigIssue, ConfigSyntaxError, config_issues, decode_config_text

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if explicit:
            return f"config file {path} does not exist"
        return False, []
    except IsADirectoryError:
        return f"config file {path} is a directory"
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    try:
        raw = decode_config_text(data)
    except (ConfigSyntaxError, UnicodeDecodeError) as exc:
        return True, [ConfigIssue("", f"not valid JSON5: {exc}")]
    return True, config_issues(raw)


def config_error_summary(path: Path) -> int:
    """How many problems `path` has (0 when it cannot be read or is valid)."""
    result = _issues_of(path, explicit=False)
    return len(result[1]) if isinstance(result, tuple) else 0


def _validate(args: argparse.Namespace) -> int:
    explicit = args.file is not None
    path: Path = args.file or (args.state_dir or _state_dir_default()) / "clawlane.json"
    result = _issues_of(path, explicit=explicit)
    if isinstance(result, str):
        print(f"clawlane: {result}", file=sys.stderr)
        return _EXIT_INVALID
    exists, issues = result
    if args.json:
        report = {
            "valid": not issues,
            "path": str(path),
            "exists": exists,
            "issues": [i.to_json() for i in issues],
        }
        print(msgspec.json.encode(report).decode())
    elif not exists:
        print(f"{path}: no such file; the defaults apply (valid)")
    elif not issues:
        print(f"{path}: valid")
    else:
        noun = "problem" if len(issues) == 1 else "problems"
        print(f"{path}: {len(issues)} {noun}")
        for issue in issues:
            print(f"  {issue.path or '(file)'}: {issue.message}")
    return _EXIT_INVALID if issues else 0


def run_offline_config(args: argparse.Namespace) -> int | None:
    """Run `config validate|schema`; None for the other `config` actions."""
    if args.action == "validate":
        return _validate(args)
    if args.action == "schema":
        from runtime.model import config_schema

        text = msgspec.json.format(msgspec.json.encode(config_schema()), indent=2).decode()
        print(text)
        return 0
    return None
