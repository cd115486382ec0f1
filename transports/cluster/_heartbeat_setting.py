"""`set-heartbeats` kept for the whole cluster (`HeartbeatSetting`, held by the node's
`_heartbeats.ClusterHeartbeats`): a node that starts later, or starts again, follows the
last setting made through any node.

The setting is a document in the cluster's PostgreSQL (`actors.PostgresDocument` named
`HEARTBEATS_DOCUMENT`, a row of `shared_documents` beside device pairing and the cluster's
config; its body `{"enabled": bool}`, its version the row's counter):

- `load`: read when the node starts, before it serves (no document yet: heartbeats on, as
  OpenClaw starts them), when another node is live; a node that finds none starts the
  cluster afresh (`restart`): heartbeats on, as OpenClaw's gateway starts again (its
  setting lasts as long as its process), a stored `off` stored `on` again;
- `store`: `set-heartbeats` writes it (the row locked for the write) before anything
  changes, and the node then tells the others (`{"beat": "enabled", "version": n}`), which
  take it at once (`take`: a setting older than the one a node holds is ignored);
- `follow`: every `FOLLOW_S` each node reads the document's version (one indexed one-row
  query) and takes a newer setting, so one whose notice was lost still arrives.

Without PostgreSQL storage (`storage.backend` not `postgres`) there is no document: the
setting is told to the running nodes only (version 0), as notices are.

Errors: `store` raises `StoreError` when PostgreSQL cannot be written (the method answers
`UNAVAILABLE`; the setting stays as it was on every node); `load` and `follow` log a read
that failed and keep the setting held (`follow` tries again at its next round).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec
import trio

from actors import StoreError
from runtime.devices import DocumentVersion
from runtime.model import Config

if TYPE_CHECKING:
    from actors import PostgresDocument

__all__ = ["FOLLOW_S", "HEARTBEATS_DOCUMENT", "HeartbeatSetting"]

log = logging.getLogger("clawlane.cluster")

HEARTBEATS_DOCUMENT: Final = "heartbeats/enabled"
FOLLOW_S: Final = 5.0
"""How often a node reads the setting's version."""

_T = TypeVar("_T")


class _Setting(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    enabled: bool


_encoder: Final = msgspec.json.Encoder()
_decoder: Final = msgspec.json.Decoder(_Setting)


class HeartbeatSetting:
    """The cluster's `set-heartbeats` (see the module docstring); `adopt` turns this node's
    heartbeats on or off (`actors.Heartbeats.adopt_enabled`)."""

    def __init__(self, document: PostgresDocument | None, adopt: Callable[[bool], None]) -> None:
        self._document = document
        self._adopt = adopt
        self._lock = trio.Lock()
        """One call on the document's connection at a time."""
        self.version = 0
        """The version of the setting this node holds (0: none read or told yet)."""
        self.enabled = True
        """The setting this node holds."""

    @classmethod
    def for_config(cls, config: Config, adopt: Callable[[bool], None]) -> HeartbeatSetting:
        """The setting in the PostgreSQL of `config.storage` (none on another backend). No
        I/O."""
        storage = config.storage
        document = None
        if storage.backend == "postgres" and storage.postgres.url:
            from actors import PostgresDocument

            document = PostgresDocument(storage.postgres.url, HEARTBEATS_DOCUMENT)
        return cls(document, adopt)

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        async with self._lock:
            return await trio.to_thread.run_sync(fn, *args)

    def take(self, enabled: bool, version: int) -> None:
        """Another node set `enabled` (stored as `version`; 0: not stored): adopt it unless
        this node holds a newer one. Not a checkpoint."""
        if version and version <= self.version:
            return
        self.version = max(self.version, version)
        self.enabled = enabled
        self._adopt(enabled)

    def _take_body(self, body: bytes | None, version: DocumentVersion) -> None:
        if body is None or version is None or version[0] <= self.version:
            return
        try:
            enabled = _decoder.decode(body).enabled
        except msgspec.DecodeError as exc:
            log.warning("the stored set-heartbeats is unreadable, kept as is: %s", exc)
            return
        self.take(enabled, version[0])

    async def load(self) -> None:
        """Read the stored setting and adopt it (see the module docstring). A checkpoint."""
        document = self._document
        if document is None:
            await trio.lowlevel.checkpoint()
            return
        try:
            body, version = await self._call(document.read)
        except document.errors as exc:
            log.warning("set-heartbeats not read from %s: %s", document.where, exc)
            return
        self._take_body(body, version)

    async def restart(self) -> None:
        """The cluster starts afresh (no other node lives): heartbeats on, and a stored
        `off` stored `on` (a node that starts later follows it). A write that fails is
        logged: this node runs them, a node that starts later reads what is stored. A
        checkpoint."""
        await self.load()
        if self.enabled:
            return
        try:
            await self.store(True)
        except StoreError as exc:
            log.warning("set-heartbeats not turned on again at the cluster's start: %s", exc)
        self.enabled = True
        self._adopt(True)

    async def store(self, enabled: bool) -> int:
        """Store `enabled` as the cluster's setting; its version (0 without a document).
        Raises `StoreError`. A checkpoint."""
        document = self._document
        if document is None:
            await trio.lowlevel.checkpoint()
            return 0
        data = _encoder.encode(_Setting(enabled))

        def write() -> DocumentVersion:
            try:
                document.lock_and_read(None)
                version = document.write_locked(data)
            except BaseException:
                with contextlib.suppress(*document.errors):
                    document.release(commit=False)
                raise
            document.release()
            return version

        try:
            version = await self._call(write)
        except document.errors as exc:
            raise StoreError(f"set-heartbeats not stored in {document.where}: {exc}") from exc
        self.version = max(self.version, version[0] if version else 0)
        return self.version

    async def follow(self) -> None:
        """Take a newer stored setting every `FOLLOW_S` until cancelled; then close the
        document's connection. A checkpoint."""
        document = self._document
        if document is None:
            return
        try:
            while True:
                await trio.sleep(FOLLOW_S)
                try:
                    current = await self._call(document.current)
                    if current is not None and current[0] > self.version:
                        self._take_body(*await self._call(document.read))
                except document.errors as exc:
                    log.info("set-heartbeats not read from %s: %s", document.where, exc)
        finally:
            with trio.CancelScope(shield=True):
                await self._call(document.close)
