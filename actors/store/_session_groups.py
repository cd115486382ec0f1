"""The session groups' catalog (`sessions.groups.*`), kept in the store as OpenClaw keeps it.

A group is a name an operator files sessions under (a session's `category`, set by
`sessions.patch`); the catalog holds the groups in their sidebar order, the sidebar's
section order and each group's defaults for new sessions (`cwd`, `worktree`). It is one
JSON document in a table of its own (`session_group_catalog`, created when missing, on
SQLite or on the PostgreSQL every node of a cluster shares), changed only inside the
writer's transactions: each change reads the document, changes it and writes it back in
one transaction, so two changes never lose one another (on PostgreSQL the row is locked
first, for nodes writing at once).

Which sessions belong to a group is not in the catalog but in the session rows
(`SessionRow.category`): renaming or deleting a group refiles its sessions through their
actors (`transports.methods._session_groups`).

Every call is a checkpoint and may raise `StoreError`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

import attrs
import msgspec

from ._ops import SqlConnection

__all__ = ["GroupCatalog", "GroupDefaults", "SessionGroups", "UnknownGroup"]

_T = TypeVar("_T")

_SCHEMA: Final = """CREATE TABLE IF NOT EXISTS session_group_catalog(
    id INTEGER PRIMARY KEY,
    body TEXT NOT NULL
)"""
_LOCK: Final = "UPDATE session_group_catalog SET id = id WHERE id = 1"
_READ: Final = "SELECT body FROM session_group_catalog WHERE id = 1"
_WRITE: Final = """INSERT INTO session_group_catalog(id, body) VALUES (1, ?)
ON CONFLICT(id) DO UPDATE SET body = excluded.body"""
FIXED_SECTIONS: Final = ("ungrouped", "groups", "work")


class UnknownGroup(Exception):
    """No group of that name: `unknown session group: <name>`."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown session group: {name}")
        self.name = name


class GroupDefaults(msgspec.Struct, frozen=True, omit_defaults=True):
    """A group's defaults for the sessions made in it (`SessionGroupDefaults`)."""

    name: str
    cwd: str | None = None
    worktree: bool | None = None


