"""The log lines of a connection (logger `clawlane.connections`).

    connection opened conn=c1-ab12cd client=cli mode=cli role=operator peer=127.0.0.1
    connection closed conn=c1-ab12cd client=cli role=operator peer=127.0.0.1 code=1000
        reason=bye durationMs=5321
    slow consumer closed conn=... client=... peer=... bufferedBytes=52428800   (WARNING)

A socket that never completes `connect` logs its close at DEBUG (a port scan or a handshake
timeout should not flood the log), except a `connect` the gateway refused (closed 1008 with
the refusal: a wrong token, a bad device signature, an origin, ...), which is INFO
(`connection refused ... reason="unauthorized: gateway token mismatch"`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Final

from runtime.logs import log_event

if TYPE_CHECKING:
    from ._connection import ClientConnection

__all__ = ["log_connection_closed", "log_connection_opened"]

log: Final = logging.getLogger("clawlane.connections")
SLOW_CONSUMER: Final = "slow consumer"
HANDSHAKE_TIMEOUT: Final = "handshake timeout"
CLOSE_POLICY: Final = 1008


def _age_ms(conn: ClientConnection) -> int:
    return int((time.monotonic() - conn.opened_mono) * 1000)


def log_connection_opened(conn: ClientConnection) -> None:
    """After `hello-ok`. Not a checkpoint."""
    log_event(
        log,
        logging.INFO,
        "connection opened",
        conn=conn.conn_id,
        client=conn.client_id or None,
        mode=conn.client_mode or None,
        role=conn.role,
        peer=conn.peer.address or None,
    )


def log_connection_closed(conn: ClientConnection) -> None:
    """When the connection is gone (connected or not). Not a checkpoint."""
    ws = conn.ws
    reason = ws.close_reason
    if not conn.connected:
        refused = ws.close_code == CLOSE_POLICY and bool(reason) and reason != HANDSHAKE_TIMEOUT
        log_event(
            log,
            logging.INFO if refused else logging.DEBUG,
            "connection refused" if refused else "connection closed before connect",
            conn=conn.conn_id,
            peer=conn.peer.address or None,
            code=ws.close_code,
            reason=reason,
            durationMs=_age_ms(conn),
        )
        return
    if reason == SLOW_CONSUMER:
        log_event(
            log,
            logging.WARNING,
            "slow consumer closed",
            conn=conn.conn_id,
            client=conn.client_id or None,
            peer=conn.peer.address or None,
            maxBufferedBytes=ws.max_buffered_bytes,
        )
    log_event(
        log,
        logging.INFO,
        "connection closed",
        conn=conn.conn_id,
        client=conn.client_id or None,
        role=conn.role,
        peer=conn.peer.address or None,
        code=ws.close_code,
        reason=reason or None,
        peerClosed=ws.peer_closed or None,
        durationMs=_age_ms(conn),
    )
