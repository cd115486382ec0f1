"""The Control UI's user preferences on a shared file: two holders (two processes on one
state dir) see each other's writes, compare-and-set holds between them, and a write that
would pass the bound writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.devices import FileDocument
from runtime.users import (
    MAX_PREFS_BYTES,
    PREFS_RELATIVE_PATH,
    PrefsTooLarge,
    UserPrefs,
    UserPrefsError,
    open_user_prefs,
)


async def test_two_holders_of_one_file_see_each_others_writes(tmp_path: Path) -> None:
    a = await open_user_prefs(tmp_path)
    b = UserPrefs(FileDocument(tmp_path / PREFS_RELATIVE_PATH))
    assert await a.get() == {}
    assert await a.set({"ui.theme": "dark", "ui.font": "mono"}, None)
    assert await b.get(["ui.theme"]) == {"ui.theme": "dark"}
    assert await b.set({"ui.theme": "light"}, {"ui.theme": "dark"})
    # a still holds "dark" in memory: the check is against the file, under its lock
    assert not await a.set({"ui.theme": "blue"}, {"ui.theme": "dark"})
    assert await a.get() == {"ui.theme": "light", "ui.font": "mono"}
    assert await a.set({"ui.font": None}, {"ui.theme": "light"})
    assert await b.get() == {"ui.theme": "light"}
    assert (tmp_path / PREFS_RELATIVE_PATH).stat().st_mode & 0o777 == 0o600


async def test_a_write_past_the_bound_writes_nothing(tmp_path: Path) -> None:
    prefs = await open_user_prefs(tmp_path)
    assert await prefs.set({"ui.theme": "dark"}, None)
    with pytest.raises(PrefsTooLarge):
        await prefs.set({"big": "x" * MAX_PREFS_BYTES}, None)
    again = await open_user_prefs(tmp_path)
    assert await again.get() == {"ui.theme": "dark"}


async def test_a_file_that_is_not_preferences_is_named(tmp_path: Path) -> None:
    path = tmp_path / PREFS_RELATIVE_PATH
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 7, "entries": {}}')
    with pytest.raises(UserPrefsError, match="unknown format version 7") as found:
        await open_user_prefs(tmp_path)
    assert str(path) in str(found.value)
    path.write_text("[1, 2]")
    with pytest.raises(UserPrefsError, match="is not a preferences file"):
        await open_user_prefs(tmp_path)
