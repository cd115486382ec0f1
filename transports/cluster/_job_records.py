"""Every node's background jobs, kept where every node reads them: a document in the cluster's
PostgreSQL (`actors.PostgresDocument` named `JOBS_DOCUMENT`, a row of `shared_documents`
beside the cluster's config and `set-heartbeats`), so that a node joining after another node
went still learns that node's jobs and lists them lost (`_processes`).

The body is one part per node process (`<node>@<inc>`: a node started again writes a part of
its own, its former process's jobs stay as they were told): the `listed` notices of the jobs
that process lists (as `_processes` tells them), when it last wrote them (`at`), and the
jobs whose loss a node told their sessions (`told`, so a node joining later does not tell
them again).

- **Written by its node.** A node rewrites its part when what it lists changed (`mark`), at
  most every `WRITE_S`, the row locked for the write; it also prunes the parts of the
  processes that are gone (`dead`) once their jobs' keep time is over, and takes out of
  them what was forgotten since (`drop`: `clear`, `remove`, a session deleted or reset) and
  what was told (`tell`).
- **Read by every node.** Every `FOLLOW_S` a node reads the document's version (one indexed
  one-row query) and, when it changed, the body: `take` gets the parts of the processes that
  are gone (the live ones tell their jobs themselves).

Without PostgreSQL storage (`storage.backend` not `postgres`) there is no document: the jobs
of a node are known only to the nodes that heard its notices, as before. A read or a write
that fails is logged and tried again at the next round (a write: when something changes).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec
import trio

from runtime.model import Config

if TYPE_CHECKING:
    from actors import PostgresDocument

__all__ = ["FOLLOW_S", "JOBS_DOCUMENT", "WRITE_S", "JobDocument", "JobPart"]

log = logging.getLogger("clawlane.cluster")

JOBS_DOCUMENT: Final = "exec/jobs"
WRITE_S: Final = 0.5
"""A node's part is written at most this often."""
FOLLOW_S: Final = 2.0
"""How often a node reads the document's version."""

_T = TypeVar("_T")


class JobPart(msgspec.Struct, frozen=True):
    """One node process's jobs: its `listed` notices, when written (ms), what was told."""

    node: str
    inc: int | None
    at: int
    jobs: list[dict[str, Any]] = []
    told: list[tuple[str, str]] = []
    """(session key, job id) of the jobs whose loss a node told their sessions."""


class _Body(msgspec.Struct):
    parts: dict[str, JobPart] = {}


_encoder: Final = msgspec.json.Encoder()
_decoder: Final = msgspec.json.Decoder(_Body)


def part_key(node: str, inc: int | None) -> str:
    return f"{node}@{inc}"


def _keep_ms(part: JobPart) -> float:
    return max((float(n.get("keepS") or 0) for n in part.jobs), default=0.0) * 1000


