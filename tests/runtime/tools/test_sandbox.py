"""The path-escape corpus: every escape is refused with a clear reason, every inside path works."""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Callable
from pathlib import Path

import hypothesis
import hypothesis.strategies as st
import pytest
import trio

from runtime.tools._errors import SandboxError
from runtime.tools._sandbox import ensure_workspace, resolve_in_workspace

Setup = Callable[[Path, Path], str]


async def _resolve(workspace: Path, user_path: str, *, for_write: bool) -> Path:
    """As the file tools call it: in a worker thread."""
    return await trio.to_thread.run_sync(
        functools.partial(resolve_in_workspace, workspace, user_path, for_write=for_write)
    )  # (workspace, outside dir) -> the path the model sends


def _plain(path: str) -> Setup:
    return lambda ws, out: path


def _abs_outside(ws: Path, out: Path) -> str:
    return str(out / "secret.txt")


def _symlink_to_etc(ws: Path, out: Path) -> str:
    (ws / "etc").symlink_to("/etc")
    return "etc/passwd"


def _symlink_dir_chain_out(ws: Path, out: Path) -> str:
    # a/b -> ../c (inside), c -> outside: the second hop leaves.
    (ws / "a").mkdir()
    (ws / "a" / "b").symlink_to("../c")
    (ws / "c").symlink_to(out)
    return "a/b/secret.txt"


def _dangling_symlink_out(ws: Path, out: Path) -> str:
    (ws / "new.txt").symlink_to(out / "does-not-exist-yet.txt")
    return "new.txt"


def _final_symlink_out(ws: Path, out: Path) -> str:
    (ws / "notes.txt").symlink_to(out / "secret.txt")
    return "notes.txt"


def _relative_symlink_up(ws: Path, out: Path) -> str:
    (ws / "up").symlink_to("../outside")
    return "up/secret.txt"


def _device_via_symlink(ws: Path, out: Path) -> str:
    (ws / "null").symlink_to("/dev/null")
    return "null"


def _fifo_inside(ws: Path, out: Path) -> str:
    os.mkfifo(ws / "pipe")
    return "pipe"


def _socket_inside(ws: Path, out: Path) -> str:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(ws / "sock"))
    return "sock"


def _symlink_loop(ws: Path, out: Path) -> str:
    (ws / "loop1").symlink_to("loop2")
    (ws / "loop2").symlink_to("loop1")
    return "loop1"


def _abs_with_dotdot(ws: Path, out: Path) -> str:
    return f"{ws}/../outside/secret.txt"


def _file_as_dir(ws: Path, out: Path) -> str:
    (ws / "f.txt").write_text("x")
    return "f.txt/../../outside/secret.txt"


