"""Sessions: keys, persisted session rows, and transcripts (sans-IO).

A session is addressed by a key (`agent:<agentId>:<rest>`, or one of the special keys
`global`, `unknown`, `cron:<id>`, `hook:<id>`) and owns one row (`SessionRow`, OpenClaw's
field names) plus a transcript: a tree of entries in the pi v3 shape
`{type, id, parentId, timestamp, ...}` that may be exported to and imported from a pi v3
JSONL file. `build_context` turns a transcript into the messages a model sees.

Nothing here does I/O; the Store actor persists rows and entries with the codecs below
(one module-level encoder, one typed decoder per type).

Errors in this module:
- `SessionKeyError`: a session key is malformed or belongs to another agent.
- `TranscriptFormatError`: a JSONL transcript cannot be imported; `line` names the line.
- Decoding a stored row or entry raises `msgspec.DecodeError` (msgspec's own error;
  `msgspec.ValidationError` is a subclass), which callers map at their boundary.
"""

from __future__ import annotations

import functools
import random
import re
import time
import uuid
from collections.abc import Callable, Container, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal, TypeGuard

import attrs
import msgspec

from ..llm._types import AssistantMessage, Message, TextContent, UserContent, UserMessage
from ..protocol import ClawlaneError

DEFAULT_AGENT_ID: Final = "main"
DEFAULT_MAIN_KEY: Final = "main"
TRANSCRIPT_VERSION: Final = 3
COMPACTION_SUMMARY_PREFIX: Final = (
    "The conversation history before this point was compacted into the following summary:\n\n"
)
# pi wraps the summary in these tags (pi-coding-agent `core/messages.ts`); kept byte-for-byte.
_SUMMARY_OPEN: Final = "<summary>\n"
_SUMMARY_CLOSE: Final = "\n</summary>"

SessionKind = Literal["direct", "group", "global", "unknown"]
RunStatus = Literal["running", "done", "failed", "aborted"]


class SessionKeyError(ClawlaneError, ValueError):
    """A session key is malformed, or names a different agent than the request."""


