"""The log lines an operator reads, captured from real gateways on loopback: connections,
runs, provider retries and fallbacks, generation publishes and failures, slow consumers; and
the two line formats (text, one JSON object a line)."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.logs._oplog import LogEvent, format_value, log_event
from runtime.model._config import parse_config
from tests._logwatch import watch_logs
from tests.conftest import gateway_url, open_client, raw_handshake, running_gateway
from transports import GatewayAuthError, GatewayRequestError, open_gateway_client
from transports.server._logging import JsonFormatter, TextFormatter, configure_logging

CLI = [sys.executable, "-c", "import sys; from transports.cli._main import main; sys.exit(main())"]

ADMIN = ["operator.admin", "operator.read", "operator.write"]


def _record(msg: Any, level: int = logging.INFO, exc: Any = None) -> logging.LogRecord:
    return logging.LogRecord("clawlane.runs", level, __file__, 1, msg, (), exc)


# --- the formats ----------------------------------------------------------------------------


def test_a_log_event_renders_as_logfmt_and_quotes_what_needs_it() -> None:
    event = LogEvent(
        "run ended",
        {"runId": "r1", "status": "ok", "ms": 1.25, "error": 'HTTP 401: "bad"\nkey', "x": None},
    )
    assert str(event) == 'run ended runId=r1 status=ok ms=1.2 error="HTTP 401: \\"bad\\"\\nkey"'
    assert format_value(True) == "true" and format_value("") == '""'
    assert format_value("a=b") == '"a=b"'
    assert len(format_value("x" * 10_000)) < 310


def test_the_text_format_is_one_line_with_utc_time_level_and_logger() -> None:
    line = TextFormatter().format(_record(LogEvent("run started", {"runId": "r1"})))
    stamp, level, logger, *rest = line.split()
    assert stamp.endswith("Z") and "T" in stamp
    assert (level, logger) == ("INFO", "clawlane.runs:")
    assert " ".join(rest) == "run started runId=r1"


def test_the_json_format_is_one_object_a_line_with_the_fields_as_keys() -> None:
    fmt = JsonFormatter()
    data = json.loads(
        fmt.format(_record(LogEvent("run ended", {"runId": "r1", "msg": "clash", "n": 3})))
    )
    assert data["msg"] == "run ended" and data["runId"] == "r1" and data["n"] == 3
    assert data["msg_"] == "clash" and data["level"] == "info" and data["logger"] == "clawlane.runs"
    plain = json.loads(fmt.format(_record("plain %s", logging.WARNING)))
    assert plain["msg"] == "plain %s" and plain["level"] == "warning"
    try:
        raise ValueError("boom")
    except ValueError:
        failed = json.loads(fmt.format(_record("failed", logging.ERROR, sys.exc_info())))
    assert "ValueError: boom" in failed["exc"] and "\n" not in fmt.format(_record("x"))


def test_configure_logging_refuses_unknown_levels_and_formats() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("verbose")
    with pytest.raises(ValueError, match="unknown log format"):
        configure_logging("info", "xml")


def test_nothing_is_rendered_when_the_level_is_off() -> None:
    class Exploding:
        def __str__(self) -> str:
            raise AssertionError("rendered")

    logger = logging.getLogger("clawlane.test-off")
    logger.setLevel(logging.WARNING)
    log_event(logger, logging.INFO, "quiet", value=Exploding())  # not even a record


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure_logging changes the process's logging: put it back."""
    root = logging.getLogger()
    saved = (
        root.level,
        list(root.handlers),
        logging.getLogger("clawlane").level,
        logging._srcfile,
        logging.logThreads,
        logging.logProcesses,
        logging.logMultiprocessing,
    )
    yield
    for handler in root.handlers:
        if handler not in saved[1]:
            handler.close()
    root.handlers[:] = saved[1]
    root.setLevel(saved[0])
    logging.getLogger("clawlane").setLevel(saved[2])
    logging._srcfile = saved[3]
    logging.logThreads, logging.logProcesses, logging.logMultiprocessing = saved[4:]


