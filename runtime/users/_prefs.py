"""The Control UI's user preferences (`users.prefs.get` / `users.prefs.set`): one document of
entries for the gateway, `{"version": 1, "entries": {key: value}}`, kept where the pairing
records are: the state dir's `users/prefs.json` (mode 0600 in a 0700 folder; the processes
on one state dir share it), or with `storage.backend: "postgres"` the cluster's document
`users/prefs` (`actors.PostgresDocument`: every node shares it). OpenClaw keeps them in its
state database, per profile; clawlane has one profile, the gateway's.

A `set` is acknowledged once the document holds it: a restart, another worker or another
node reads it back. Each `set` is a read-modify-write under the document's lock
(`runtime.devices.SharedDocument`), so `expectedEntries` (compare and set) holds across
processes: of two writers expecting the same value, one gets `conflict`. A `get` takes the
document in again only when its version changed (one cheap check: a `stat`, or one query).
The blocking work runs in a worker thread, one call at a time.

Errors in this module:
- `UserPrefsError`: the document is not a preferences document (the gateway refuses to
  start and names it), or it cannot be read or written (its error chained), in one line.
- `PrefsTooLarge`: the entries after a `set` would pass `MAX_PREFS_BYTES` (nothing written).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec
import trio

from ..devices import DocumentVersion, FileDocument, SharedDocument
from ..protocol import ClawlaneError

__all__ = [
    "MAX_PREFS_BYTES",
    "PREFS_RELATIVE_PATH",
    "PrefsTooLarge",
    "UserPrefs",
    "UserPrefsError",
    "open_user_prefs",
]

MAX_PREFS_BYTES: Final = 64 * 1024
"""The entries' JSON, all keys together (OpenClaw's bounded preference limit)."""
PREFS_RELATIVE_PATH: Final = Path("users") / "prefs.json"
_FORMAT: Final = 1


class UserPrefsError(ClawlaneError):
    """The preferences document is unusable (unreadable, not one, or not writable)."""


class PrefsTooLarge(ClawlaneError):
    """A `set` would make the entries larger than `MAX_PREFS_BYTES`."""


class _Document(msgspec.Struct, forbid_unknown_fields=False):
    version: int
    entries: dict[str, Any]


class UserPrefs:
    """The entries, synced with `document` (see the module docstring)."""

    def __init__(self, document: SharedDocument) -> None:
        self.document = document
        self._entries: dict[str, Any] = {}
        self._version: DocumentVersion = None
        self._synced = False  # read at least once
        self._busy = trio.Lock()  # the document's calls, one at a time

    @classmethod
    def in_state_dir(cls, state_dir: Path) -> UserPrefs:
        """The preferences in the state dir's `users/prefs.json` (read when first used)."""
        return cls(FileDocument(state_dir / PREFS_RELATIVE_PATH))

    async def get(self, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """The entries (those of `keys` only when given), as the document has them now.
        Raises `UserPrefsError`."""
        async with self._busy:
            await trio.to_thread.run_sync(self._sync, False)
        wanted = None if keys is None else set(keys)
        return {k: v for k, v in self._entries.items() if wanted is None or k in wanted}

    async def set(self, entries: Mapping[str, Any], expected: Mapping[str, Any] | None) -> bool:
        """Merge `entries` (a None value removes its key) when every `expected` entry is as
        the document has it; False (nothing written) when one is not. Raises
        `PrefsTooLarge`, `UserPrefsError`."""
        async with self._busy:
            return await trio.to_thread.run_sync(self._set, dict(entries), expected)

    # --- in the worker thread -----------------------------------------------------------------

    def _sync(self, keep_lock: bool) -> None:
        """Take in the document when it changed (under its lock, kept when `keep_lock`)."""
        document = self.document
        try:
            if not keep_lock and self._synced and document.current() == self._version:
                return
            body, version = document.lock_and_read(self._version)
        except document.errors as exc:
            document.release()
            raise UserPrefsError(f"user preferences {document.where}: {exc}") from exc
        try:
            if body is not None:
                self._entries = decode_prefs(body, document.where)
            elif version is None:
                self._entries = {}
            self._version = version
            self._synced = True
        finally:
            if not keep_lock:
                document.release()

    def _set(self, entries: dict[str, Any], expected: Mapping[str, Any] | None) -> bool:
        document = self.document
        try:
            self._sync(True)  # raises with the lock released
            current = self._entries
            if expected is not None and any(current.get(k) != v for k, v in expected.items()):
                return False
            merged = {k: v for k, v in {**current, **entries}.items() if v is not None}
            data = msgspec.json.encode(_Document(version=_FORMAT, entries=merged))
            if len(msgspec.json.encode(merged)) > MAX_PREFS_BYTES:
                raise PrefsTooLarge(f"preferences are limited to {MAX_PREFS_BYTES} bytes")
            try:
                self._version = document.write_locked(data)
            except document.errors as exc:
                self._version = None  # read it again next time
                raise UserPrefsError(f"user preferences {document.where}: {exc}") from exc
            self._entries = merged
            return True
        finally:
            document.release()


def decode_prefs(body: bytes, where: str) -> dict[str, Any]:
    """The entries of a preferences document. Raises `UserPrefsError` naming `where`."""
    try:
        found = msgspec.json.decode(body, type=_Document)
    except msgspec.DecodeError as exc:
        raise UserPrefsError(f"user preferences {where} is not a preferences file: {exc}") from exc
    if found.version != _FORMAT:
        raise UserPrefsError(f"user preferences {where}: unknown format version {found.version}")
    return found.entries


async def open_user_prefs(state_dir: Path, document: SharedDocument | None = None) -> UserPrefs:
    """The preferences synced with `document`, by default the state dir's
    `users/prefs.json`, read once now. A checkpoint; raises `UserPrefsError` in one line
    naming the file or the document."""
    prefs = UserPrefs(document) if document is not None else UserPrefs.in_state_dir(state_dir)
    await prefs.get()
    return prefs
