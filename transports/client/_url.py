"""Where the client connects unless told otherwise: a gateway on this machine's default port.

A module of its own so that the CLI's parser (built on every `clawlane` start, the gateway's
included) reads `DEFAULT_URL` without loading the client's WebSocket library.
"""

from __future__ import annotations

from typing import Final

DEFAULT_URL: Final = "ws://127.0.0.1:18789"