def test_configure_logging_keeps_other_libraries_at_warning(restore_logging: None) -> None:
    stream = io.StringIO()
    configure_logging("info", "text", stream=stream)
    logging.getLogger("httpx").info("HTTP Request: POST ...")
    logging.getLogger("clawlane.x").info("ours")
    logging.getLogger("clawlane.x").debug("too detailed")
    logging.getLogger("httpx").warning("theirs, a warning")
    text = stream.getvalue()
    assert "ours" in text and "theirs, a warning" in text
    assert "HTTP Request" not in text and "too detailed" not in text


def test_info_lines_are_flushed_soon_and_warnings_at_once(restore_logging: None) -> None:
    import time

    class Stream(io.StringIO):
        flushes = 0

        def flush(self) -> None:
            Stream.flushes += 1

    stream = Stream()
    handler = configure_logging("info", "text", stream=stream)
    log = logging.getLogger("clawlane.x")
    log.info("one")
    log.info("two")
    assert Stream.flushes == 0 and stream.getvalue().count("\n") == 2  # written, not flushed
    log.warning("three")
    assert Stream.flushes == 1
    log.info("four")
    deadline = time.monotonic() + 10
    while Stream.flushes < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # the flusher is a thread, not a trio task
    assert Stream.flushes == 2
    handler.close()


# --- captured from a real gateway -------------------------------------------------------------


async def test_connections_and_runs_tell_their_story(tmp_path: Path) -> None:
    with watch_logs() as logs, trio.fail_after(20):
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw, scopes=ADMIN) as client,
        ):
            final = await client.request(
                "agent",
                {"message": "hello", "idempotencyKey": "log-r1", "sessionKey": "story"},
                expect_final=True,
            )
            with pytest.raises(GatewayRequestError, match="bad key"):
                await client.request(
                    "agent",
                    {"message": "[[fail:auth:bad key]]", "idempotencyKey": "log-r2"},
                    expect_final=True,
                )
        await logs.wait_for(lambda w: bool(w.events("connection closed")))
    assert final["status"] == "ok"
    [opened] = logs.events("connection opened")
    assert opened["client"] == "test" and opened["role"] == "operator"
    assert opened["peer"] == "127.0.0.1" and opened["_level"] == "INFO"
    [closed] = logs.events("connection closed")
    assert closed["conn"] == opened["conn"] and closed["durationMs"] >= 0
    started = {e["runId"]: e for e in logs.events("run started")}
    ended = {e["runId"]: e for e in logs.events("run ended")}
    assert started["log-r1"]["session"] == "agent:main:story"
    assert started["log-r1"]["model"] == "local/echo" and started["log-r1"]["agent"] == "main"
    ok = ended["log-r1"]
    assert ok["status"] == "ok" and ok["_level"] == "DEBUG" and ok["model"] == "local/echo"
    assert started["log-r1"]["_level"] == "DEBUG"  # as OpenClaw logs its runs
    assert ok["durationMs"] >= 0 and ok["totalTokens"] == ok["inputTokens"] + ok["outputTokens"]
    assert ok["totalTokens"] > 0
    bad = ended["log-r2"]
    assert bad["status"] == "error" and bad["_level"] == "WARNING" and "bad key" in bad["error"]


async def test_at_info_only_the_runs_that_did_not_go_well_are_logged(tmp_path: Path) -> None:
    with watch_logs(logging.INFO) as logs, trio.fail_after(20):
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw, scopes=ADMIN) as client,
        ):
            await client.request(
                "agent", {"message": "fine", "idempotencyKey": "info-ok"}, expect_final=True
            )
            slow = {"message": "slow [[deltas:500]] [[delay:20]]", "idempotencyKey": "info-ab"}
            await client.request("agent", {**slow, "sessionKey": "held"})
            await client.request("chat.abort", {"sessionKey": "agent:main:held"})
            await logs.wait_for(lambda w: bool(w.events("run ended")))
    [aborted] = logs.events("run ended")
    assert aborted["runId"] == "info-ab" and aborted["status"] == "aborted"
    assert aborted["_level"] == "INFO" and aborted["abortReason"] == "rpc"
    assert not logs.events("run started")


