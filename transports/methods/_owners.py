"""One session's part of a method that acts on many (`sessions.patchMany`, `sessions.cleanup`,
`sessions.groups.rename` / `delete`), done by the node that owns the session.

In a cluster a session's row lives in its owner's actor: a change written by another node
is lost, or undone by the owner's next write of its copy. So each session's change is a
single-session request (`sessions.patch`, `sessions.delete`) sent through the cluster's
router (`Call.router`), as a connection's would go: served by the owner, or here when this
node owns the session or takes it. The request stands for the calling connection (its
role, device, scopes) with `operator.admin` added: the many-session method has checked what
its caller may change (`sessions.patchMany` its patch's fields) and made the request
itself. Without a router (one process) the change is made here, by `local`, as before.

Errors: the request's `GatewayError`, raised (`UNAVAILABLE` when no answer came).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import msgspec
import trio

from runtime.protocol import UNAVAILABLE, GatewayError, RequestFrame, operator_scope_satisfied

from ._context import Call, Cancellable, Client

__all__ = ["on_owner"]

_T = TypeVar("_T")
_ADMIN: Final = "operator.admin"
_ids = itertools.count(1)


class _OwnerRequest:
    """The calling connection as the owner's handler sees it, for one request: its
    identity, its scopes with `operator.admin`, its first answer kept here."""

    def __init__(self, conn: Client) -> None:
        self._conn_id = conn.conn_id
        self.role = conn.role
        self.scopes = frozenset(conn.scopes) | {_ADMIN}
        self.granted_scopes = sorted(set(conn.granted_scopes) | {_ADMIN})
        self.auth_method = conn.auth_method
        self.device_id = conn.device_id
        self.scoped = True  # it reads no events
        self.viewed_sessions: set[str] = set()
        self.pending: dict[str, Cancellable] = {}
        self.answer: tuple[bool, Any] | None = None

    @property
    def conn_id(self) -> str:
        return self._conn_id

    @property
    def wants_tool_events(self) -> bool:
        return False

    def has_scope(self, scope: str) -> bool:
        return operator_scope_satisfied(scope, self.scopes)

    def push_event(self, frame: bytes) -> None:
        pass

    def respond(self, req_id: str, payload: Any = None) -> None:
        if self.answer is None:
            self.answer = (True, payload)

    def respond_error(self, req_id: str, error: GatewayError, payload: Any = msgspec.UNSET) -> None:
        if self.answer is None:
            self.answer = (False, error)


async def on_owner(
    call: Call, method: str, params: dict[str, Any], local: Callable[[], Awaitable[_T]]
) -> _T | Any:
    """`method` (a single-session method: the router routes it by its session) with
    `params`, served by the session's owner; `local()` when the gateway is no node of a
    cluster. Its answer's payload, or its error raised. A checkpoint; cancelling the call
    cancels the request (on the owner too)."""
    router = call.router
    if router is None:
        return await local()
    frame = RequestFrame(id=f"{call.id}/{next(_ids)}", method=method, params=params)
    target = router.target(frame)
    if target is None:  # not a session's: nothing owns it
        return await local()
    request = _OwnerRequest(call.conn)
    with trio.CancelScope() as scope:
        await router.handle(request, frame, scope, None, target)
    if request.answer is None:
        raise GatewayError(UNAVAILABLE, f"{method} on {target[1]}: no answer", retryable=True)
    ok, payload = request.answer
    if not ok:
        raise payload
    return payload
