"""The `clawlane` command line.

    clawlane gateway [--host H] [--port P] [--config FILE] [--state-dir DIR] [--token T]
                     [--log-level L] [--log-format text|json] [--workers N]
    clawlane agent -m TEXT [--session-key K] [--json] [--url URL] [--token T] [--timeout S]
    clawlane call METHOD [--params JSON] [--expect-final] [--url URL] [--token T]
    clawlane status | health | sessions list | models list   [--json]   (tables by default)
    clawlane loadtest ...   (see `clawlane loadtest --help`)
    clawlane config get | apply FILE | patch JSON | validate [FILE] | schema
    clawlane completion [bash|zsh]
    clawlane --version

Exit codes: 0 ok; 1 the request failed (or the gateway stopped on an unexpected error);
2 usage or config error (a bad flag or value, a config file that is missing or invalid);
3 the gateway could not be reached or refused the handshake; 4 the gateway cannot start
here (the port is in use, the state dir cannot be created, read or written). Every failure
is one line on stderr, `clawlane: ...`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import msgspec
import trio

from ..client import DEFAULT_URL
from ..server import DEFAULT_LOG_FORMAT, DEFAULT_LOG_LEVEL, LOG_FORMATS, LOG_LEVELS

# What a command needs is imported when it runs (the client by the client commands, the
# gateway by `gateway`, `runtime.model` by `gateway` and `config`): every command builds the
# whole parser, and none should pay for the others' libraries.
if TYPE_CHECKING:
    from runtime.model import ConfigError

    from ..client import GatewayAuthError, GatewayClient

_pretty = msgspec.json.Encoder()
log = logging.getLogger("clawlane.cli")


class _Parser(argparse.ArgumentParser):
    """A usage error is one line (`clawlane gateway: argument --log-level: invalid choice:
    ...`) and exit code 2, not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class _Version(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from runtime.protocol import PROTOCOL_VERSION

        from ..server import VERSION

        print(f"clawlane {VERSION} (OpenClaw Gateway protocol {PROTOCOL_VERSION})")
        parser.exit(0)


def _print_json(value: Any) -> None:
    print(msgspec.json.format(_pretty.encode(value), indent=2).decode())


def _fail(message: str, code: int) -> int:
    print(f"clawlane: {message}", file=sys.stderr)
    return code


def _add_client_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--url",
        default=os.environ.get("CLAWLANE_GATEWAY_URL", DEFAULT_URL),
        help=f"gateway URL (default: $CLAWLANE_GATEWAY_URL or {DEFAULT_URL})",
    )
    p.add_argument(
        "--token",
        default=None,
        help="gateway token (default: $CLAWLANE_GATEWAY_TOKEN, else for a loopback URL the "
        "token file in the state dir)",
    )
    p.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where a local gateway keeps its token (default $CLAWLANE_STATE_DIR or .clawlane)",
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for an answer")


def _add_view_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the answer as JSON (for machines)")
    _add_client_args(p)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="clawlane", description="clawlane agent runtime gateway")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_gateway_parser(sub)
    _add_client_parsers(sub)
    # --- loadtest (transports/_loadtest.py) ---
    from ..loadtest import add_loadtest_parser

    add_loadtest_parser(sub)
    # --- end loadtest ---
    from ._dashboard import add_dashboard_parser

    add_dashboard_parser(sub)
    _add_config_parser(sub)  # config get|apply|patch, validate|schema
    # --- completion: transports/cli/_completion.py ---
    from ._completion import SHELLS

    comp = sub.add_parser("completion", help="print a shell completion script")
    comp.add_argument(
        "shell",
        nargs="?",
        choices=SHELLS,
        default=None,
        help="bash or zsh (default: from $SHELL)",
    )
    return parser