class TranscriptFormatError(ClawlaneError, ValueError):
    """A JSONL transcript is not a valid pi v3 transcript. `line` is 1-based."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


# --- session keys ------------------------------------------------------------------------

_VALID_AGENT_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_INVALID_AGENT_CHARS = re.compile(r"[^a-z0-9_-]+")
_SPECIAL_KEYS: Final = frozenset({"global", "unknown"})
_SPECIAL_PREFIXES: Final = ("cron:", "hook:")
_GROUP_MARKERS: Final = (":group:", ":channel:", ":room:")


@attrs.frozen
class ParsedKey:
    """An `agent:<agent_id>:<rest>` key taken apart."""

    agent_id: str
    rest: str


@functools.lru_cache(maxsize=1024)
def normalize_agent_id(value: str | None) -> str:
    """Return `value` as an agent id matching `[a-z0-9][a-z0-9_-]{0,63}`.

    Lowercases, turns each run of invalid characters into "-", drops leading "-"/"_" and
    trailing "-", cuts to 64 characters; an empty result is `DEFAULT_AGENT_ID`.
    """
    trimmed = (value or "").strip().lower()
    if _VALID_AGENT_ID.fullmatch(trimmed):
        return trimmed
    cleaned = _INVALID_AGENT_CHARS.sub("-", trimmed).lstrip("-_").rstrip("-")[:64]
    return cleaned or DEFAULT_AGENT_ID


def parse_session_key(key: str) -> ParsedKey | None:
    """Split `agent:<agentId>:<rest>` (case-insensitive); None for any other shape."""
    parts = key.strip().lower().split(":")
    if len(parts) < 3 or parts[0] != "agent" or not all(parts):
        return None
    if not _VALID_AGENT_ID.fullmatch(parts[1]):
        return None
    return ParsedKey(agent_id=parts[1], rest=":".join(parts[2:]))


def _is_special(key: str) -> bool:
    if key in _SPECIAL_KEYS:
        return True
    return any(key.startswith(p) and len(key) > len(p) for p in _SPECIAL_PREFIXES)


@functools.lru_cache(maxsize=16_384)
def resolve_session_key(
    raw: str | None, *, agent_id: str | None, default_agent: str = DEFAULT_AGENT_ID
) -> str:
    """Return the canonical (lowercased) key a request's `raw` key refers to.

    - None or blank: the agent's main session, `agent:<agent>:main`.
    - `global`, `unknown`, `cron:<id>`, `hook:<id>`: returned as they are (lowercased).
    - `agent:<agentId>:<rest>`: checked (≥3 non-empty parts, a valid agent id) and, when
      `agent_id` is given, required to name that agent.
    - anything else is a bare key `foo`, stored as `agent:<agent>:foo`.

    `<agent>` is `agent_id` if given, else `default_agent` (both normalised).
    Raises `SessionKeyError`.
    """
    agent = normalize_agent_id(agent_id if agent_id else default_agent)
    key = (raw or "").strip().lower()
    if not key:
        return f"agent:{agent}:{DEFAULT_MAIN_KEY}"
    if _is_special(key):
        return key
    if key.startswith("agent:"):
        parsed = parse_session_key(key)
        if parsed is None:
            raise SessionKeyError(f"malformed session key: {raw!r}")
        if agent_id and parsed.agent_id != agent:
            raise SessionKeyError(
                f"session key {raw!r} belongs to agent {parsed.agent_id!r}, not to agent {agent!r}"
            )
        return key
    if not all(key.split(":")):
        raise SessionKeyError(f"malformed session key: {raw!r}")
    return f"agent:{agent}:{key}"


def session_kind(key: str) -> SessionKind:
    """Classify a key for `sessions.list`: group/channel/room keys are "group"."""
    if key == "global":
        return "global"
    if key == "unknown":
        return "unknown"
    parsed = parse_session_key(key)
    scope = f":{parsed.rest}:" if parsed is not None else f":{key.lower()}:"
    if any(marker in scope for marker in _GROUP_MARKERS):
        return "group"
    return "direct"


# --- session rows ------------------------------------------------------------------------


class MemoryFlushRecord(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True
):
    """OpenClaw's `SessionEntry.memoryFlush`: the memory flush's ledger, kept in the row so a
    restart neither flushes twice in a compaction cycle nor skips one. `succeeded`: flushed
    (or given up, after 3 failures) in the cycle `compactionCount` names; `failed`: the
    last `failureCount` flushes failed (`compactionCount`: the last cycle that succeeded)."""

    kind: Literal["succeeded", "failed"]
    compactionCount: int | None = None
    failureCount: int | None = None


class SessionRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """One session's persisted row (OpenClaw `SessionEntry` names; times in epoch ms).

    Replace it whole (`msgspec.structs.replace`) to change it.
    """

    key: str
    sessionId: str
    agentId: str
    createdAt: int
    updatedAt: int
    label: str | None = None
    category: str | None = None
    """The session group it is filed under (`sessions.groups.*`; set by `sessions.patch`)."""
    displayName: str | None = None
    channel: str | None = None
    model: str | None = None
    modelProvider: str | None = None
    thinkingLevel: str | None = None
    verboseLevel: str | None = None
    reasoningLevel: str | None = None
    queueMode: str | None = None
    queueDebounceMs: int | None = None
    queueCap: int | None = None
    queueDrop: str | None = None
    providerOverride: str | None = None
    modelOverride: str | None = None
    sendPolicy: str | None = None
    responseUsage: str | None = None
    """The session's usage footer (`/usage`: `off`, `tokens`, `full`); None: the config's."""
    inputTokens: int = 0
    outputTokens: int = 0
    totalTokens: int = 0
    contextTokens: int | None = None
    compactionCount: int = 0
    status: RunStatus | None = None
    startedAt: int | None = None
    endedAt: int | None = None
    abortedLastRun: bool = False
    lastRunId: str | None = None
    spawnedBy: str | None = None
    """A subagent session's lineage (`sessions_spawn`): the session that spawned it (OpenClaw's
    `spawnedBy`, and `parentSessionKey` alike), and how deep it is (1: a child of a root)."""
    parentSessionKey: str | None = None
    spawnDepth: int | None = None
    subagentRole: str | None = None
    """`orchestrator` (it may spawn in turn) or `leaf`, as its depth was when spawned."""
    childSessions: tuple[str, ...] | None = None
    """The sessions it spawned, the latest 20."""
    spawnedCwd: str | None = None
    """A subagent's working directory (`sessions_spawn` `cwd`, a real path inside its
    agent's workspace): its runs' tools work there instead of the workspace's root."""
    memoryFlush: MemoryFlushRecord | None = None
    """The memory flush's ledger (`runtime.agent._memoryflush`), as OpenClaw keeps it."""