class JobDocument:
    """The cluster's record of its nodes' jobs (see the module docstring)."""

    def __init__(self, document: PostgresDocument | None, node: str, inc: int | None) -> None:
        self._document = document
        self.key = part_key(node, inc)
        self._node, self._inc = node, inc
        self._lock = trio.Lock()
        """One call on the document's connection at a time."""
        self._dirty = document is not None
        self._changed = trio.Event()
        self._drops: set[tuple[str, str | None]] = set()
        self._told: set[tuple[str, str, str]] = set()
        self._version = -1
        self.reads = self.writes = 0

    @classmethod
    def for_config(cls, config: Config, node: str, inc: int | None) -> JobDocument:
        """The document in the PostgreSQL of `config.storage` (none on another backend). No
        I/O."""
        storage = config.storage
        document = None
        if storage.backend == "postgres" and storage.postgres.url:
            from actors import PostgresDocument

            document = PostgresDocument(storage.postgres.url, JOBS_DOCUMENT)
        return cls(document, node, inc)

    @property
    def kept(self) -> bool:
        return self._document is not None

    def mark(self) -> None:
        """What this node lists changed: its part is written soon. Not a checkpoint."""
        self._dirty = True
        self._changed.set()

    def drop(self, session_key: str, job_id: str | None = None) -> None:
        """Take job `job_id` of `session_key` (None: every job of it) out of the parts of
        the processes that are gone, at the next write. Not a checkpoint."""
        if self._document is not None:
            self._drops.add((session_key, job_id))
            self.mark()

    def tell(self, key: str, session_key: str, job_id: str) -> None:
        """The loss of a job of part `key` was told to its session. Not a checkpoint."""
        if self._document is not None:
            self._told.add((key, session_key, job_id))
            self.mark()

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        async with self._lock:
            return await trio.to_thread.run_sync(fn, *args)

    async def write(self, jobs: list[dict[str, Any]], dead: Callable[[JobPart], bool]) -> None:
        """Write this node's part (`jobs`), prune and edit the parts of the processes gone
        (`dead`). Raises the document's errors. A checkpoint."""
        document = self._document
        assert document is not None
        drops, told = set(self._drops), set(self._told)
        now = int(time.time() * 1000)
        mine = JobPart(self._node, self._inc, now, jobs)

        def edit(body: _Body) -> None:
            body.parts[self.key] = mine
            for key, part in list(body.parts.items()):
                if key == self.key or not dead(part):
                    continue
                kept = [
                    n
                    for n in part.jobs
                    if (n["sessionKey"], None) not in drops
                    and (n["sessionKey"], n["entry"]["sessionId"]) not in drops
                ]
                marks = [(s, j) for k, s, j in told if k == key and (s, j) not in part.told]
                if not kept or part.at + _keep_ms(part) < now:
                    del body.parts[key]
                elif kept != part.jobs or marks:
                    told_now = [*part.told, *marks]
                    body.parts[key] = msgspec.structs.replace(part, jobs=kept, told=told_now)

        def run() -> None:
            try:
                data, _version = document.lock_and_read(None)
                body = _decoder.decode(data) if data else _Body()
                edit(body)
                document.write_locked(_encoder.encode(body))
            except BaseException:
                with contextlib.suppress(*document.errors):
                    document.release(commit=False)
                raise
            document.release()

        self._dirty = False
        try:
            await self._call(run)
        except BaseException:
            self._dirty = True
            raise
        self.writes += 1
        self._drops -= drops
        self._told -= told

    async def read(self) -> list[JobPart] | None:
        """Every part, when the document changed since the last read; else None. Raises
        the document's errors. A checkpoint."""
        document = self._document
        assert document is not None
        current = await self._call(document.current)
        version = current[0] if current else 0
        if version == self._version:
            return None
        data, found = await self._call(document.read)
        self._version = found[0] if found else 0
        self.reads += 1
        if not data:
            return []
        try:
            return list(_decoder.decode(data).parts.values())
        except msgspec.DecodeError as exc:
            log.warning("the cluster's job records are unreadable, ignored: %s", exc)
            return []

    async def run(
        self,
        jobs: Callable[[], list[dict[str, Any]] | None],
        dead: Callable[[JobPart], bool],
        take: Callable[[list[JobPart]], None],
        ready: Callable[[], bool],
    ) -> None:
        """Write this node's part (`jobs()`: None while the node closes, when nothing is
        written: its jobs are lost with it) when it changed, read the others' every
        `FOLLOW_S` (the first once `ready`), until cancelled; then close the document's
        connection. A checkpoint."""
        document = self._document
        if document is None:
            return
        read_at = trio.current_time()
        try:
            while True:
                now = trio.current_time()
                if now >= read_at and ready():
                    read_at = now + FOLLOW_S
                    try:
                        parts = await self.read()
                        if parts is not None:
                            take(parts)
                    except document.errors as exc:
                        log.info("job records not read from %s: %s", document.where, exc)
                listed = jobs() if self._dirty else None
                if listed is not None:
                    try:
                        await self.write(listed, dead)
                    except document.errors as exc:
                        log.info("job records not written to %s: %s", document.where, exc)
                    await trio.sleep(WRITE_S)
                    continue
                self._changed = trio.Event()
                with trio.move_on_after(max(0.05, read_at - trio.current_time())):
                    await self._changed.wait()
        finally:
            with trio.CancelScope(shield=True):
                await self._call(document.close)
