"""clawlane runtime: the domain, mostly sans-IO, usable without the gateway.

- Config: `load_config`, `parse_config`, `Config` (OpenClaw key names, strict).
- Generations: `build_generation`, `GenerationBuilder`, `ModelRuntimeGeneration`.
- The embedded runtime: `open_embedded_runtime` (run turns in-process, same events).
- The agent loop: `run_agent`, `run_turn`, `AgentRunInput`, `RunProgress`, `TurnSpec`.
- Sessions: `resolve_session_key`, `SessionRow`, transcript entries (pi v3).
- Devices: `DeviceIdentity` (an ed25519 key that signs `connect`, as OpenClaw's clients do).
- Plugins import only `runtime.plugin_sdk`.

Errors, one tree (`ClawlaneError`, from `runtime.protocol`, is its root and the root of
`actors.ActorError` and `transports.TransportError` too):

    ClawlaneError
    ├── ConfigError (names the key path); ConfigSyntaxError (the file is not JSON5)
    ├── GenerationError (a build failed; nothing is published); HarnessSelectionError
    ├── SessionKeyError (malformed key); TranscriptFormatError
    ├── ProviderError (a model call failed; `kind` says how) ── IdleTimeoutError,
    │   FallbackExhaustedError
    ├── ToolError ── SandboxError, ToolPolicyError, PatchError
    ├── GatewayError (a wire error shape: code, message, details)
    ├── PairingStoreError (the device pairing file is unusable)
    ├── RunRefusedError (a host cannot run a turn); MessageCancelled (a hook said no)
    └── CronJobError, ScheduleError, JobIdError, FrontMatterError, SSEDecodeError
        (bad input of their kind; also `ValueError`s)

`runtime.protocol.internal_error` maps any other exception to the wire (`UNAVAILABLE`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from .protocol import ClawlaneError as ClawlaneError
from .protocol._frames import GatewayError as GatewayError

if TYPE_CHECKING:
    from .agent._embedded import open_embedded_runtime as open_embedded_runtime
    from .agent._turn import run_turn as run_turn
    from .agent._turnspec import TurnSpec as TurnSpec
    from .devices._device_auth import DeviceIdentity as DeviceIdentity
    from .devices._pairing import PairingStoreError as PairingStoreError
    from .loop._agent import AgentRunInput as AgentRunInput
    from .loop._agent import RunProgress as RunProgress
    from .loop._agent import run_agent as run_agent
    from .model._config import Config as Config
    from .model._config import ConfigError as ConfigError
    from .model._config import load_config as load_config
    from .model._config import parse_config as parse_config
    from .model._generation import GenerationBuilder as GenerationBuilder
    from .model._generation import GenerationError as GenerationError
    from .model._generation import ModelRuntimeGeneration as ModelRuntimeGeneration
    from .model._generation import build_generation as build_generation
    from .sessions._sessions import SessionKeyError as SessionKeyError
    from .sessions._sessions import SessionRow as SessionRow
    from .sessions._sessions import resolve_session_key as resolve_session_key

_LAZY: Final = {
    "open_embedded_runtime": ".agent._embedded",
    "run_turn": ".agent._turn",
    "TurnSpec": ".agent._turnspec",
    "DeviceIdentity": ".devices._device_auth",
    "PairingStoreError": ".devices._pairing",
    "AgentRunInput": ".loop._agent",
    "RunProgress": ".loop._agent",
    "run_agent": ".loop._agent",
    "Config": ".model._config",
    "ConfigError": ".model._config",
    "load_config": ".model._config",
    "parse_config": ".model._config",
    "GenerationBuilder": ".model._generation",
    "GenerationError": ".model._generation",
    "ModelRuntimeGeneration": ".model._generation",
    "build_generation": ".model._generation",
    "SessionKeyError": ".sessions._sessions",
    "SessionRow": ".sessions._sessions",
    "resolve_session_key": ".sessions._sessions",
}
"""Names resolved on first use (`__getattr__`), so that `import runtime.protocol` (the
wire types, which the client needs) does not load the agent, the providers and the config."""

__all__ = [
    "AgentRunInput",
    "ClawlaneError",
    "Config",
    "ConfigError",
    "DeviceIdentity",
    "GatewayError",
    "GenerationBuilder",
    "GenerationError",
    "ModelRuntimeGeneration",
    "PairingStoreError",
    "RunProgress",
    "SessionKeyError",
    "SessionRow",
    "TurnSpec",
    "build_generation",
    "load_config",
    "open_embedded_runtime",
    "parse_config",
    "resolve_session_key",
    "run_agent",
    "run_turn",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