async def test_provider_retries_and_fallbacks_are_logged(tmp_path: Path) -> None:
    config = parse_config(
        {
            "models": {
                "providers": {
                    "busy": {
                        "api": "local",
                        "models": [{"id": "m"}],
                        "options": {"failKind": "overloaded"},
                    },
                    "local": {"api": "local", "models": [{"id": "echo"}]},
                }
            },
            "agents": {"defaults": {"model": {"primary": "busy/m", "fallbacks": ["local/echo"]}}},
        }
    )
    with watch_logs() as logs, trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config) as gw,
            open_client(gw, scopes=ADMIN) as client,
        ):
            fell_back = await client.request(
                "agent", {"message": "hi", "idempotencyKey": "fb1"}, expect_final=True
            )
            with pytest.raises(GatewayRequestError, match="upstream 503"):
                await client.request(
                    "agent",
                    {"message": "[[fail:server:upstream 503]]", "idempotencyKey": "rt1"},
                    expect_final=True,
                )
    assert fell_back["status"] == "ok"
    fallback = logs.events("model fallback")[0]
    assert fallback["failed"] == "busy/m" and fallback["next"] == "local/echo"
    assert fallback["kind"] == "overloaded" and fallback["_level"] == "WARNING"
    retries = logs.events("provider retry")
    assert [r["attempt"] for r in retries] == [2, 3]
    assert all(r["kind"] == "server" and "upstream 503" in r["error"] for r in retries)
    assert all(r["delayMs"] >= 0 and r["maxAttempts"] == 3 for r in retries)


async def test_generation_publishes_and_failures_are_logged(tmp_path: Path) -> None:
    from runtime.model._config import ConfigError

    with watch_logs() as logs, trio.fail_after(20):
        async with running_gateway(tmp_path) as gw:
            assert gw.publisher is not None
            before = await gw.publisher.read_snapshot()
            config = {"agents": {"defaults": {"maxConcurrent": 3}}}
            await gw.publisher.write_text(json.dumps(config), base_hash=before.hash, reason="test")
            after = await gw.publisher.read_snapshot()
            with pytest.raises(ConfigError, match=r"gateway\.port"):
                await gw.publisher.write_text(
                    '{"gateway": {"port": "high"}}', base_hash=after.hash, reason="test"
                )
    [published] = logs.events("generation published")
    assert published["generation"] == 2 and published["previous"] == 1
    assert published["reason"] == "test" and published["buildMs"] >= 0
    [failed] = logs.events("generation build failed")
    assert failed["_level"] == "ERROR" and failed["path"] == "gateway.port"
    assert failed["serving"] == 2


async def test_a_slow_consumer_close_is_a_warning(tmp_path: Path) -> None:
    from transports.client._client import open_websocket

    def slow_closed(gw: Any) -> bool:
        return any(c.ws.close_reason == "slow consumer" for c in gw.connections.values())

    with watch_logs() as logs, trio.fail_after(30):
        async with running_gateway(tmp_path, max_buffered_bytes=128 * 1024) as gw:
            gw.close_grace_s = 0.2
            url = gateway_url(gw)
            async with open_client(gw, scopes=ADMIN, caps=["session-scoped-events"]) as fast:
                async with open_websocket(url, message_queue_size=1) as slow:
                    await raw_handshake(slow, gw=gw)  # and never reads again
                    for i in range(40):
                        await fast.request(
                            "agent",
                            {
                                "message": "[[deltas:200]] " + "word " * 50,
                                "idempotencyKey": f"s{i}",
                            },
                            expect_final=True,
                        )
                        if slow_closed(gw):
                            break
                    assert slow_closed(gw)
                # The slow client went away: its connection is gone and says why.
                await logs.wait_for(lambda w: bool(w.events("slow consumer closed")))
    [slow_line] = logs.events("slow consumer closed")
    assert slow_line["_level"] == "WARNING" and slow_line["maxBufferedBytes"] == 128 * 1024
    closed = [e for e in logs.events("connection closed") if e["conn"] == slow_line["conn"]]
    assert closed and closed[0]["code"] == 1008 and closed[0]["reason"] == "slow consumer"