def openclaw_row_meta(entry: MessageEntry, seq: int) -> dict[str, Any]:
    """The `__openclaw` block of a transcript row as OpenClaw returns it (`chat.history`,
    `session.message`): the entry id, its sequence number, and what the row records of its
    origin (`idempotencyKey`, `runId`, `steerTargetRunId`)."""
    meta: dict[str, Any] = {"id": entry.id, "seq": seq}
    if entry.idempotencyKey is not None:
        meta["idempotencyKey"] = entry.idempotencyKey
    if entry.runId is not None:
        meta["runId"] = entry.runId
    if entry.steerTargetRunId is not None:
        meta["steerTargetRunId"] = entry.steerTargetRunId
    return meta


def new_session_id() -> str:
    """A fresh session id (a UUID, as OpenClaw assigns on create and reset)."""
    return str(uuid.uuid4())


def new_session_row(key: str, *, now_ms: int, session_id: str | None = None) -> SessionRow:
    """A row for a session seen for the first time (or reset): new id, both times `now_ms`."""
    parsed = parse_session_key(key)
    return SessionRow(
        key=key,
        sessionId=session_id or new_session_id(),
        agentId=parsed.agent_id if parsed is not None else DEFAULT_AGENT_ID,
        createdAt=now_ms,
        updatedAt=now_ms,
    )


# --- transcript entries (pi v3) ----------------------------------------------------------


class _Entry(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    omit_defaults=True,
    tag_field="type",
):
    id: str
    parentId: str | None
    timestamp: str


class CustomMessage(
    msgspec.Struct, frozen=True, tag="custom", tag_field="role", omit_defaults=True
):
    """A message of an extension's (OpenClaw's role `custom`), kept in a message entry: a row
    of the conversation a history shows (`display`) that the model reads only when it is not
    `excludeFromContext` (then as a user message with its `content`). OpenClaw writes one for
    each call made through Tool Search's `tool_call` (`_nested_tool`)."""

    customType: str
    content: str | list[UserContent]
    display: bool
    timestamp: int
    excludeFromContext: bool = False
    details: Any = None


class MessageEntry(_Entry, frozen=True, tag="message"):
    message: Message | CustomMessage
    idempotencyKey: str | None = None
    """The client's key for this row (`<runId>:user` for the user message of a run, the run id
    for a reply the gateway wrote itself), as OpenClaw stores it: clients match their pending
    lines by it (`__openclaw.idempotencyKey` in `chat.history`)."""
    runId: str | None = None
    """The run that wrote this row."""
    steerTargetRunId: str | None = None
    """For a message steered into a running run: that run."""


class CompactionEntry(_Entry, frozen=True, tag="compaction"):
    summary: str
    firstKeptEntryId: str
    tokensBefore: int
    details: Any = None
    fromHook: bool | None = None


class ModelChangeEntry(_Entry, frozen=True, tag="model_change"):
    provider: str
    modelId: str


class ThinkingLevelChangeEntry(_Entry, frozen=True, tag="thinking_level_change"):
    thinkingLevel: str


class CustomEntry(_Entry, frozen=True, tag="custom"):
    """Extension state; never part of the model context."""

    customType: str
    data: Any = None


class CustomMessageEntry(_Entry, frozen=True, tag="custom_message"):
    """An extension's message (pi's `custom_message`): part of the model's context, as a user
    message with its `content`. `display: false` keeps it out of every history a client or
    another session reads (`chat.history`, `sessions_history`, `session.message`): only the
    model sees it (OpenClaw's private context, e.g. `sessions_yield`'s)."""

    customType: str
    content: str | list[UserContent]
    display: bool
    details: Any = None


class LabelEntry(_Entry, frozen=True, tag="label"):
    """A user label on `targetId`; `label=None` clears it."""

    targetId: str
    label: str | None = None


class SessionInfoEntry(_Entry, frozen=True, tag="session_info"):
    name: str | None = None


TranscriptEntry = (
    MessageEntry
    | CompactionEntry
    | ModelChangeEntry
    | ThinkingLevelChangeEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
)


class SessionHeader(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    omit_defaults=True,
    kw_only=True,
    tag="session",
    tag_field="type",
):
    """Line 1 of a pi v3 JSONL transcript. `id` is the session id."""

    version: int
    id: str
    timestamp: str
    cwd: str
    parentSession: str | None = None