# The escapes in OpenClaw 2026.9.6's words, as its gateway with `tools.fs.workspaceOnly` answers them
# (seen on its peer): the root, then the path as given or the symlink that leaves.
ESCAPES: list[tuple[str, Setup, str]] = [
    ("dotdot", _plain("../x"), "Path escapes sandbox root ({ws}): ../x"),
    ("nested-dotdot", _plain("a/../../x"), "Path escapes sandbox root ({ws}): a/../../x"),
    ("etc-passwd", _plain("/etc/passwd"), "Path escapes sandbox root ({ws}): /etc/passwd"),
    ("abs-outside", _abs_outside, "Path escapes sandbox root ({ws}): {out}/secret.txt"),
    ("abs-dotdot", _abs_with_dotdot, "Path escapes sandbox root ({ws}): {ws}/../outside/"),
    ("symlink-to-etc", _symlink_to_etc, "Symlink escapes sandbox root ({ws}): {ws}/etc"),
    (
        "symlink-dir-chain-out",
        _symlink_dir_chain_out,
        "Symlink escapes sandbox root ({ws}): {ws}/c",
    ),
    (
        "dangling-symlink-out",
        _dangling_symlink_out,
        "Symlink escapes sandbox root ({ws}): {ws}/new.txt",
    ),
    (
        "final-symlink-out",
        _final_symlink_out,
        "Symlink escapes sandbox root ({ws}): {ws}/notes.txt",
    ),
    ("relative-symlink-up", _relative_symlink_up, "Symlink escapes sandbox root ({ws}): {ws}/up"),
    ("device-via-symlink", _device_via_symlink, "Symlink escapes sandbox root ({ws}): {ws}/null"),
    ("fifo", _fifo_inside, "is a FIFO"),
    ("socket", _socket_inside, "is a socket"),
    ("nul-byte", _plain("a\0b"), "NUL byte"),
    ("empty", _plain(""), "empty"),
    ("home", _plain("~/.ssh/id_rsa"), "Path escapes sandbox root ({ws}): ~/.ssh/id_rsa"),
    ("symlink-loop", _symlink_loop, "too many levels of symbolic links"),
    ("through-a-file", _file_as_dir, "Path component is not a directory: {ws}/f.txt"),
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("secret")
    return out


@pytest.mark.parametrize("for_write", [False, True], ids=["read", "write"])
@pytest.mark.parametrize(
    ("setup", "reason"), [(s, r) for _, s, r in ESCAPES], ids=[i for i, _, _ in ESCAPES]
)
async def test_escape_is_refused_with_its_reason(
    workspace: Path, outside: Path, setup: Setup, reason: str, for_write: bool
) -> None:
    user_path = setup(workspace, outside)
    with trio.fail_after(5), pytest.raises(SandboxError) as info:
        await _resolve(workspace, user_path, for_write=for_write)
    assert reason.format(ws=workspace, out=outside) in str(info.value)


def _nested_new_file(ws: Path) -> tuple[str, Path]:
    return "new/dir/file.txt", ws / "new" / "dir" / "file.txt"


def _abs_inside(ws: Path) -> tuple[str, Path]:
    (ws / "a").mkdir()
    return str(ws / "a" / "f.txt"), ws / "a" / "f.txt"


def _symlink_inside(ws: Path) -> tuple[str, Path]:
    (ws / "real").mkdir()
    (ws / "real" / "f.txt").write_text("x")
    (ws / "alias").symlink_to("real")
    return "alias/f.txt", ws / "real" / "f.txt"


def _abs_symlink_inside(ws: Path) -> tuple[str, Path]:
    (ws / "f.txt").write_text("x")
    (ws / "link").symlink_to(ws / "f.txt")
    return "link", ws / "f.txt"


def _dotdot_staying_inside(ws: Path) -> tuple[str, Path]:
    (ws / "a").mkdir()
    return "a/../b.txt", ws / "b.txt"


def _dangling_symlink_inside(ws: Path) -> tuple[str, Path]:
    (ws / "later").symlink_to("sub/later.txt")
    return "later", ws / "sub" / "later.txt"


def _dot(ws: Path) -> tuple[str, Path]:
    return "./x/./y.txt", ws / "x" / "y.txt"


ALLOWED: list[tuple[str, Callable[[Path], tuple[str, Path]]]] = [
    ("nested-new-file", _nested_new_file),
    ("absolute-inside", _abs_inside),
    ("symlink-inside", _symlink_inside),
    ("absolute-symlink-inside", _abs_symlink_inside),
    ("dotdot-staying-inside", _dotdot_staying_inside),
    ("dangling-symlink-inside", _dangling_symlink_inside),
    ("dot-components", _dot),
]


@pytest.mark.parametrize("setup", [s for _, s in ALLOWED], ids=[i for i, _ in ALLOWED])
async def test_inside_path_resolves_to_its_real_path(
    workspace: Path, setup: Callable[[Path], tuple[str, Path]]
) -> None:
    user_path, expected = setup(workspace)
    with trio.fail_after(5):
        assert await _resolve(workspace, user_path, for_write=True) == expected


async def test_workspace_named_through_a_symlink_accepts_absolute_paths_by_either_name(
    tmp_path: Path,
) -> None:
    real = ensure_workspace(tmp_path / "real-ws")
    named = tmp_path / "ws-link"
    named.symlink_to(real)
    with trio.fail_after(5):
        assert await _resolve(named, f"{named}/a.txt", for_write=True) == real / "a.txt"
        assert await _resolve(named, f"{real}/a.txt", for_write=True) == real / "a.txt"
        assert await _resolve(named, "a.txt", for_write=False) == real / "a.txt"


async def test_a_directory_can_be_resolved_for_reading_but_not_for_writing(workspace: Path) -> None:
    (workspace / "d").mkdir()
    with trio.fail_after(5):
        assert await _resolve(workspace, "d", for_write=False) == workspace / "d"
        with pytest.raises(SandboxError, match="is a directory"):
            await _resolve(workspace, "d", for_write=True)


async def test_ensure_workspace_creates_it_and_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with trio.fail_after(5):
        ws = await trio.to_thread.run_sync(ensure_workspace, tmp_path / "a" / "b")
        assert ws.is_dir()
        assert await trio.to_thread.run_sync(ensure_workspace, ws) == ws
        with pytest.raises(SandboxError, match="not a directory"):
            await trio.to_thread.run_sync(ensure_workspace, tmp_path / "file")


# --- property: whatever the path, the answer is a refusal or a real path inside -------------

_COMPONENTS = ["..", ".", "a", "b", "new", "in_link", "out_link", "up_link", "file.txt", ""]


@pytest.fixture(scope="module")
def maze(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A workspace full of links in and out, shared by the hypothesis examples (read-only)."""
    root = tmp_path_factory.mktemp("maze")
    ws = ensure_workspace(root / "ws")
    out = root / "outside"
    (out / "a").mkdir(parents=True)
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "file.txt").write_text("x")
    (ws / "a" / "in_link").symlink_to("../a")
    (ws / "a" / "out_link").symlink_to(out)
    (ws / "b").symlink_to(ws / "a" / "b")
    (ws / "up_link").symlink_to("..")
    return ws, out


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(
    parts=st.lists(st.sampled_from(_COMPONENTS), min_size=1, max_size=8),
    absolute=st.booleans(),
    for_write=st.booleans(),
)
async def test_any_path_is_refused_or_resolves_inside(
    maze: tuple[Path, Path], parts: list[str], absolute: bool, for_write: bool
) -> None:
    ws, _ = maze
    user_path = "/".join(parts)
    if absolute:
        user_path = f"{ws}/{user_path}"
    with trio.fail_after(5):
        try:
            resolved = await _resolve(ws, user_path, for_write=for_write)
        except SandboxError as exc:
            assert str(exc)
            return
        real = await trio.to_thread.run_sync(os.path.realpath, resolved)
    assert resolved.is_relative_to(ws)
    assert real == str(resolved)
