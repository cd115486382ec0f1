"""Memory: the agent remembers across sessions as OpenClaw's does, in plain Markdown files of
its workspace, searched through a per-agent index.

- Files (`_files`): `MEMORY.md` (long-term), `USER.md` (the user model), `memory/**/*.md`
  (daily notes `memory/YYYY-MM-DD.md` and `-slug` variants, and undated notes).
  `startup_prelude` is what a bare `/new` or `/reset` loads: today's and yesterday's notes
  within OpenClaw's budgets (`StartupLimits`). `MEMORY.md` and `USER.md` reach the system
  prompt as bootstrap files (`runtime.agent`).
- The index (`_index`, `_chunks`): one SQLite file per agent (`MemoryIndex`) with an FTS5
  table of the files' chunks (about 400 tokens, 80 of overlap, whole lines), kept current
  incrementally (a search first re-chunks only files whose size or time changed, whoever
  changed them), bounded in indexed bytes, rebuilt from the files when it is corrupt.
- Where the index lives (`_backend`): behind one interface, `IndexBackend`, which the host
  chooses (`MemoryService.use_indexes` with an `IndexFactory`); both indexes follow the same
  rules (`plan_sync`, `keyword_hits`, `tokens`, `relevance_score`), so a search answers the
  same on either. By default, and on the SQLite storage backend, the SQLite file above (in
  the state dir: the workers of one host, `--workers N`, share it through SQLite WAL; each
  worker's vectors in memory follow the others' writes through `data_version`). On the
  PostgreSQL storage backend the gateway keeps the index in that database instead
  (`actors.store.PostgresMemoryIndexes`: PostgreSQL full-text search, a `tsvector` with a
  GIN index ranked by `ts_rank_cd`; vectors as `bytea` fed to the same `VectorTable`).
  Either way the index is a cache of the files on the disk of the host that runs the agent,
  rebuilt from them at will, so it belongs to that host: the SQLite file by living in the
  host's state dir, the PostgreSQL rows by a scope naming the host, the agent and the
  workspace's path (`memory_scopes`). A node finds only its own host's files, the ones its `memory_get` and
  `read` can open, and nodes on other hosts index their own files under scopes of their
  own (a workspace every node mounts is indexed once per host). Memory that follows a
  session from node to node needs shared workspaces, not a shared index; clawlane does not
  provide them.
- Search (`_search`): `MemoryService` (the agents' indexes; `search`, `status`,
  `embedding_status`) and `rank` (OpenClaw's ranking: bm25 keywords, filename hits first,
  with an embeddings endpoint `vectorWeight 0.7 × cosine + textWeight 0.3 × keyword`, a
  30-day recency half-life for dated notes, `minScore` with keyword matches kept).
- Embeddings (`_embed`): `memory.search.provider` as any OpenAI-compatible `/embeddings`
  endpoint (`remote.baseUrl`, `apiKey`, `headers`, `model`); vectors kept in the index per
  endpoint and model as float32 blobs, cached by text hash (`memory.search.cache.enabled`),
  compared by cosine similarity in memory (`_vectors`: a per-agent, per-model numpy float32
  matrix with the `clawlane[memory]` extra, kept current as chunks change; a pure-Python
  loop without it). An endpoint that fails or does not answer within its timeout leaves keyword
  results with a `warning` (never a failed search or run); `doctor.memory.status` with
  `probe` embeds one text to check it. `memory.search.provider: "local"` embeds on this
  machine instead (`_local`: all-MiniLM-L6-v2 from the `clawlane[local-embeddings]` extra,
  no network; without the extra, keyword results with a note naming it).
- Tools (`_tools`): `memory_search` and `memory_get` (`memory_tools`), with OpenClaw's names,
  parameters and result shapes; `memory_get` is confined to the memory files.
- Imports (`_migrate`): `migrations.memory.plan` / `.apply` as OpenClaw's: Claude Code's
  auto-memory and Hermes' memories on this host, planned item by item with a fingerprint,
  copied into `memory/imports/...` of the agent's workspace (`plan_memory_imports`,
  `apply_memory_import`; `MigrationError` for a request that cannot be carried out).
- Settings (`_settings`): `MemorySettings`, the config's `memory.search.*` as a search uses it.

Nothing here raises its own errors but `MigrationError` (an import that cannot be done): a corrupt index is rebuilt, an unreadable file is left
out, an embeddings failure (`_embed.EmbeddingFailed`, caught inside) becomes a note, and the
tools report bad input as error results (`runtime.tools.invoke_tool`).
"""

from ._backend import IndexBackend as IndexBackend
from ._backend import IndexFactory as IndexFactory
from ._backend import IndexStatus as IndexStatus
from ._backend import KeywordHit as KeywordHit
from ._backend import SyncPlan as SyncPlan
from ._backend import VectorHit as VectorHit
from ._backend import embeddings_stored as embeddings_stored
from ._backend import keyword_hits as keyword_hits
from ._backend import plan_sync as plan_sync
from ._backend import relevance_score as relevance_score
from ._backend import tokens as tokens
from ._chunks import Chunk as Chunk
from ._chunks import chunk_markdown as chunk_markdown
from ._files import StartupLimits as StartupLimits
from ._files import dated_day as dated_day
from ._files import is_memory_path as is_memory_path
from ._files import list_memory_files as list_memory_files
from ._files import startup_prelude as startup_prelude
from ._index import MemoryIndex as MemoryIndex
from ._local import LOCAL_BASE_URL as LOCAL_BASE_URL
from ._local import LOCAL_MODEL as LOCAL_MODEL
from ._local import LOCAL_TIMEOUT_S as LOCAL_TIMEOUT_S
from ._local import local_available as local_available
from ._migrate import MigrationError as MigrationError
from ._migrate import apply_memory_import as apply_memory_import
from ._migrate import plan_memory_imports as plan_memory_imports
from ._search import IMPORTS_KEPT as IMPORTS_KEPT
from ._search import MemoryService as MemoryService
from ._search import SearchHit as SearchHit
from ._search import SearchOutcome as SearchOutcome
from ._search import rank as rank
from ._settings import EmbeddingSettings as EmbeddingSettings
from ._settings import MemorySettings as MemorySettings
from ._tools import MemoryGetTool as MemoryGetTool
from ._tools import MemorySearchTool as MemorySearchTool
from ._tools import memory_tools as memory_tools
from ._vectors import NUMPY as NUMPY
from ._vectors import VectorTable as VectorTable

__all__ = [
    "IMPORTS_KEPT",
    "LOCAL_BASE_URL",
    "LOCAL_MODEL",
    "LOCAL_TIMEOUT_S",
    "NUMPY",
    "Chunk",
    "EmbeddingSettings",
    "IndexBackend",
    "IndexFactory",
    "IndexStatus",
    "KeywordHit",
    "MemoryGetTool",
    "MemoryIndex",
    "MemorySearchTool",
    "MemoryService",
    "MemorySettings",
    "MigrationError",
    "SearchHit",
    "SearchOutcome",
    "StartupLimits",
    "SyncPlan",
    "VectorHit",
    "VectorTable",
    "apply_memory_import",
    "chunk_markdown",
    "dated_day",
    "embeddings_stored",
    "is_memory_path",
    "keyword_hits",
    "list_memory_files",
    "local_available",
    "memory_tools",
    "plan_memory_imports",
    "plan_sync",
    "rank",
    "relevance_score",
    "startup_prelude",
    "tokens",
]