def new_session_header(
    session_id: str, *, cwd: str, now_ms: int, parent_session: str | None = None
) -> SessionHeader:
    return SessionHeader(
        version=TRANSCRIPT_VERSION,
        id=session_id,
        timestamp=iso_timestamp(now_ms),
        cwd=cwd,
        parentSession=parent_session,
    )


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS: Final = timedelta(milliseconds=1)


_last_second: list[tuple[int | None, str]] = [(None, "")]


def iso_timestamp(ms: int) -> str:
    """Epoch ms as JavaScript's `Date.toISOString()` writes it: `2026-01-02T03:04:05.678Z`.

    The formatted second is remembered: entries written in the same second share it."""
    second, millis = divmod(ms, 1000)
    last, prefix = _last_second[0]
    if second != last:
        dt = _EPOCH + timedelta(seconds=second)
        prefix = f"{dt:%Y-%m-%dT%H:%M:%S}"
        _last_second[0] = (second, prefix)
    return f"{prefix}.{millis:03d}Z"


def parse_iso_timestamp(value: str) -> int | None:
    """Epoch ms of an ISO-8601 timestamp (naive means UTC); None if it does not parse."""
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return (dt - _EPOCH) // _ONE_MS


_ids = random.Random()


def new_entry_id(existing: Container[str]) -> str:
    """8 hex characters (the head of a uuid4) not in `existing`.

    Like pi, gives up after 100 collisions and returns a whole uuid4 hex.
    """
    for _ in range(100):
        # 32 random bits, as the head of a uuid4 has; not a secret, so the process's
        # generator (seeded from the OS) rather than a system call per entry
        candidate = f"{_ids.getrandbits(32):08x}"
        if candidate not in existing:
            return candidate
    return uuid.uuid4().hex


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@attrs.define
class TranscriptBuilder:
    """Chains new entries onto a transcript: each one's `parentId` is the current leaf.

    Holds only ids, not entries; the caller keeps (and persists) what `add_*` returns.
    `clock` returns epoch ms and stamps each entry's `timestamp`.
    """

    _ids: set[str] = attrs.field(factory=set, alias="ids")
    _leaf_id: str | None = attrs.field(default=None, alias="leaf_id")
    _clock: Callable[[], int] = attrs.field(default=_now_ms, alias="clock")

    @classmethod
    def from_entries(
        cls, entries: Sequence[TranscriptEntry], *, clock: Callable[[], int] = _now_ms
    ) -> TranscriptBuilder:
        """Continue an existing transcript from its last entry."""
        return cls(
            ids={e.id for e in entries},
            leaf_id=entries[-1].id if entries else None,
            clock=clock,
        )

    @property
    def leaf_id(self) -> str | None:
        return self._leaf_id

    def branch(self, entry_id: str | None) -> None:
        """Make `entry_id` the leaf: the next entry starts a branch below it (None: a new
        root)."""
        if entry_id is not None and entry_id not in self._ids:
            raise KeyError(entry_id)
        self._leaf_id = entry_id

    def _link(self) -> dict[str, Any]:
        entry_id = new_entry_id(self._ids)
        fields: dict[str, Any] = {
            "id": entry_id,
            "parentId": self._leaf_id,
            "timestamp": iso_timestamp(self._clock()),
        }
        self._ids.add(entry_id)
        self._leaf_id = entry_id
        return fields

    def add_message(
        self,
        message: Message | CustomMessage,
        *,
        idempotency_key: str | None = None,
        run_id: str | None = None,
        steer_target: str | None = None,
    ) -> MessageEntry:
        return MessageEntry(
            **self._link(),
            message=message,
            idempotencyKey=idempotency_key,
            runId=run_id,
            steerTargetRunId=steer_target,
        )

    def add_compaction(
        self, summary: str, *, first_kept_entry_id: str, tokens_before: int
    ) -> CompactionEntry:
        return CompactionEntry(
            **self._link(),
            summary=summary,
            firstKeptEntryId=first_kept_entry_id,
            tokensBefore=tokens_before,
        )

    def add_model_change(self, provider: str, model_id: str) -> ModelChangeEntry:
        return ModelChangeEntry(**self._link(), provider=provider, modelId=model_id)

    def add_thinking_level_change(self, thinking_level: str) -> ThinkingLevelChangeEntry:
        return ThinkingLevelChangeEntry(**self._link(), thinkingLevel=thinking_level)

    def add_custom(self, custom_type: str, data: Any = None) -> CustomEntry:
        return CustomEntry(**self._link(), customType=custom_type, data=data)

    def add_custom_message(
        self,
        custom_type: str,
        content: str | list[UserContent],
        *,
        display: bool,
        details: Any = None,
    ) -> CustomMessageEntry:
        return CustomMessageEntry(
            **self._link(),
            customType=custom_type,
            content=content,
            display=display,
            details=details,
        )

    def add_label(self, target_id: str, label: str | None) -> LabelEntry:
        return LabelEntry(**self._link(), targetId=target_id, label=label)

    def add_session_info(self, name: str | None) -> SessionInfoEntry:
        return SessionInfoEntry(**self._link(), name=name)


