"""WebSocket, RFC 6455, on the server's side of the gateway's port.

- `_codec`: the frames, sans-IO: the one codec of both WebSocket ends written by hand
  (parse, build, mask, close codes); `client_frame` builds what a client sends.
- `_server`: one server connection after the HTTP upgrade (wsproto for the upgrade, frames
  parsed by `_codec`): a bounded outbox, pings, the close handshake with its grace, and
  `CLOSE_POLICY` (1008) / `CLOSE_TOO_BIG` (1009) for a peer that breaks a limit.

Errors are the package's `TransportError` tree; a peer that breaks the protocol is closed
with the matching close code, never left half open.
"""

from ._codec import CLOSE as CLOSE
from ._codec import PING as PING
from ._codec import Control as Control
from ._codec import FrameError as FrameError
from ._codec import FrameParser as FrameParser
from ._codec import client_frame as client_frame
from ._server import CLOSE_GOING_AWAY as CLOSE_GOING_AWAY
from ._server import CLOSE_POLICY as CLOSE_POLICY
from ._server import CLOSE_PROTOCOL_ERROR as CLOSE_PROTOCOL_ERROR
from ._server import CLOSE_TOO_BIG as CLOSE_TOO_BIG
from ._server import ConnectionClosed as ConnectionClosed
from ._server import MessageTooBig as MessageTooBig
from ._server import WebSocketServerConnection as WebSocketServerConnection

__all__ = [
    "CLOSE",
    "CLOSE_GOING_AWAY",
    "CLOSE_POLICY",
    "CLOSE_PROTOCOL_ERROR",
    "CLOSE_TOO_BIG",
    "PING",
    "ConnectionClosed",
    "Control",
    "FrameError",
    "FrameParser",
    "MessageTooBig",
    "WebSocketServerConnection",
    "client_frame",
]
