"""Shared fixtures: a real gateway on a loopback port, clients that record every frame the
server sends, and validation of those frames against the published protocol v4 schema
(in the repository: `tests/data/openclaw-protocol/`).

Gateways start as a user's would: auth on, with the token a first start creates in the
(tmp) state dir. The test clients (`open_client`, `connect`, `raw_handshake`) send that
token and sign with `TEST_DEVICE`, so they are paired silently on loopback and hold exactly
the scopes they ask for (by default admin, read and write). A test that wants auth off
writes `gateway.auth.mode: "none"` in its config."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.devices._device_auth import DeviceIdentity, SignedFields
from runtime.model._config import Config, parse_config
from transports import GatewayClient, GatewayOptions, open_gateway, open_gateway_client
from transports.client._client import DEFAULT_SCOPES
from transports.server._gateway import Gateway

TEST_DEVICE = DeviceIdentity.generate()
"""The device every test client signs with (one key for the session: pairing it is cheap)."""

PROTOCOL_DIR = Path(__file__).resolve().parent / "data" / "openclaw-protocol"
"""OpenClaw's protocol schemas, in the repository (README.md there says what each file is)."""
SCHEMA_PATH = PROTOCOL_DIR / "protocol.schema.json"
NEWER_PATH = PROTOCOL_DIR / "openclaw-2026.9.6-definitions.json"

#: The result definition of each method that has one (`<Method>Result` otherwise).
RESULT_DEFINITIONS: dict[str, str] = {
    "connect": "HelloOk",
    "agent.identity.get": "AgentIdentityResult",
    # `health` has no definition of its own: the snapshot's `health` is its shape.
    "health": "HealthResult",
}


#: Results checked against their 2026.9.6 definition although the published schema has one:
#: what 2026.9.6's clients read (the published `SessionsSearchResult` predates the Control
#: UI's scoped search, whose answer adds the `sessions` it hit).
NEWER_RESULTS: frozenset[str] = frozenset({"SessionsSearchResult"})


