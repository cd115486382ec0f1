"""The Python gateway client: handshake, request correlation, expect-final, events.

`open_gateway_client(url, token=...)` is an async context manager that connects, answers
the `connect.challenge` (with a device identity when one is given) and yields a
`GatewayClient`: `request(method, params)` for one answer, `request(..., expect_final=True)`
for the second answer of a run, and an event channel. Refusals raise `GatewayAuthError`,
error answers `GatewayRequestError`, both under `GatewayClientError`. The CLI's client
commands, the load tool's probes and `scripts/` use it; it imports nothing of the gateway.
`DEFAULT_URL` (`_url`) is read without loading the rest: the names of `_client` (and
trio-websocket with them) are resolved on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._url import DEFAULT_URL as DEFAULT_URL

if TYPE_CHECKING:
    from ._client import GatewayAuthError as GatewayAuthError
    from ._client import GatewayClient as GatewayClient
    from ._client import GatewayClientError as GatewayClientError
    from ._client import GatewayRequestError as GatewayRequestError
    from ._client import open_gateway_client as open_gateway_client

__all__ = [
    "DEFAULT_URL",
    "GatewayAuthError",
    "GatewayClient",
    "GatewayClientError",
    "GatewayRequestError",
    "open_gateway_client",
]


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("._client", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