def _add_gateway_parser(sub: Any) -> None:
    """`clawlane gateway`: where it listens, its state dir and config, its log lines."""
    gw = sub.add_parser("gateway", help="run the gateway")
    gw.add_argument("--host", default=None, help="bind address (default gateway.bind or 127.0.0.1)")
    gw.add_argument("--port", type=int, default=None, help="port (default gateway.port or 18789)")
    gw.add_argument(
        "--state-dir",
        type=Path,
        default=Path(os.environ.get("CLAWLANE_STATE_DIR", ".clawlane")),
        help="sessions, transcripts and the default config (default: $CLAWLANE_STATE_DIR or"
        " .clawlane)",
    )
    gw.add_argument(
        "--config",
        type=Path,
        default=None,
        help="config file, JSON5 (default <state-dir>/clawlane.json; named here, it must exist)",
    )
    gw.add_argument(
        "--token",
        default=None,
        help="require this token (or gateway.auth.token / $CLAWLANE_GATEWAY_TOKEN)",
    )
    gw.add_argument(  # --workers: transports/server/_workers.py
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="run N gateway processes on the one port (SO_REUSEPORT; the kernel spreads the "
        'connections); N > 1 needs cluster.redis.url and storage.backend "postgres" '
        "(default 1)",
    )
    gw.add_argument(
        "--seed-config",
        action="store_true",
        help="in a cluster on PostgreSQL: this node's config file replaces the cluster's config"
        " at start, and its file watch publishes the file even when it is older (default: the"
        " node adopts the cluster's config; its file seeds it only when the cluster has none)",
    )
    # --- logging: transports/server/_logging.py ---
    gw.add_argument(
        "--log-level",
        type=str.lower,
        choices=LOG_LEVELS,
        default=os.environ.get("CLAWLANE_LOG_LEVEL", DEFAULT_LOG_LEVEL).lower(),
        help=f"log level (default: $CLAWLANE_LOG_LEVEL or {DEFAULT_LOG_LEVEL})",
    )
    gw.add_argument(
        "--log-format",
        type=str.lower,
        choices=LOG_FORMATS,
        default=os.environ.get("CLAWLANE_LOG_FORMAT", DEFAULT_LOG_FORMAT).lower(),
        help="log lines as text or one JSON object a line (default: $CLAWLANE_LOG_FORMAT or"
        f" {DEFAULT_LOG_FORMAT})",
    )


def _add_client_parsers(sub: Any) -> None:
    """The commands that talk to a running gateway: agent, call, health, status, sessions,
    models."""
    ag = sub.add_parser("agent", help="run one agent turn and print the reply as it streams")
    ag.add_argument("-m", "--message", required=True, help="the message to send")
    ag.add_argument("--session-key", default=None, help="session key (default: the main session)")
    ag.add_argument("--agent", default=None, help="agent id")
    ag.add_argument("--json", action="store_true", help="print the final result as JSON")
    _add_client_args(ag)

    call = sub.add_parser("call", help="call a gateway method and print its answer as JSON")
    call.add_argument("method", help="the method, e.g. sessions.list")
    call.add_argument("--params", default=None, help="params as JSON")
    call.add_argument(
        "--expect-final", action="store_true", help="wait for the final answer (agent runs)"
    )
    _add_client_args(call)

    for name, what in (("health", "is the gateway well"), ("status", "what the gateway is doing")):
        p = sub.add_parser(name, help=f"{what} (a table; --json for machines)")
        p.set_defaults(method=name, params=None, expect_final=False)
        _add_view_args(p)
    sessions = sub.add_parser("sessions", help="session commands")
    sessions.add_argument("action", choices=["list"], help="list: the sessions, as a table")
    _add_view_args(sessions)
    models = sub.add_parser("models", help="model commands")
    models.add_argument("action", choices=["list"], help="list: the model catalog, as a table")
    _add_view_args(models)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "gateway":
            return _gateway(args)
        if args.command == "agent":
            return trio.run(_agent, args)
        if args.command == "call":
            return trio.run(_call, args, args.method, args.params, args.expect_final)
        if args.command in ("health", "status"):
            return trio.run(_view, args, args.method)
        if args.command == "sessions":
            return trio.run(_view, args, "sessions.list")
        if args.command == "models":
            return trio.run(_view, args, "models.list")
        if args.command == "completion":
            return _completion(args)
        # --- loadtest (transports/_loadtest.py) ---
        if args.command == "loadtest":
            from ..loadtest import loadtest_main

            return loadtest_main(args)
        # --- end loadtest ---
        if args.command == "config":
            from ._config import run_offline_config

            offline = run_offline_config(args)  # validate, schema
            return offline if offline is not None else trio.run(_config, args)
        if args.command == "dashboard":
            from ._dashboard import dashboard_main

            return dashboard_main(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`clawlane status | head`): quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return _fail(f"unknown command {args.command}", 2)