def branch_path(entries: Sequence[TranscriptEntry]) -> list[TranscriptEntry]:
    """The entries from the root to the last entry, following `parentId`."""
    if not entries:
        return []
    by_id = {e.id: e for e in entries}
    path: list[TranscriptEntry] = []
    seen: set[str] = set()
    node: TranscriptEntry | None = entries[-1]
    while node is not None and node.id not in seen:
        seen.add(node.id)
        path.append(node)
        node = by_id.get(node.parentId) if node.parentId is not None else None
    path.reverse()
    return path


def fork_path(
    entries: Sequence[TranscriptEntry], *, last_completed: bool = False
) -> list[TranscriptEntry]:
    """What a fork of a session starts from: the branch it is on (the root to its last
    entry), or with `last_completed` that branch up to its last assistant message that did
    not end in a tool call (a fork taken while a run is still going: none of the run's
    unfinished turn). The entries keep their ids and parents."""
    path = branch_path(entries)
    if not last_completed:
        return path
    for i in range(len(path) - 1, -1, -1):
        entry = path[i]
        if (
            isinstance(entry, MessageEntry)
            and isinstance(entry.message, AssistantMessage)
            and entry.message.stopReason != "toolUse"
        ):
            return path[: i + 1]
    return []


def compaction_summary_message(entry: CompactionEntry) -> UserMessage:
    """The user message that stands in for everything a compaction summarised (pi's text)."""
    text = f"{COMPACTION_SUMMARY_PREFIX}{_SUMMARY_OPEN}{entry.summary}{_SUMMARY_CLOSE}"
    return UserMessage(
        content=[TextContent(text=text)],
        timestamp=parse_iso_timestamp(entry.timestamp) or 0,
    )


ContextEntry = MessageEntry | CompactionEntry | CustomMessageEntry
"""An entry that makes part of the model's context (`context_entries`)."""


def context_entries(entries: Sequence[TranscriptEntry]) -> list[ContextEntry]:
    """The entries that make the model's context on the branch ending at the last entry.

    Walks leaf→root. With a compaction on that path (the latest one wins): the compaction
    entry (it stands for its summary), then the message entries (and custom messages) from
    `firstKeptEntryId` up to the compaction, then every one after it. Without one: every
    message entry and custom message on the path.
    """
    path = branch_path(entries)
    compaction_at = next(
        (i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], CompactionEntry)),
        None,
    )
    if compaction_at is None:
        return [e for e in path if _in_context(e)]
    compaction = path[compaction_at]
    assert isinstance(compaction, CompactionEntry)
    selected: list[ContextEntry] = [compaction]
    kept = False
    for entry in path[:compaction_at]:
        kept = kept or entry.id == compaction.firstKeptEntryId
        if kept and _in_context(entry):
            selected.append(entry)
    selected.extend(e for e in path[compaction_at + 1 :] if _in_context(e))
    return selected


def _in_context(entry: TranscriptEntry) -> TypeGuard[MessageEntry | CustomMessageEntry]:
    """A message entry or a custom message: what the model reads of a branch (besides the
    compaction summary), but for a custom message kept for display only."""
    if isinstance(entry, MessageEntry):
        message = entry.message
        return not (isinstance(message, CustomMessage) and message.excludeFromContext)
    return isinstance(entry, CustomMessageEntry)


def context_message(entry: ContextEntry) -> Message:
    """What the model reads of a context entry: a message as it is, a compaction as its
    summary, a custom message as a user message with its content (as pi converts it)."""
    if isinstance(entry, CompactionEntry):
        return compaction_summary_message(entry)
    if isinstance(entry, CustomMessageEntry):
        return UserMessage(
            content=entry.content, timestamp=parse_iso_timestamp(entry.timestamp) or 0
        )
    message = entry.message
    if isinstance(message, CustomMessage):
        return UserMessage(content=message.content, timestamp=message.timestamp)
    return message