async def test_a_refused_connect_is_info_and_a_silent_socket_is_debug(tmp_path: Path) -> None:
    from transports.client._client import open_websocket

    with watch_logs() as logs, trio.fail_after(20):
        async with running_gateway(tmp_path) as gw:
            with pytest.raises(GatewayAuthError):
                async with open_client(gw, token="wrong", scopes=ADMIN):
                    pass
            gw.handshake_timeout_s = 0.2
            async with open_websocket(gateway_url(gw)):  # upgrades, never sends connect
                await logs.wait_for(
                    lambda w: (
                        bool(w.events("connection closed before connect"))
                        and bool(w.events("connection refused"))
                    )
                )
    [refused] = logs.events("connection refused")
    assert refused["_level"] == "INFO" and "unauthorized" in refused["reason"]
    assert refused["code"] == 1008 and refused["peer"] == "127.0.0.1"
    [silent] = logs.events("connection closed before connect")
    assert silent["_level"] == "DEBUG" and silent["reason"] == "handshake timeout"
    assert not logs.events("connection opened")


# --- the real process: --log-format json -------------------------------------------------------


async def test_the_gateway_process_logs_json_lines_from_startup_to_shutdown(
    tmp_path: Path,
) -> None:
    import signal
    import subprocess

    state = tmp_path / "state"
    state.mkdir()
    (state / "clawlane.json").write_text('{"gateway": {"auth": {"mode": "none"}}}')
    lines: list[dict[str, Any]] = []
    listening = trio.Event()

    async def read_log(stream: trio.abc.ReceiveStream) -> None:
        buffer = b""
        async for chunk in stream:
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            for raw in complete:
                entry = json.loads(raw)  # every line is one JSON object
                lines.append(entry)
                if "listening on" in entry["msg"]:
                    listening.set()

    with trio.fail_after(60):
        proc = await trio.lowlevel.open_process(
            [*CLI, "gateway", "--port", "0", "--state-dir", str(state), "--log-format", "json"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        assert proc.stderr is not None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_log, proc.stderr)
            try:
                await listening.wait()
                msg = next(e["msg"] for e in lines if "listening on" in e["msg"])
                url = msg.split("listening on ", 1)[1].split()[0]
                async with open_gateway_client(
                    url, client_id="test", mode="test", scopes=ADMIN
                ) as client:
                    await client.request(
                        "agent", {"message": "hi", "idempotencyKey": "json1"}, expect_final=True
                    )
                    with pytest.raises(GatewayRequestError, match="bad key"):
                        params = {"message": "[[fail:auth:bad key]]", "idempotencyKey": "json2"}
                        await client.request("agent", params, expect_final=True)
            finally:
                proc.send_signal(signal.SIGINT)
                await proc.wait()
    assert proc.returncode == 0
    assert lines[0]["level"] == "info" and lines[0]["logger"] == "clawlane.gateway"
    assert "listening on ws://127.0.0.1:" in lines[0]["msg"]
    # at `info` a run that went well logs nothing (DEBUG, as OpenClaw); a failed one WARNING
    [ended] = [e for e in lines if e["msg"] == "run ended"]
    assert ended["runId"] == "json2" and ended["status"] == "error"
    assert ended["level"] == "warning" and "bad key" in ended["error"]
    assert {"connection opened", "connection closed"} <= {e["msg"] for e in lines}
    assert "run started" not in {e["msg"] for e in lines}
    assert lines[-1]["msg"] == "clawlane gateway stopped"