def _gateway(args: argparse.Namespace) -> int:
    """Run the gateway; every reason it cannot start is one line and an exit code (see
    `_startup`)."""
    from runtime.model import ConfigError, load_config

    from ..server import (
        EXIT_CONFIG,
        GatewayOptions,
        StartupError,
        check_config_file,
        check_state_dir,
        configure_logging,
        describe_failure,
        gateway_workers,
        serve_gateway,
    )

    for flag, value, allowed in (
        ("CLAWLANE_LOG_LEVEL", args.log_level, LOG_LEVELS),
        ("CLAWLANE_LOG_FORMAT", args.log_format, LOG_FORMATS),
    ):
        if value not in allowed:
            return _fail(f"{flag}={value} is not one of {', '.join(allowed)}", EXIT_CONFIG)
    if args.seed_config and args.workers > 1:  # a worker started again would seed again
        return _fail("--seed-config cannot be combined with --workers N (N > 1)", EXIT_CONFIG)
    configure_logging(args.log_level, args.log_format)
    state_dir: Path = args.state_dir
    config_path: Path = args.config or state_dir / "clawlane.json"
    try:
        check_config_file(config_path, explicit=args.config is not None)
        check_state_dir(state_dir)
        config = load_config(config_path)
    except StartupError as exc:
        return _fail(str(exc), exc.exit_code)
    except ConfigError as exc:
        return _fail(_config_failure(exc, config_path), EXIT_CONFIG)
    options = GatewayOptions(
        host=args.host or config.gateway.bind,
        port=args.port,
        state_dir=state_dir,
        config_path=config_path,
        token=args.token,
        seed_config=args.seed_config,
    )
    log_args = (args.log_level, args.log_format)
    workers = gateway_workers(config, options, args.workers, log_args=log_args)
    if workers is not None:  # a worker, or the parent of --workers N (N > 1)
        return workers
    port = options.port if options.port is not None else config.gateway.port
    try:
        trio.run(serve_gateway, config, options)
    except Exception as exc:
        failure = describe_failure(exc, host=options.host, port=port)
        return _fail(str(failure), failure.exit_code)
    return 0


def _config_failure(exc: ConfigError, path: Path) -> str:
    """The config error, and how many more problems `config validate` would list."""
    from ._config import config_error_summary

    more = config_error_summary(path) - 1
    if more > 0:
        return f"{exc} (and {more} more: clawlane config validate {path})"
    return str(exc)


def _completion(args: argparse.Namespace) -> int:
    from ._completion import SHELLS, completion_script

    shell = args.shell or Path(os.environ.get("SHELL", "")).name
    if shell not in SHELLS:
        return _fail(f"cannot tell the shell from $SHELL; name it: {' or '.join(SHELLS)}", 2)
    sys.stdout.write(completion_script(build_parser(), shell))
    return 0


async def _view(args: argparse.Namespace, method: str) -> int:
    """`status`, `health`, `sessions list`, `models list`: a table, or JSON with `--json`."""
    from ._tables import render_result

    async def call(client: GatewayClient) -> Any:
        return await client.request(method, None, timeout=args.timeout)

    def show(result: Any) -> None:
        print(render_result(method, result))

    return await _with_client(args, method, call, show=_print_json if args.json else show)


async def _call(
    args: argparse.Namespace, method: str, params_text: str | None, expect_final: bool
) -> int:
    params: Any = None
    if params_text:
        try:
            params = msgspec.json.decode(params_text)
        except msgspec.DecodeError as exc:
            return _fail(f"--params is not valid JSON: {exc}", 2)

    async def call(client: GatewayClient) -> Any:
        return await client.request(method, params, expect_final=expect_final, timeout=args.timeout)

    return await _with_client(args, method, call)


def client_token(args: argparse.Namespace) -> str | None:
    """`--token`, else `$CLAWLANE_GATEWAY_TOKEN`, else (loopback URLs only) the token file
    a local gateway keeps in the state dir."""
    from ..access import TOKEN_ENV, local_client_token

    token: str | None = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None:
        token = local_client_token(args.url, getattr(args, "state_dir", None))
    return token


def _refused(args: argparse.Namespace, exc: GatewayAuthError, token: str | None) -> int:
    message = f"the gateway at {args.url} refused the connection: {exc}"
    code = exc.details.get("code") if isinstance(exc.details, dict) else None
    if token is None and code in ("DEVICE_IDENTITY_REQUIRED", "AUTH_TOKEN_MISSING"):
        from ..access import TOKEN_FILENAME

        message += (
            f" (no token: pass --token, set CLAWLANE_GATEWAY_TOKEN, or run it where the "
            f"gateway's state dir holds {TOKEN_FILENAME})"
        )
    return _fail(message, 3)