def build_context(entries: Sequence[TranscriptEntry]) -> list[Message]:
    """The messages the model sees (`context_entries`, each as `context_message`)."""
    return [context_message(e) for e in context_entries(entries)]


def conversation(entries: Iterable[TranscriptEntry]) -> list[Message]:
    """The messages of the message entries among `entries`, in order, custom messages left
    out: the conversation's user, assistant and tool result messages (usage, previews)."""
    return [
        e.message
        for e in entries
        if isinstance(e, MessageEntry) and not isinstance(e.message, CustomMessage)
    ]


def added_context(entries: Sequence[TranscriptEntry]) -> list[Message]:
    """The messages `entries` add to the model's context when appended (in order, with no
    compaction among them): what a session's context grows by after a run
    (`context_message` of each message entry and custom message)."""
    return [context_message(e) for e in entries if _in_context(e)]


# --- codecs ------------------------------------------------------------------------------

_ENCODER: Final = msgspec.json.Encoder()
_ROW_DECODER: Final = msgspec.json.Decoder(SessionRow)
_ROWS_DECODER: Final = msgspec.json.Decoder(list[SessionRow])
_ENTRY_DECODER: Final[msgspec.json.Decoder[TranscriptEntry]] = msgspec.json.Decoder(TranscriptEntry)
_ENTRIES_DECODER: Final[msgspec.json.Decoder[list[TranscriptEntry]]] = msgspec.json.Decoder(
    list[TranscriptEntry]
)
_HEADER_DECODER: Final = msgspec.json.Decoder(SessionHeader)


def encode_session_row(row: SessionRow) -> bytes:
    return _ENCODER.encode(row)


def decode_session_row(data: bytes) -> SessionRow:
    """Raises `msgspec.DecodeError`."""
    return _ROW_DECODER.decode(data)


def decode_session_rows(blobs: Iterable[bytes]) -> list[SessionRow]:
    """Decode many encoded rows in one pass. Raises `msgspec.DecodeError`."""
    return _ROWS_DECODER.decode(b"[" + b",".join(blobs) + b"]")


def encode_entry(entry: TranscriptEntry) -> bytes:
    return _ENCODER.encode(entry)


def decode_entry(data: bytes) -> TranscriptEntry:
    """Raises `msgspec.DecodeError`."""
    return _ENTRY_DECODER.decode(data)


def decode_entries(blobs: Iterable[bytes]) -> list[TranscriptEntry]:
    """Decode many encoded entries in one pass. Raises `msgspec.DecodeError`."""
    return _ENTRIES_DECODER.decode(b"[" + b",".join(blobs) + b"]")


# --- pi v3 JSONL -------------------------------------------------------------------------


def export_jsonl(header: SessionHeader, entries: Iterable[TranscriptEntry]) -> bytes:
    """A pi v3 transcript file: the header line, then one line per entry."""
    return _ENCODER.encode_lines([header, *entries])


def import_jsonl(data: bytes) -> tuple[SessionHeader, list[TranscriptEntry]]:
    """Parse a pi v3 transcript file. Blank lines are skipped.

    Checks the header (first line, version 3), each entry's shape, that ids are unique and
    that every `parentId` names an earlier entry. Raises `TranscriptFormatError`.
    """
    header: SessionHeader | None = None
    entries: list[TranscriptEntry] = []
    ids: set[str] = set()
    last_line = 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        last_line = number
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        if header is None:
            try:
                header = _HEADER_DECODER.decode(line)
            except msgspec.DecodeError as exc:
                raise TranscriptFormatError(number, f"bad session header: {exc}") from exc
            if header.version != TRANSCRIPT_VERSION:
                raise TranscriptFormatError(
                    number, f"unsupported transcript version {header.version}"
                )
            continue
        try:
            entry = _ENTRY_DECODER.decode(line)
        except msgspec.DecodeError as exc:
            raise TranscriptFormatError(number, f"bad entry: {exc}") from exc
        if entry.id in ids:
            raise TranscriptFormatError(number, f"duplicate entry id {entry.id!r}")
        if entry.parentId is not None and entry.parentId not in ids:
            raise TranscriptFormatError(
                number, f"parentId {entry.parentId!r} does not name an earlier entry"
            )
        ids.add(entry.id)
        entries.append(entry)
    if header is None:
        raise TranscriptFormatError(max(last_line, 1), "missing session header")
    return header, entries
