"""The Publisher: builds model runtime generations off to the side and publishes them.

Publishing means: read the inputs (the config, each agent's auth profile store, the plugin
harnesses), build the next generation completely (in a worker thread by default), swap it
into the supervisor (`Supervisor.publish`: one reference), and announce it to every client
with a `runtime.generation` event. A build that fails (bad config, bad auth store, unknown
model, a primary model without auth, a plugin error) is logged, announced with the same event
(`status: "failed"`), kept as `last_error` for `status`, and never published: the previous
generation keeps serving. Inputs that hash the same as the serving generation's publish
nothing.

Publishes happen at startup, on `config.set` / `config.patch` / `config.apply` (`write_text`,
`write_patch`: optimistic concurrency on the file's content hash), when the config file or
an agent's auth profile store changes on disk, and when the plugin registry's `version`
changes. One lock serialises them, so generation numbers only go up and no two builds race.

The watcher (`run`, a task in the gateway's nursery) polls every `poll_interval_s`: it
`stat`s the watched files (mtime, size, inode) and reads the plugin registry version; after a
change it waits until the files have been quiet for `debounce_s`, then reloads (contents are
hashed, so a touch without a change publishes nothing). `trigger()` polls at once. With no
config file (`config_path` None) the config lives in memory and only the API changes it.

Provider transports that no live generation uses any more are closed after each publish and
on each poll (runs keep their generation, and so its transports, to their end).

In a cluster on PostgreSQL (`use_document`) the config is the cluster's document
(`actors.store.ConfigDocument`), not the file: a start adopts it (the file seeds it when it
has none, or with `seed`), config writes are compare-and-sets on it, the watched file is
published to it (unless older than it), and `adopt_document` builds what another node wrote.

Errors: `PublishConflict` (`baseHash` missing or stale), `ConfigError` (the text is not a
valid config) and `GenerationError` (the build failed) from the write calls; the watcher
never raises for a bad file.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import trio

from runtime.logs import log_event
from runtime.model import (
    Config,
    ConfigError,
    ConfigSnapshot,
    GenerationBuilder,
    GenerationError,
    GenerationInputs,
    ModelRuntimeGeneration,
    PluginRegistry,
    apply_merge_patch,
    backup_path,
    config_text,
    config_to_builtins,
    has_comments,
    keep_previous,
    read_config_snapshot,
    restore_redacted,
    snapshot_from_text,
    write_config_text,
)

from ._errors import StoreError
from ._publish_files import (
    Fingerprint,
    decode_object,
    mtime_ms,
    older_file_refusal,
    stat_fingerprint,
)
from ._publish_records import PublishConflict, PublisherStatistics, PublishFailure, PublishResult
from ._supervisor import Supervisor

if TYPE_CHECKING:
    from .store import ConfigDocument, Held, StoredConfig

__all__ = [
    "DOCUMENT_REASONS",
    "GENERATION_EVENT",
    "PublishConflict",
    "PublishFailure",
    "PublishResult",
    "Publisher",
    "PublisherStatistics",
]

log = logging.getLogger("clawlane.publisher")

GENERATION_EVENT: Final = "runtime.generation"
"""clawlane-only event: a generation was published, or a build failed (`status`)."""
HISTORY_MAX: Final = 100
"""Publishes and failed builds remembered for `history()` (the dashboard)."""
HISTORY_MESSAGE_MAX: Final = 2_000
POLL_INTERVAL_S: Final = 0.5
DEBOUNCE_S: Final = 0.3
DOCUMENT_CHECK_S: Final = 5.0
"""With the cluster's config document: how often a node looks at its version (an
announcement lost while Redis was away is caught up within this long)."""
DOCUMENT_REASONS: Final = frozenset({"config.set", "config.patch", "config.apply", "file", "seed"})
"""Publishes that wrote the cluster's config document (announced as its version)."""
_T = TypeVar("_T")