async def _with_client(
    args: argparse.Namespace,
    method: str,
    body: Callable[[GatewayClient], Awaitable[Any]],
    *,
    show: Callable[[Any], None] = _print_json,
) -> int:
    """Connect, run `body`, print its result as JSON; every failure is one clear line and
    an exit code (1 request failed, 3 gateway unreachable or refused)."""
    from ..client import (
        GatewayAuthError,
        GatewayClientError,
        GatewayRequestError,
        open_gateway_client,
    )

    token = client_token(args)
    try:
        async with open_gateway_client(args.url, token=token) as client:
            result = await body(client)
    except GatewayAuthError as exc:
        return _refused(args, exc, token)
    except GatewayClientError as exc:
        return _fail(str(exc), 3)
    except GatewayRequestError as exc:
        return _fail(f"{method} failed: {exc.code}: {exc.message}", 1)
    except trio.TooSlowError:
        return _fail(f"{method} timed out after {args.timeout}s", 1)
    show(result)
    return 0


async def _agent(args: argparse.Namespace) -> int:
    from ..client import (
        GatewayAuthError,
        GatewayClientError,
        GatewayRequestError,
        open_gateway_client,
    )

    run_id = str(uuid.uuid4())
    printed = False

    def on_event(event: str, payload: Any, seq: int | None) -> None:
        nonlocal printed
        if args.json or event != "agent" or not isinstance(payload, dict):
            return
        if payload.get("runId") != run_id:
            return
        if payload.get("stream") == "assistant":
            delta = payload.get("data", {}).get("delta", "")
            sys.stdout.write(delta)
            sys.stdout.flush()
            printed = True

    params: dict[str, Any] = {"message": args.message, "idempotencyKey": run_id}
    if args.session_key:
        params["sessionKey"] = args.session_key
    if args.agent:
        params["agentId"] = args.agent
    token = client_token(args)
    try:
        async with open_gateway_client(
            args.url, token=token, caps=["session-scoped-events"], on_event=on_event
        ) as client:
            try:
                result = await client.request(
                    "agent", params, expect_final=True, timeout=args.timeout
                )
            except BaseException:
                # Interrupted: ask the gateway to stop the run (as `openclaw agent` does).
                with trio.CancelScope(shield=True), trio.move_on_after(2):
                    await client.cancel(client.last_request_id)
                raise
    except GatewayAuthError as exc:
        return _refused(args, exc, token)
    except GatewayClientError as exc:
        return _fail(str(exc), 3)
    except GatewayRequestError as exc:
        return _fail(f"agent run failed: {exc.message}", 1)
    except trio.TooSlowError:
        return _fail(f"no final answer within {args.timeout}s", 1)
    if args.json:
        _print_json(result)
    else:
        if printed:
            print()
        else:
            for p in (result or {}).get("result", {}).get("payloads", []):
                if p.get("text"):
                    print(p["text"])
    return 0


# --- config subcommands: clawlane config get | apply FILE | patch JSON --------------------


def _add_config_parser(sub: Any) -> None:
    cfg = sub.add_parser("config", help="read or publish the gateway's config")
    actions = cfg.add_subparsers(dest="action", required=True, metavar="ACTION")
    get = actions.add_parser("get", help="print the config snapshot (secrets redacted)")
    _add_client_args(get)
    apply = actions.add_parser("apply", help="replace the config with FILE and publish it")
    apply.add_argument("file", type=Path, help="the new config file (JSON5)")
    _add_client_args(apply)
    patch = actions.add_parser("patch", help="merge-patch the config with JSON and publish it")
    patch.add_argument("patch", help="a JSON5 object (RFC 7396 merge patch)")
    patch.add_argument(
        "--replace-path", action="append", default=[], help="allow replacing this array path"
    )
    _add_client_args(patch)
    from ._config import add_offline_config_commands

    add_offline_config_commands(actions)  # validate, schema


async def _config(args: argparse.Namespace) -> int:
    if args.action == "apply":
        try:
            raw = args.file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return _fail(f"cannot read {args.file}: {exc}", 2)
        params: dict[str, Any] = {"raw": raw}
        method = "config.apply"
    elif args.action == "patch":
        try:
            patch = msgspec.json.decode(args.patch)
        except msgspec.DecodeError as exc:
            return _fail(f"the patch is not valid JSON: {exc}", 2)
        if not isinstance(patch, dict):
            return _fail("the patch must be a JSON object", 2)
        params = {"raw": args.patch}
        if args.replace_path:
            params["replacePaths"] = args.replace_path
        method = "config.patch"
    else:
        params, method = {}, "config.get"

    async def publish(client: GatewayClient) -> Any:
        if method != "config.get":
            current = await client.request("config.get", {}, timeout=args.timeout)
            if current.get("exists"):
                params["baseHash"] = current["hash"]
        return await client.request(method, params, timeout=args.timeout)

    return await _with_client(args, method, publish)


# --- end config subcommands ---------------------------------------------------------------


if __name__ == "__main__":
    sys.exit(main())