class GroupCatalog(msgspec.Struct, frozen=True):
    """The catalog: group names in order, the sidebar's sections in order, defaults."""

    groups: tuple[str, ...] = ()
    sectionOrder: tuple[str, ...] = ()
    defaults: tuple[GroupDefaults, ...] = ()

    def listed(self) -> list[dict[str, Any]]:
        """`SessionGroup` rows: each name with its position."""
        return [{"name": name, "position": i} for i, name in enumerate(self.groups)]

    def defaults_listed(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for d in self.defaults:
            data = msgspec.to_builtins(d)
            assert isinstance(data, dict)
            out.append(data)
        return out


_DECODER: Final = msgspec.json.Decoder(GroupCatalog)
_ENCODER: Final = msgspec.json.Encoder()


def normalize_names(names: Sequence[str]) -> list[str]:
    """Trimmed, without empties or repeats, in order (OpenClaw's `normalizeGroupNames`)."""
    seen: set[str] = set()
    out: list[str] = []
    for raw in names:
        name = raw.strip()
        if name and name not in seen:
            seen.add(name)
            out.append(name)
    return out


def normalize_section_order(order: Sequence[str], groups: Sequence[str]) -> list[str]:
    """OpenClaw's `normalizeSidebarSectionOrder`: the fixed sections, `category:<group>` of
    a group there is, `catalog:<id>`; each once, in order."""
    known = set(groups)
    seen: set[str] = set()
    out: list[str] = []
    for raw in order:
        section = raw.strip()
        canonical: str | None = None
        if section in FIXED_SECTIONS:
            canonical = section
        elif section.startswith("category:"):
            name = section[len("category:") :].strip()
            canonical = f"category:{name}" if name and name in known else None
        elif section.startswith("catalog:"):
            ident = section[len("catalog:") :].strip()
            canonical = f"catalog:{ident}" if ident else None
        if canonical is not None and canonical not in seen:
            seen.add(canonical)
            out.append(canonical)
    return out


def _renamed_sections(order: Sequence[str], old: str, new: str | None) -> list[str]:
    out: list[str] = []
    for section in order:
        if section == f"category:{old}":
            if new is not None and f"category:{new}" not in order:
                out.append(f"category:{new}")
        else:
            out.append(section)
    return out


class _Store(Protocol):
    async def read(self, fn: Callable[[SqlConnection], _T]) -> _T: ...
    async def write(self, fn: Callable[[SqlConnection], _T], *, what: str = ...) -> _T: ...


@attrs.define
class SessionGroups:
    """The catalog in the gateway's `Store`."""

    store: _Store
    _created: bool = False

    async def _ensure(self) -> None:
        if not self._created:
            await self.store.write(lambda conn: conn.execute(_SCHEMA), what="create groups")
            self._created = True

    async def catalog(self) -> GroupCatalog:
        await self._ensure()
        return await self.store.read(_load)

    async def change(
        self, fn: Callable[[GroupCatalog], GroupCatalog | None]
    ) -> tuple[GroupCatalog, bool]:
        """Apply `fn` to the catalog in one transaction: its result is written (None:
        unchanged). Returns the catalog after, and whether it changed. `fn` runs in the
        writer's thread and must not block; what it raises fails the call (the batch it
        ran in goes on: nothing was written)."""
        await self._ensure()

        def write(conn: SqlConnection) -> tuple[GroupCatalog, bool] | BaseException:
            conn.execute(_LOCK)
            before = _load(conn)
            try:
                after = fn(before)
            except Exception as exc:  # handed back, not raised: the batch must not fail
                return exc
            if after is None or after == before:
                return before, False
            conn.execute(_WRITE, (_ENCODER.encode(after).decode(),))
            return after, True

        result = await self.store.write(write, what="change the session groups")
        if isinstance(result, BaseException):
            raise result
        return result

    async def register(self, name: str) -> bool:
        """Append `name` to the groups when it is not one (a category set by
        `sessions.patch`): whether it was added."""
        name = name.strip()
        if not name:
            return False

        def add(c: GroupCatalog) -> GroupCatalog | None:
            if name in c.groups:
                return None
            return msgspec.structs.replace(c, groups=(*c.groups, name))

        return (await self.change(add))[1]

    async def put(
        self,
        names: Sequence[str],
        section_order: Sequence[str] | None,
        refuse: Callable[[list[str]], None],
    ) -> tuple[GroupCatalog, bool]:
        """The groups become `names` (normalized), `section_order` (normalized) the
        sidebar's when given; `refuse(dropped)` is called with the groups this drops and
        may raise to refuse (in the writer's thread: it must not block)."""
        wanted = normalize_names(names)

        def put(c: GroupCatalog) -> GroupCatalog:
            refuse([g for g in c.groups if g not in wanted])
            order = c.sectionOrder if section_order is None else section_order
            return GroupCatalog(
                groups=tuple(wanted),
                sectionOrder=tuple(normalize_section_order(order, wanted)),
                defaults=tuple(d for d in c.defaults if d.name in wanted),
            )

        return await self.change(put)

    async def rename(self, old: str, new: str | None) -> GroupCatalog:
        """Group `old` renamed `new` in its place (merged into `new` when that is a group
        already), or with `new` None removed; its defaults and section follow. Raises
        `UnknownGroup`."""

        def rename(c: GroupCatalog) -> GroupCatalog:
            if old not in c.groups:
                raise UnknownGroup(old)
            return renamed(c, old, new)

        return (await self.change(rename))[0]

    async def set_defaults(self, name: str, cwd: str | None, worktree: bool) -> GroupCatalog:
        """Group `name`'s defaults for new sessions (none left: it has no entry). Raises
        `UnknownGroup`."""

        def update(c: GroupCatalog) -> GroupCatalog:
            if name not in c.groups:
                raise UnknownGroup(name)
            rest = [d for d in c.defaults if d.name != name]
            if cwd is not None or worktree:
                rest.append(GroupDefaults(name=name, cwd=cwd, worktree=worktree or None))
            order = {g: i for i, g in enumerate(c.groups)}
            rest.sort(key=lambda d: order.get(d.name, len(order)))
            return msgspec.structs.replace(c, defaults=tuple(rest))

        return (await self.change(update))[0]


def _load(conn: SqlConnection) -> GroupCatalog:
    row = conn.execute(_READ).fetchone()
    if row is None:
        return GroupCatalog()
    try:
        return _DECODER.decode(str(row[0]))
    except msgspec.DecodeError:
        return GroupCatalog()


def renamed(c: GroupCatalog, old: str, new: str | None) -> GroupCatalog:
    """The catalog with group `old` renamed `new` (in its place; merged into `new` when
    that is a group already) or, `new` None, removed; its defaults follow it."""
    groups: list[str] = []
    for name in c.groups:
        if name == old:
            if new is not None and new not in c.groups:
                groups.append(new)
        else:
            groups.append(name)
    defaults = [d for d in c.defaults if d.name != old]
    moved = next((d for d in c.defaults if d.name == old), None)
    if new is not None and moved is not None and all(d.name != new for d in defaults):
        defaults.append(msgspec.structs.replace(moved, name=new))
    return GroupCatalog(
        groups=tuple(groups),
        sectionOrder=tuple(_renamed_sections(c.sectionOrder, old, new)),
        defaults=tuple(defaults),
    )
