"""The root of the transports' errors (the tree is in the package's face)."""

from __future__ import annotations

from runtime.protocol import ClawlaneError

__all__ = ["GatewayConfigError", "TransportError"]


class TransportError(ClawlaneError):
    """Something at the edges failed: the gateway cannot start, a connection broke, a
    client's request failed, a load test could not run."""


class GatewayConfigError(TransportError):
    """The gateway refuses to start (e.g. a non-loopback bind without a token)."""