def _pascal(method: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[.\-_]", method) if w)


class FrameChecker:
    """Validates server frames against the schema definitions (jsonschema, draft-07)."""

    def __init__(self, schema: dict[str, Any], newer: dict[str, Any]) -> None:
        import jsonschema

        schema = copy.deepcopy(schema)
        defs = schema["definitions"]
        # Frames validate against the published schema; a result only the newer 2026.9.6
        # definitions have (`UsersPrefsGetResult`, ...) is checked against that one.
        for name, definition in newer["definitions"].items():
            defs.setdefault(name, definition)
        for name in NEWER_RESULTS:
            defs[name] = newer["definitions"][name]
        # `health` answers the snapshot's health shape, plus clawlane's own block.
        health = copy.deepcopy(defs["Snapshot"]["properties"]["health"])
        health["properties"]["clawlane"] = {"type": "object"}
        defs["HealthResult"] = health
        # Measured on the real gateway: agent payloads carry sessionKey/sessionId/agentId
        # although the published AgentEvent omits them (see DESIGN.md).
        for extra in ("sessionKey", "sessionId", "agentId"):
            defs["AgentEvent"]["properties"][extra] = {"type": "string", "minLength": 1}
        self._validators: dict[str, Any] = {}
        self._schema = schema
        self._cls = jsonschema.Draft7Validator

    def _validator(self, name: str) -> Any:
        v = self._validators.get(name)
        if v is None:
            v = self._cls(
                {"$ref": f"#/definitions/{name}", "definitions": self._schema["definitions"]}
            )
            self._validators[name] = v
        return v

    def check(self, frame: dict[str, Any], method: str | None = None) -> None:
        kind = frame.get("type")
        envelope = {"req": "RequestFrame", "res": "ResponseFrame", "event": "EventFrame"}[str(kind)]
        self._validate(envelope, frame)
        if kind == "event":
            payload_def = {
                "agent": "AgentEvent",
                "chat": "ChatEvent",
                "tick": "TickEvent",
                "shutdown": "ShutdownEvent",
            }.get(frame["event"])
            if payload_def is not None:
                self._validate(payload_def, frame.get("payload"))
        elif kind == "res" and frame.get("ok") and method is not None:
            result_def = self.result_definition(method)
            if result_def is not None:
                self._validate(result_def, frame.get("payload"))

    def result_definition(self, method: str) -> str | None:
        """The definition a successful `method` result must match, if the schemas have one."""
        name = RESULT_DEFINITIONS.get(method) or _pascal(method) + "Result"
        return name if name in self._schema["definitions"] else None

    def validate(self, name: str, value: Any) -> None:
        """Validate `value` as definition `name` (AssertionError naming the paths)."""
        self._validate(name, value)

    def _validate(self, name: str, value: Any) -> None:
        errors = sorted(self._validator(name).iter_errors(value), key=lambda e: list(e.path))
        if errors:
            details = "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
            raise AssertionError(
                f"frame does not validate as {name}: {details}\n{json.dumps(value)[:2000]}"
            )


_checker: FrameChecker | None = None


def frame_checker() -> FrameChecker:
    """The one checker of the session, built on first use from the in-repo schemas (a missing
    file is an error, never a quiet pass)."""
    global _checker
    if _checker is None:
        newer = json.loads(NEWER_PATH.read_text())
        _checker = FrameChecker(json.loads(SCHEMA_PATH.read_text()), newer)
    return _checker


@pytest.fixture
def schema_checker() -> FrameChecker:
    return frame_checker()


def local_config(**overrides: Any) -> Config:
    raw: dict[str, Any] = {"agents": {"defaults": {"maxConcurrent": 8}}}
    for path, value in overrides.items():
        node = raw
        keys = path.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return parse_config(raw)


@asynccontextmanager
async def running_gateway(
    tmp_path: Path, config: Config | None = None, **options: Any
) -> AsyncIterator[Gateway]:
    opts = GatewayOptions(host="127.0.0.1", port=0, state_dir=tmp_path / "state", **options)
    async with open_gateway(config or local_config(), opts) as gw:
        yield gw


def gateway_url(gw: Gateway) -> str:
    port = gw.listeners[0].socket.getsockname()[1]
    return f"ws://127.0.0.1:{port}"


class Recorder:
    """Every frame a client received, validated when the test ends."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.methods: dict[tuple[int, str], str] = {}

    def hook(self, client_no: int) -> Callable[[dict[str, Any]], None]:
        def on_frame(frame: dict[str, Any]) -> None:
            self.frames.append({"client": client_no, **frame})

        return on_frame

    def validate(self) -> int:
        checker = frame_checker()
        for f in self.frames:
            frame = {k: v for k, v in f.items() if k != "client"}
            method = None
            if frame.get("type") == "res" and isinstance(frame.get("payload"), dict):
                if frame["payload"].get("type") == "hello-ok":
                    method = "connect"
                elif "models" in frame["payload"]:
                    method = "models.list"
            checker.check(frame, method)
        return len(self.frames)


ClientFactory = Callable[..., AbstractAsyncContextManager[GatewayClient]]


def client_auth(gw: Gateway) -> dict[str, Any]:
    """What `open_gateway_client` needs to connect to `gw` as the test clients do."""
    return {"token": gw.auth.token, "device": TEST_DEVICE}


def connect_params(
    gw: Gateway | None,
    challenge: dict[str, Any],
    *,
    client_id: str = "test",
    mode: str = "test",
    scopes: list[str] | None = None,
    device: DeviceIdentity | None = TEST_DEVICE,
    token: str | None = None,
    platform: str = "python",
    role: str = "operator",
) -> dict[str, Any]:
    """`connect` params as the test clients send them: explicit scopes, `gw`'s token, and
    a device signature over `challenge` (the `connect.challenge` event frame or payload)."""
    payload = challenge.get("payload", challenge)
    granted = list(DEFAULT_SCOPES) if scopes is None else scopes
    params: dict[str, Any] = {
        "minProtocol": 4,
        "maxProtocol": 4,
        "client": {"id": client_id, "version": "1", "platform": platform, "mode": mode},
        "role": role,
        "scopes": granted,
    }
    secret = token if token is not None else (gw.auth.token if gw is not None else None)
    if secret:
        params["auth"] = {"token": secret}
    if device is not None:
        params["device"] = device.connect_device(
            SignedFields(
                device_id=device.device_id,
                client_id=client_id,
                client_mode=mode,
                role=role,
                scopes=tuple(granted),
                signed_at_ms=int(payload["ts"]),
                token=secret or "",
                nonce=str(payload["nonce"]),
                platform=platform,
            )
        )
    return params


async def raw_handshake(
    ws: Any, *, caps: list[str] | None = None, gw: Gateway | None = None
) -> dict[str, Any]:
    """On a raw trio-websocket connection: read the challenge, send `connect` (with `gw`'s
    token, signed by `TEST_DEVICE`), return the `hello-ok` response frame (asserted ok)."""
    import json

    challenge = json.loads(await ws.get_message())
    params = connect_params(gw, challenge)
    if caps:
        params["caps"] = caps
    await ws.send_message(
        json.dumps({"type": "req", "id": "c", "method": "connect", "params": params})
    )
    res: dict[str, Any] = json.loads(await ws.get_message())
    assert res["ok"], res
    return res


@asynccontextmanager
async def open_client(gw: Gateway, **kw: Any) -> AsyncIterator[GatewayClient]:
    """A test client of `gw` whose every received frame is validated against the protocol
    schema when the client closes."""
    rec = Recorder()
    kw.setdefault("client_id", "test")
    kw.setdefault("mode", "test")
    kw.setdefault("token", gw.auth.token)
    kw.setdefault("device", TEST_DEVICE)
    async with open_gateway_client(gateway_url(gw), on_frame=rec.hook(1), **kw) as client:
        yield client
    rec.validate()


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    async with running_gateway(tmp_path) as gw:
        yield gw


@pytest.fixture
def recorder() -> Any:
    rec = Recorder()
    yield rec
    rec.validate()


@pytest.fixture
def connect(gateway: Gateway, recorder: Recorder) -> ClientFactory:
    """`async with connect(**kw) as client:` a recorded client of the `gateway` fixture."""
    counter = iter(range(1, 1_000_000))

    def factory(gw: Gateway | None = None, **kw: Any) -> AbstractAsyncContextManager[GatewayClient]:
        target = gw or gateway
        kw.setdefault("client_id", "test")
        kw.setdefault("mode", "test")
        kw.setdefault("token", target.auth.token)
        kw.setdefault("device", TEST_DEVICE)
        return open_gateway_client(gateway_url(target), on_frame=recorder.hook(next(counter)), **kw)

    return factory


async def collect_run(
    client_events: list[tuple[str, Any, int | None]], run_id: str
) -> list[dict[str, Any]]:
    await trio.lowlevel.checkpoint()
    return [p for (e, p, _s) in client_events if e == "agent" and p.get("runId") == run_id]
