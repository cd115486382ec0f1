"""`sessions.files.list/get` and `sessions.diff` over a real socket, as OpenClaw 2026.9.6's
Control UI reads a session's Files and Changes panels: the files the session's runs read
and wrote (driven through the local model's tool directives), the workspace browsed and
searched, contents previewed (text with its hash, an image, unsupported binary, too large),
nothing reached outside the workspace (a link out, a hard link), and the git changes of
the workspace checkout by scope (all, uncommitted, commit). Answers validate against the
2026.9.6 definitions; refusals are `INVALID_REQUEST` naming what."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from tests._schema import validate
from transports import GatewayClient, GatewayRequestError

KEY = "agent:main:files"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def directive(name: str, args: dict[str, Any]) -> str:
    return f"[[tool:{name} {json.dumps(args)}]]"


async def run_tools(c: GatewayClient, text: str, n: int) -> None:
    final = await c.request(
        "agent",
        {"message": text, "sessionKey": KEY, "idempotencyKey": f"tools-{n}"},
        expect_final=True,
    )
    assert final["status"] == "ok", final


async def refused(c: GatewayClient, method: str, params: dict[str, Any]) -> GatewayRequestError:
    with pytest.raises(GatewayRequestError) as info:
        await c.request(method, params)
    assert info.value.code == "INVALID_REQUEST", info.value
    return info.value


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@x"
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True)
    return done.stdout.decode()


def workspace_files(ws: Path, outside: Path) -> None:
    (ws / "docs").mkdir(parents=True)
    (ws / "notes.txt").write_text("first line\n")
    (ws / "docs" / "guide.md").write_text("# Guide\n")
    (ws / "pic.png").write_bytes(PNG)
    (ws / "blob.bin").write_bytes(b"\xff\xfe\x00\x01" * 10)
    (ws / "big.txt").write_text("x" * 300_000)
    secret = outside / "secret.txt"
    secret.write_text("do not show")
    (ws / "escape.txt").symlink_to(secret)
    os.link(secret, ws / "hard.txt")


async def test_the_files_a_session_touched_and_its_workspace(connect, gateway, tmp_path) -> None:
    ws = tmp_path / "state" / "workspaces" / "main"
    ws.mkdir(parents=True, exist_ok=True)
    workspace_files(ws, tmp_path)
    with trio.fail_after(60):
        async with connect(on_event=lambda *_: None) as c:
            await run_tools(
                c,
                directive("read", {"path": "notes.txt"})
                + directive("write", {"path": "docs/new.txt", "content": "hello"})
                + directive("read", {"path": "/etc/hostname"}),
                1,
            )
            listed = await c.request("sessions.files.list", {"sessionKey": KEY})
            validate("SessionsFilesListResult", listed)
            assert listed["root"] == str(ws.resolve()) and listed["gitCheckout"] is False
            assert [(f["path"], f["kind"], f["missing"]) for f in listed["files"]] == [
                ("docs/new.txt", "modified", False),
                ("notes.txt", "read", False),
            ]  # /etc/hostname is outside the workspace: not listed
            browser = listed["browser"]
            assert browser["path"] == ""
            names = [(e["name"], e["kind"], e.get("sessionKind")) for e in browser["entries"]]
            assert names[0] == ("docs", "directory", "modified")
            assert ("notes.txt", "file", "read") in names
            assert "escape.txt" not in [n for n, _, _ in names]  # a link out of it
            sub = await c.request("sessions.files.list", {"sessionKey": KEY, "path": "docs"})
            validate("SessionsFilesListResult", sub)
            assert sub["browser"]["parentPath"] == ""
            assert {e["path"] for e in sub["browser"]["entries"]} == {
                "docs/guide.md",
                "docs/new.txt",
            }
            found = await c.request("sessions.files.list", {"sessionKey": KEY, "search": "GUIDE"})
            assert [e["path"] for e in found["browser"]["entries"]] == ["docs/guide.md"]
            outside = await c.request("sessions.files.list", {"sessionKey": KEY, "path": "../.."})
            assert "browser" not in outside

            async def get(path: str) -> dict[str, Any]:
                got = await c.request("sessions.files.get", {"sessionKey": KEY, "path": path})
                validate("SessionsFilesGetResult", got)
                return dict(got["file"])

            text = await get("notes.txt")
            assert (text["content"], text["contentEncoding"], text["previewKind"]) == (
                "first line\n",
                "utf8",
                "text",
            )
            assert text["hash"] == hashlib.sha256(b"first line\n").hexdigest()
            assert (await get("docs/new.txt"))["content"] == "hello"
            assert (await get("docs/guide.md"))["kind"] == "read"
            image = await get("pic.png")
            assert (image["previewKind"], image["mimeType"]) == ("image", "image/png")
            assert (await get("blob.bin"))["previewKind"] == "unsupported"
            for hidden in ("escape.txt", "hard.txt", "../secret.txt", "/etc/hostname", "nope"):
                error = await refused(c, "sessions.files.get", {"sessionKey": KEY, "path": hidden})
                assert error.message == "session file not found", hidden
            error = await refused(c, "sessions.files.get", {"sessionKey": KEY, "path": "big.txt"})
            assert error.message == "session file is too large to preview"
            for method, params, named in (
                ("sessions.files.list", {"sessionKey": "agent:main:none"}, "session not found"),
                ("sessions.files.get", {"sessionKey": KEY}, "path"),
                ("sessions.files.list", {"sessionKey": KEY, "bogus": 1}, "bogus"),
            ):
                assert named in (await refused(c, method, params)).message


async def test_the_changes_of_the_workspace_checkout(connect, gateway, tmp_path) -> None:
    ws = tmp_path / "state" / "workspaces" / "main"
    ws.mkdir(parents=True, exist_ok=True)
    with trio.fail_after(60):
        async with connect(on_event=lambda *_: None) as c:
            await run_tools(c, "hello", 1)

            async def diff(**params: Any) -> dict[str, Any]:
                got: dict[str, Any] = await c.request(
                    "sessions.diff", {"sessionKey": KEY, **params}
                )
                validate("SessionsDiffResult", got)
                return got

            assert (await diff())["unavailableReason"] == "not_git"
            git(ws, "init", "-q", "-b", "main")
            (ws / "kept.txt").write_text("one\ntwo\n")
            (ws / "gone.txt").write_text("bye\n")
            git(ws, "add", ".")
            git(ws, "commit", "-q", "-m", "base")
            git(ws, "checkout", "-q", "-b", "feature")
            (ws / "kept.txt").write_text("one\n2\nthree\n")
            git(ws, "commit", "-q", "-am", "edit kept")
            sha = git(ws, "rev-parse", "--short", "HEAD").strip()
            (ws / "gone.txt").unlink()
            (ws / "fresh.txt").write_text("a\nb\n")

            everything = await diff()
            assert everything["branch"] == "feature" and everything["baseRef"] == "main"
            assert everything["aheadCount"] == 1
            assert [c["subject"] for c in everything["commits"]] == ["edit kept"]
            by_path = {f["path"]: f for f in everything["files"]}
            assert (by_path["kept.txt"]["status"], by_path["kept.txt"]["additions"]) == (
                "modified",
                2,
            )
            assert by_path["kept.txt"]["deletions"] == 1
            assert "+three" in by_path["kept.txt"]["patch"]
            assert by_path["gone.txt"]["status"] == "deleted"
            assert by_path["fresh.txt"]["untracked"] is True
            assert by_path["fresh.txt"]["additions"] == 2
            assert everything["additions"] == sum(f["additions"] for f in everything["files"])

            uncommitted = await diff(scope="uncommitted")
            assert {f["path"] for f in uncommitted["files"]} == {"gone.txt", "fresh.txt"}
            one = await diff(scope="commit", commit=sha)
            assert [f["path"] for f in one["files"]] == ["kept.txt"]
            assert (await diff(scope="commit", commit="main"))["unavailableReason"] == (
                "unknown_commit"
            )
            assert (await diff(scope="commit", commit="no-such"))["unavailableReason"] == (
                "unknown_commit"
            )
            for params, named in (
                ({"scope": "commit"}, "commit must be set"),
                ({"commit": sha}, "commit must be set"),
                ({"scope": "later"}, "scope"),
                ({"sessionKey": "agent:main:none"}, "session not found"),
            ):
                error = await refused(c, "sessions.diff", {"sessionKey": KEY, **params})
                assert named in error.message