class Publisher:
    """Create it next to a supervisor, start `run` in a nursery. Trio-thread only."""

    def __init__(
        self,
        supervisor: Supervisor,
        *,
        builder: GenerationBuilder,
        config_path: Path | None = None,
        plugins: PluginRegistry | None = None,
        poll_interval_s: float = POLL_INTERVAL_S,
        debounce_s: float = DEBOUNCE_S,
        build_in_thread: bool = True,
    ) -> None:
        self.supervisor = supervisor
        self.builder = builder
        self.config_path = config_path
        self.plugins = plugins if plugins is not None else supervisor.plugins
        self.poll_interval_s = poll_interval_s
        self.debounce_s = debounce_s
        self.build_in_thread = build_in_thread
        self.watch_files = True
        """False: `poll_once` leaves the files alone (in a cluster, another node watches
        them: `own_file_watch`)."""
        self.on_publish: list[Callable[[ModelRuntimeGeneration], None]] = []
        self.on_document: list[Callable[[int], None]] = []
        """Called with the version after each write of the cluster's config document."""
        self.document: ConfigDocument | None = None
        """The cluster's config (`use_document`); None: the file (or memory) is the config."""
        self.seed_config = False
        self.origin = ""
        self.document_version: int | None = None
        """The version of the cluster's config this node serves (None: none yet)."""
        self.document_error: str | None = None
        """Why this node could not build the cluster's config (it keeps its generation)."""
        self._document_checked = 0.0
        self._written: int | None = None  # the version a document write made, uncommitted
        self._failed_document: int | None = None
        self.last_error: PublishFailure | None = None
        self._lock = trio.Lock()
        self._wake = trio.Event()
        self._memory_raw: str | None = None
        if config_path is None:
            self._memory_raw = config_text(config_to_builtins(supervisor.generation.config))
        self._seen: dict[Path, Fingerprint] = {}
        self._watch_config: Config = supervisor.generation.config
        self._failed_plugin_version: int | None = None
        self._published = 0
        self._failed = 0
        self._unchanged = 0
        self._retired = 0
        self._last_reason: str | None = None
        self._last_latency_ms: float | None = None
        self._changed = trio.Event()
        self._change_reason = "file"
        gen = supervisor.generation
        self._history: collections.deque[dict[str, Any]] = collections.deque(
            [
                {
                    "status": "serving",
                    "number": gen.number,
                    "reason": "startup",
                    "at": gen.built_at_ms,
                }
            ],
            maxlen=HISTORY_MAX,
        )

    # --- reading --------------------------------------------------------------------------

    @property
    def generation(self) -> ModelRuntimeGeneration:
        return self.supervisor.generation

    def _read_file_sync(self) -> ConfigSnapshot:
        if self.config_path is None:
            return snapshot_from_text(self._memory_raw)
        return read_config_snapshot(self.config_path)

    def _read_snapshot_sync(self) -> ConfigSnapshot:
        """The config: the cluster's document when there is one, else the file. Blocking."""
        if self.document is not None:
            stored = self.document.read_sync()
            if stored is not None:
                return snapshot_from_text(stored.record.text, path=self.config_path)
        return self._read_file_sync()

    async def read_snapshot(self) -> ConfigSnapshot:
        """The config as it is now (`config.get`): the file, or in a cluster on PostgreSQL
        the cluster's document. A checkpoint (reads in a thread). Raises `StoreError` when
        the document cannot be read."""
        return await self._offload(self._read_snapshot_sync)

    def use_document(self, document: ConfigDocument, *, origin: str, seed: bool) -> None:
        """Make the cluster's config document this node's config (before `run`): `prime`
        adopts it, or seeds it from the file when it has none or `seed` is set (the file
        watch then publishes the file even when it is older than the document); config
        writes are compare-and-sets on it; the watched file is published to it. `origin`:
        this node's id, recorded with each write."""
        self.document, self.origin, self.seed_config = document, origin, seed

    def watched_paths(self) -> list[Path]:
        paths = [] if self.config_path is None else [self.config_path]
        return paths + self.builder.auth_files_for(self._watch_config)

    async def _offload(self, fn: Callable[[], _T]) -> _T:
        if self.build_in_thread:
            return await trio.to_thread.run_sync(fn)
        await trio.lowlevel.checkpoint()
        return fn()

    # --- publishing -----------------------------------------------------------------------

    async def publish_config(self, config: Config, *, reason: str) -> ModelRuntimeGeneration:
        """Build and publish a generation from `config` (and the current auth stores and
        plugins). Returns the serving generation (unchanged when the inputs are). Raises
        `GenerationError`; the failure is reported and nothing is published.

        The config file is not written (it stays what the watcher reloads); without a file
        the in-memory config becomes `config`."""
        commit = None
        if self.config_path is None:
            text = config_text(config_to_builtins(config))
            commit = lambda: self._commit_text(text)  # noqa: E731
        async with self._lock:
            generation, changed = await self._build_and_publish(
                lambda: config, reason, commit=commit
            )
            if changed:
                await self._close_retired_locked()
            return generation

    async def reload(self, *, reason: str = "file") -> ModelRuntimeGeneration | None:
        """Re-read the config file and auth stores; publish if the inputs changed. Returns
        the new generation, or None when nothing changed or the build failed (reported)."""
        async with self._lock:
            generation = await self._reload_locked(reason)
            if generation is not None:
                await self._close_retired_locked()
            return generation

    async def _reload_locked(self, reason: str) -> ModelRuntimeGeneration | None:
        if self.document is not None:
            if reason in ("startup", "file"):
                return await self._file_and_document_locked(reason)
            return await self._document_inputs_locked(reason)
        seen: list[Config] = []

        def read() -> Config:
            snapshot = self._read_snapshot_sync()
            config = snapshot.require()
            seen.append(config)
            return config

        try:
            generation, changed = await self._build_and_publish(read, reason)
        except GenerationError:
            return None
        finally:
            if seen:
                self._watch_config = seen[0]
        return generation if changed else None

    async def _build_and_publish(
        self,
        read_config: Callable[[], Config],
        reason: str,
        *,
        commit: Callable[[], None] | None = None,
    ) -> tuple[ModelRuntimeGeneration, bool]:
        """Under the lock: read and build off to the side (then `commit`, e.g. write the
        file, still off to the side), then publish. Raises `GenerationError` (reported)."""
        sup = self.supervisor
        current = sup.generation
        number = current.number + 1
        plugins = self.plugins.snapshot() if self.plugins is not None else None
        started = time.perf_counter()

        def work() -> ModelRuntimeGeneration | None:
            inputs: GenerationInputs = self.builder.read_inputs(read_config(), plugins)
            built = (
                None
                if inputs.digest() == current.inputs_hash
                else self.builder.build(inputs, number)
            )
            if commit is not None:
                commit()
            return built

        try:
            built = await self._offload(work)
        except (ConfigError, GenerationError) as exc:
            self._report_failure(reason, exc, plugins.version if plugins else None)
            if isinstance(exc, GenerationError):
                raise
            raise GenerationError(str(exc)) from exc
        if commit is not None:
            self._remember_files()
        if built is None:
            self._unchanged += 1
            return current, False
        old = sup.publish(built)
        self._watch_config = built.config
        self._published += 1
        self._last_reason = reason
        self._last_latency_ms = build_ms = (time.perf_counter() - started) * 1000
        self.last_error = None
        self._history.append(
            {
                "status": "published",
                "number": built.number,
                "reason": reason,
                "at": int(time.time() * 1000),
                "previous": old.number,
                "latencyMs": round(self._last_latency_ms, 3),
            }
        )
        log_event(
            log,
            logging.INFO,
            "generation published",
            generation=built.number,
            previous=old.number,
            reason=reason,
            buildMs=round(build_ms, 1),
        )
        sup.hub.broadcast(
            GENERATION_EVENT,
            {
                "status": "published",
                "reason": reason,
                "generation": built.describe(),
                "previous": old.number,
                "ts": int(time.time() * 1000),
            },
        )
        for callback in list(self.on_publish):
            callback(built)
        self._notify()
        return built, True

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _report_failure(
        self, reason: str, exc: ConfigError | GenerationError, plugin_version: int | None
    ) -> None:
        path = exc.path if isinstance(exc, ConfigError) else None
        failure = PublishFailure(
            reason=reason,
            message=str(exc),
            path=path,
            at_ms=int(time.time() * 1000),
            serving=self.supervisor.generation.number,
        )
        self.last_error = failure
        self._failed += 1
        entry = {"status": "failed", "number": None, **failure.to_json()}
        entry["message"] = entry["message"][:HISTORY_MESSAGE_MAX]
        self._history.append(entry)
        if plugin_version is not None and reason == "plugins":
            self._failed_plugin_version = plugin_version
        log_event(
            log,
            logging.ERROR,
            "generation build failed",
            reason=reason,
            serving=failure.serving,
            path=path,
            error=failure.message,
        )
        self.supervisor.hub.broadcast(
            GENERATION_EVENT,
            {
                "status": "failed",
                "reason": reason,
                "error": {k: v for k, v in (("message", failure.message), ("path", path)) if v},
                "generation": self.supervisor.generation.describe(),
                "ts": failure.at_ms,
            },
        )
        self._notify()

    async def _close_retired_locked(self) -> None:
        retired = self.builder.collect_retired(keep=[self.supervisor.generation])
        for provider in retired:
            self._retired += 1
            try:
                await provider.aclose()
            except Exception:
                log.exception("closing a retired provider failed")

    # --- config writes (config.set / config.apply / config.patch) --------------------------

    def _check_base_hash(self, snapshot: ConfigSnapshot, base_hash: str | None) -> None:
        if not snapshot.exists:
            return
        if not base_hash:
            raise PublishConflict("config base hash required; re-run config.get and retry")
        if base_hash != snapshot.hash:
            raise PublishConflict("config changed since last load; re-run config.get and retry")

    async def write_text(self, raw: str, *, base_hash: str | None, reason: str) -> PublishResult:
        """Replace the whole config with `raw` (JSON text), as `config.set`/`config.apply`:
        check `base_hash`, validate, build, write the file atomically, publish. Values sent
        as `__OPENCLAW_REDACTED__` keep their current secret. Raises `PublishConflict`,
        `ConfigError` or `GenerationError`; on any of them nothing is written."""
        value = await self._offload(lambda: decode_object(raw, "the config must be a JSON object"))
        async with self._lock, self._base() as (snapshot, held):
            self._check_base_hash(snapshot, base_hash)
            restored = restore_redacted(value, snapshot.parsed)
            text = raw if restored == value else config_text(restored)
            return await self._write_locked(text, reason, held)

    async def write_patch(
        self,
        raw: str,
        *,
        base_hash: str | None,
        replace_paths: Iterable[str] = (),
        reason: str = "config.patch",
    ) -> PublishResult:
        """Merge-patch the config file with `raw` (a JSON object), as `config.patch`."""
        patch = await self._offload(
            lambda: decode_object(raw, "config.patch raw must be an object")
        )
        async with self._lock, self._base() as (snapshot, held):
            self._check_base_hash(snapshot, base_hash)
            if not snapshot.valid:
                raise ConfigError("invalid config; fix before patching")
            base = snapshot.parsed if isinstance(snapshot.parsed, dict) else {}
            merged = apply_merge_patch(base, patch, replace_paths=replace_paths)
            merged = restore_redacted(merged, base)
            return await self._write_locked(config_text(merged), reason, held)

    @asynccontextmanager
    async def _base(self) -> AsyncIterator[tuple[ConfigSnapshot, Held | None]]:
        """What a write starts from: the file; or the cluster's document, its row lock held
        for the whole write (a compare-and-set: the base hash is checked against it)."""
        if self.document is None:
            yield await self._offload(self._read_file_sync), None
            return
        self._written = None
        try:
            async with self.document.locked() as held:
                stored = held.stored
                if stored is None:
                    snapshot = await self._offload(self._read_file_sync)
                else:
                    snapshot = snapshot_from_text(stored.record.text, path=self.config_path)
                yield snapshot, held
        except StoreError:
            self.document_version = None  # the next check adopts what the document holds
            raise
        self._document_committed()

    def _document_committed(self) -> None:
        """After a write of the document was committed: this node serves its version, and
        the others are told (`on_document`)."""
        version, self._written = self._written, None
        if version is None:
            return
        self.document_version, self.document_error = version, None
        for callback in list(self.on_document):
            callback(version)

    async def _write_locked(self, text: str, reason: str, held: Held | None) -> PublishResult:
        new_snapshot = snapshot_from_text(text, path=self.config_path)
        try:
            config = new_snapshot.require()
        except ConfigError as exc:
            self._report_failure(reason, exc, None)
            raise
        generation, changed = await self._build_and_publish(
            lambda: config, reason, commit=self._committer(text, reason, held)
        )
        if changed:
            await self._close_retired_locked()
        return PublishResult(generation, changed, new_snapshot)

    def _committer(self, text: str, reason: str, held: Held | None) -> Callable[[], None]:
        """What a good build commits: the file (or memory), or the cluster's document."""
        if held is None:
            return lambda: self._commit_text(text)

        def commit() -> None:
            from .store import ConfigRecord  # psycopg's module: only with a document

            record = ConfigRecord(text, int(time.time() * 1000), self.origin, reason)
            self._written = held.write_sync(record)

        return commit

    def _commit_text(self, text: str) -> None:
        """Write the config (file or memory). Runs in the build thread, after a good build.
        The file's previous text is kept as `<file>.bak` (`runtime.model._config_text`)."""
        if self.config_path is None:
            self._memory_raw = text
        else:
            old = keep_previous(self.config_path)
            if old is not None and has_comments(old) and not has_comments(text):
                log_event(
                    log,
                    logging.WARNING,
                    "config write drops the file's comments",
                    path=str(self.config_path),
                    previous=str(backup_path(self.config_path)),
                )
            write_config_text(self.config_path, text)

    # --- the cluster's config document ------------------------------------------------

    async def adopt_document(self, *, reason: str = "cluster") -> ModelRuntimeGeneration:
        """Build and serve what the cluster's config document holds now (another node wrote
        it). Returns the serving generation. Raises `GenerationError` (reported, kept in
        `document_error`; the serving generation stays) or `StoreError`. A checkpoint."""
        assert self.document is not None, "adopt_document without use_document"
        async with self._lock:
            stored = await self.document.read()
            if stored is None:
                return self.generation
            generation, _ = await self._adopt_locked(stored, reason)
            await self._close_retired_locked()
            return generation

    async def _adopt_locked(
        self, stored: StoredConfig, reason: str
    ) -> tuple[ModelRuntimeGeneration, bool]:
        text = stored.record.text
        try:
            built = await self._build_and_publish(
                lambda: snapshot_from_text(text, path=self.config_path).require(), reason
            )
        except GenerationError as exc:
            self.document_error = f"the cluster's config (version {stored.version}): {exc}"
            self._failed_document = stored.version
            raise
        self.document_version, self.document_error = stored.version, None
        self._failed_document = None
        return built

    async def _document_inputs_locked(self, reason: str) -> ModelRuntimeGeneration | None:
        """An auth store or the plugins changed: build the cluster's config as it is now
        with them (a version that failed may build now); the document cannot be read: the
        config this node serves. A failed build is reported, never raised."""
        assert self.document is not None
        try:
            stored = await self.document.read()
        except StoreError as exc:
            log.warning("the cluster's config document was not read (%s): %s", reason, exc)
            stored = None
        try:
            if stored is not None:
                generation, changed = await self._adopt_locked(stored, reason)
            else:
                serving = self.supervisor.generation.config
                generation, changed = await self._build_and_publish(lambda: serving, reason)
        except GenerationError:
            return None
        return generation if changed else None

    async def _file_and_document_locked(self, reason: str) -> ModelRuntimeGeneration | None:
        """`startup`: adopt the cluster's config, or seed it from the file (the document has
        none yet, or `seed_config`). `file`: the watched file changed: publish it to the
        document, unless it is older than the document (without `seed_config`). A bad file
        or a failed build is reported, never raised; `StoreError` is raised at startup
        (the node cannot know the cluster's config) and logged otherwise."""
        assert self.document is not None
        self._written, adopt, result = None, None, None
        try:
            async with self.document.locked() as held:
                stored = held.stored
                if reason == "startup" and stored is not None and not self.seed_config:
                    adopt = stored  # adopted once the lock is released
                else:
                    result = await self._file_to_document_locked(reason, held)
        except StoreError as exc:
            self._written = None
            if reason == "startup":
                raise
            log.warning("the config file was not published to the cluster (retried): %s", exc)
            if self.config_path is not None:
                self._seen.pop(self.config_path, None)  # the next poll tries again
            return None
        self._document_committed()
        if adopt is None:
            return result
        try:
            generation, changed = await self._adopt_locked(adopt, "startup")
        except GenerationError:
            return None
        return generation if changed else None

    async def _file_to_document_locked(
        self, reason: str, held: Held
    ) -> ModelRuntimeGeneration | None:
        path = self.config_path
        snapshot, modified = await self._offload(lambda: (self._read_file_sync(), mtime_ms(path)))
        stored = held.stored
        if reason == "file" and snapshot.raw is None:
            log.warning("the config file was removed: the cluster's config is unchanged")
            return None
        if (
            reason == "file"
            and stored is not None
            and not self.seed_config
            and modified is not None
            and modified < stored.record.writtenAtMs
        ):
            record = stored.record
            refusal = older_file_refusal(path, stored.version, record.writtenAtMs, record.origin)
            self._report_failure(reason, refusal, None)
            return None
        text = snapshot.raw if snapshot.raw is not None else config_text({})
        why = "seed" if reason == "startup" else reason
        try:
            generation, changed = await self._build_and_publish(
                snapshot.require, why, commit=self._committer(text, why, held)
            )
        except GenerationError:
            return None
        return generation if changed else None

    async def _check_document(self) -> None:
        """Adopt the document when its version is not the one served (an announcement was
        missed); a version whose build failed is not tried again here."""
        assert self.document is not None
        self._document_checked = trio.current_time()
        try:
            version = await self.document.current()
            if version in (None, self.document_version, self._failed_document):
                return
            await self.adopt_document(reason="cluster")
        except StoreError as exc:
            log.warning("the cluster's config document was not read: %s", exc)
        except GenerationError:
            pass  # reported, and kept in document_error

    def document_view(self) -> dict[str, Any] | None:
        """`status`: the cluster's config this node serves (None without a document)."""
        if self.document is None:
            return None
        return {
            "version": self.document_version,
            "error": self.document_error,
            "seed": self.seed_config,
        }

    def _remember_files(self) -> None:
        for path in self.watched_paths():
            self._seen[path] = stat_fingerprint(path)

    # --- watching -------------------------------------------------------------------------

    def trigger(self) -> None:
        """Poll now (not a checkpoint)."""
        self._wake.set()

    async def wait_change(self) -> None:
        """Wait for the next publish or reported failure. A checkpoint."""
        await self._changed.wait()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The watcher: `prime`, report started, then `poll_once` every `poll_interval_s`
        (or at once after `trigger`). Runs until cancelled; a cancellation during a build
        waits for the build thread."""
        await self.prime()
        task_status.started()
        while True:
            with trio.move_on_after(self.poll_interval_s):
                await self._wake.wait()
            self._wake = trio.Event()
            await self.poll_once()

    async def own_file_watch(self) -> None:
        """Watch the files until cancelled (in a cluster: while this node holds the watch's
        lease); a change made while another node watched them is seen at once. Without
        this task and with `watch_files` False the files are not watched."""
        self.watch_files = True
        self.trigger()
        try:
            await trio.sleep_forever()
        finally:
            self.watch_files = False

    async def prime(self) -> None:
        """Take the baseline of the watched files, and publish them if they no longer match
        the serving generation (reason `startup`). A checkpoint."""
        async with self._lock:
            self._remember_files()
            await self._reload_locked("startup")
            self._remember_files()

    async def poll_once(self) -> None:
        """One watcher step: files changed → wait until quiet for `debounce_s` → reload;
        plugin registry changed → republish; then `sweep`. A checkpoint."""
        if self.watch_files and self._files_changed():
            while True:
                await trio.sleep(self.debounce_s)
                if not self._files_changed():
                    break
            async with self._lock:
                await self._reload_locked(self._change_reason)
        plugins = self.plugins
        if (
            plugins is not None
            and plugins.version != self.supervisor.generation.plugin_version
            and plugins.version != self._failed_plugin_version
        ):
            async with self._lock:
                await self._reload_locked("plugins")
        if (
            self.document is not None
            and trio.current_time() - self._document_checked >= DOCUMENT_CHECK_S
        ):
            await self._check_document()
        await self.sweep()

    async def sweep(self) -> None:
        """Close the provider transports no live generation uses any more (generations live
        as long as a run holds them). A checkpoint."""
        async with self._lock:
            await self._close_retired_locked()

    def _files_changed(self) -> bool:
        changed = False
        for path in self.watched_paths():
            fp = stat_fingerprint(path)
            if path not in self._seen or self._seen[path] != fp:
                self._seen[path] = fp
                changed = True
                self._change_reason = "file" if path == self.config_path else "auth-profiles"
        return changed

    # --- reporting ------------------------------------------------------------------------

    def statistics(self) -> PublisherStatistics:
        return PublisherStatistics(
            generation=self.supervisor.generation.number,
            published=self._published,
            failed=self._failed,
            unchanged=self._unchanged,
            last_reason=self._last_reason,
            last_latency_ms=self._last_latency_ms,
            last_error=self.last_error,
            watching=tuple(str(p) for p in self.watched_paths()),
            retired_providers=self._retired,
        )

    def history(self) -> list[dict[str, Any]]:
        """The last `HISTORY_MAX` publishes and failed builds, oldest first (the serving
        generation at startup first while it is among them). JSON-ready copies."""
        return [dict(item) for item in self._history]

    def status_view(self) -> dict[str, Any]:
        """For the `status` method: the serving generation and the publisher's health."""
        s = self.statistics()
        return {
            "generation": self.supervisor.generation.describe(),
            "published": s.published,
            "failed": s.failed,
            "unchanged": s.unchanged,
            "lastReason": s.last_reason,
            "lastLatencyMs": s.last_latency_ms,
            "lastError": s.last_error.to_json() if s.last_error else None,
            "configPath": str(self.config_path) if self.config_path else None,
            "watching": list(s.watching),
            "watchingFiles": self.watch_files,
            "document": self.document_view(),
        }
