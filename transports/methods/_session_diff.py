"""`sessions.diff` (operator.read): what changed in a session's workspace checkout, as
OpenClaw 2026.9.6's Control UI shows it (the session's Changes panel), read with git.

`{sessionKey, agentId?, scope?, commit?}` answers `{sessionKey, root, branch?, baseRef?,
aheadCount?, commits?, mergeBase?, files: [{path, oldPath?, status, additions, deletions,
binary?, untracked?, patch?, truncated?}], additions, deletions, truncated?}` as
OpenClaw's `collectCheckoutDiff` does:

- The workspace is the session's agent's; not in a git checkout: no files and
  `unavailableReason: "not_git"`.
- The base: on a branch other than the remote's default (or `main`/`master`), where it
  forked from that one (`baseRef`, with the commits ahead of it, at most 50 listed); else
  `HEAD`. `scope` `all` (the default) is everything since the base, committed or not,
  untracked files included; `uncommitted` since `HEAD`; `commit` one commit of the branch
  (`commit` must be given with it and only with it; one not on the branch:
  `unavailableReason: "unknown_commit"`).
- Bounded: at most 500 files (100 untracked), a file's patch at most 100 KB, 1.5 MB of
  patches in all, no patches past 100,000 changed lines (`truncated` says so); git runs at
  most 10 s a command. Confined: a working-tree file's content is shown only for a regular
  file with one link whose real path is inside the checkout.

An unknown session is `INVALID_REQUEST`. Not as OpenClaw: the changes the workspace held
before the session began are not told apart (OpenClaw's session baseline).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import msgspec
import trio
from msgspec import UNSET, Meta, UnsetType

from runtime.protocol import invalid_request, opt

from ._context import Call, MethodTable
from ._submit import agent_spec, key_of

__all__ = ["register"]

MAX_FILES: Final = 500
MAX_UNTRACKED_FILES: Final = 100
MAX_PATCH_BYTES_PER_FILE: Final = 100_000
MAX_TOTAL_PATCH_BYTES: Final = 1_500_000
MAX_TOTAL_CHANGED_LINES: Final = 100_000
GIT_TIMEOUT_S: Final = 10.0
_PATCH_ARGS: Final = (
    "--patch",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
_EMPTY_TREES: Final = {
    "sha1": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
}
_STATUS: Final = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "T": "modified"}
_GIT_ENV: Final = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
_Key = Annotated[str, Meta(min_length=1)]


class SessionsDiffParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    sessionKey: _Key
    agentId: _Key | UnsetType = UNSET
    scope: Literal["all", "uncommitted", "commit"] | UnsetType = UNSET
    commit: _Key | UnsetType = UNSET


def register(methods: MethodTable) -> None:
    methods.add("sessions.diff", sessions_diff, SessionsDiffParams, scope="operator.read")


async def _git(cwd: str, *args: str, ok: tuple[int, ...] = (0,)) -> str | None:
    """git's output, or None when it failed (or took longer than `GIT_TIMEOUT_S`)."""
    with trio.move_on_after(GIT_TIMEOUT_S):
        try:
            done = await trio.run_process(
                ["git", "-c", "core.quotePath=false", *args],
                cwd=cwd,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env={**os.environ, **_GIT_ENV},
            )
        except (OSError, ValueError):  # no git; an argument git cannot take (a NUL)
            return None
        if done.returncode in ok:
            return done.stdout.decode("utf-8", "replace")
    return None


async def _checkout(cwd: str) -> tuple[str, str | None, str | None, str] | None:
    """(root, head, branch, object format) of the checkout `cwd` is in, or None."""
    out = await _git(
        cwd,
        "rev-parse",
        "--show-object-format",
        "--show-toplevel",
        "--verify",
        "--quiet",
        "HEAD",
        ok=(0, 1),
    )
    if out is None:
        return None
    lines = out.rstrip("\n").split("\n")
    if len(lines) < 2:
        return None
    fmt, root = lines[0], lines[1]
    head = lines[2] if len(lines) > 2 and re.fullmatch(r"[0-9a-f]{40,64}", lines[2]) else None
    branch = None
    if head:
        name = (await _git(root, "rev-parse", "--abbrev-ref", "HEAD") or "").strip()
        branch = name if name and name != "HEAD" else None
    return root, head, branch, fmt


async def _base(root: str, head: str, branch: str | None) -> tuple[str, str]:
    """(base commit, baseRef) as OpenClaw's `resolveSessionDiffBase`."""
    remote = (await _git(root, "symbolic-ref", "--short", "refs/remotes/origin/HEAD") or "").strip()
    short = remote.removeprefix("origin/")
    if remote and short and branch and branch != short:
        merge = (await _git(root, "merge-base", remote, head) or "").strip()
        if merge:
            return merge, short
    if branch and branch not in ("main", "master"):
        for candidate in ("main", "master", "origin/main", "origin/master"):
            found = (await _git(root, "rev-parse", "--verify", "--quiet", candidate) or "").strip()
            if found:
                merge = (await _git(root, "merge-base", found, head) or "").strip()
                if merge:
                    return merge, candidate
    return head, "HEAD"


def _commits(text: str) -> list[dict[str, str]]:
    out = []
    for line in text.split("\n"):
        sha, sep, subject = line.partition("\x00")
        if sep and sha:
            out.append({"sha": sha, "subject": subject})
    return out


async def _metadata(root: str, base: str, head: str) -> dict[str, Any]:
    if base in ("HEAD", head):
        return {}
    span = f"{base}..{head}"
    ahead = (await _git(root, "rev-list", "--count", span) or "").strip()
    listed = await _git(root, "log", "--max-count=50", "--format=%h%x00%s", span, "--")
    merge = await _git(root, "show", "--no-patch", "--format=%h%x00%s", base, "--")
    meta: dict[str, Any] = {}
    if ahead.isdigit():
        meta["aheadCount"] = int(ahead)
    if listed is not None:
        meta["commits"] = _commits(listed)
    first = _commits(merge or "")
    if first:
        meta["mergeBase"] = first[0]
    return meta


def _name_status(text: str) -> list[tuple[str, str, str | None]]:
    """(status, path, old path) of `git diff --name-status -z`."""
    tokens = text.split("\x00")
    out: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(tokens) and tokens[i]:
        code = tokens[i][0]
        if code in "RC" and i + 2 < len(tokens):
            old, new = tokens[i + 1], tokens[i + 2]
            out.append(("renamed" if code == "R" else "added", new, old if code == "R" else None))
            i += 3
        elif i + 1 < len(tokens):
            out.append((_STATUS.get(code, "modified"), tokens[i + 1], None))
            i += 2
        else:
            break
    return out


def _numstat(text: str) -> dict[str, tuple[int, int, bool]]:
    """path -> (additions, deletions, binary) of `git diff --numstat -z`."""
    tokens = text.split("\x00")
    out: dict[str, tuple[int, int, bool]] = {}
    i = 0
    while i < len(tokens) and tokens[i]:
        added, _, rest = tokens[i].partition("\t")
        deleted, _, path = rest.partition("\t")
        if not path and i + 2 < len(tokens):  # a rename: the paths follow
            path = tokens[i + 2]
            i += 3
        else:
            i += 1
        binary = added == "-" or deleted == "-"
        out[path] = (0 if binary else int(added or 0), 0 if binary else int(deleted or 0), binary)
    return out


def _split_patch(text: str) -> dict[str, str]:
    chunks: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=diff --git )", text):
        if not chunk.startswith("diff --git "):
            continue
        new = re.search(r"(?m)^\+\+\+ b/(.*)$", chunk)
        renamed = re.search(r"(?m)^rename to (.*)$", chunk)
        if new:
            path = new.group(1)
        elif renamed:
            path = renamed.group(1)
        else:
            head = chunk.split("\n", 1)[0]
            path = head.rsplit(" b/", 1)[-1]
        chunks[path] = chunk
    return chunks


def _header(chunk: str) -> tuple[int | None, bool]:
    """(additions of a new file, binary) from a patch's first hunk header."""
    found = re.search(r"(?m)^(@@ [^\n]*|Binary files [^\n]* differ|GIT binary patch)$", chunk)
    if found is None:
        return None, False
    line = found.group(1)
    added = re.match(r"^@@ -0,0 \+1(?:,(\d+))? @@", line)
    return (int(added.group(1) or 1) if added else None), not line.startswith("@@ ")


def _patchable(real_root: str, rel: str) -> bool:
    path = os.path.join(real_root, rel)
    try:
        info = os.lstat(path)
        real = os.path.realpath(path)
    except OSError:
        return False
    regular = info.st_nlink == 1 and (info.st_mode & 0o170000) == 0o100000
    return regular and (real == real_root or real.startswith(real_root + os.sep))


class _Budget:
    def __init__(self) -> None:
        self.remaining = MAX_TOTAL_PATCH_BYTES

    def take(self, file: dict[str, Any], chunk: str | None) -> None:
        size = len(chunk.encode()) if chunk is not None else 0
        if chunk is None or size > MAX_PATCH_BYTES_PER_FILE or size > self.remaining:
            file["truncated"] = True
            return
        self.remaining -= size
        file["patch"] = chunk


async def _tracked(
    root: str, real_root: str, revisions: list[str], budget: _Budget
) -> tuple[list[dict[str, Any]], bool]:
    entries = _name_status(
        await _git(root, "diff", "-M", "--name-status", "-z", *revisions, "--") or ""
    )
    if not entries:
        return [], False
    stats = _numstat(await _git(root, "diff", "-M", "--numstat", "-z", *revisions, "--") or "")
    lines = sum(a + d for a, d, _ in stats.values())
    text = None
    if lines <= MAX_TOTAL_CHANGED_LINES:
        text = await _git(root, "diff", "-M", *_PATCH_ARGS, *revisions, "--")
    chunks = _split_patch(text) if text is not None else {}
    files: list[dict[str, Any]] = []
    for status, path, old in entries[:MAX_FILES]:
        added, deleted, binary = stats.get(path, (0, 0, False))
        chunk = chunks.get(path)
        binary = binary or (chunk is not None and _header(chunk)[1])
        file: dict[str, Any] = {
            "path": path,
            "status": status,
            "additions": added,
            "deletions": deleted,
        }
        if old:
            file["oldPath"] = old
        if binary:
            file["binary"] = True
        elif len(revisions) == 2 or status == "deleted" or _patchable(real_root, path):
            budget.take(file, chunk)
        else:
            file["truncated"] = True
        files.append(file)
    return files, len(entries) > MAX_FILES


async def _untracked(
    root: str, real_root: str, budget: _Budget
) -> tuple[list[dict[str, Any]], bool]:
    listed = await _git(root, "ls-files", "--others", "--exclude-standard", "-z") or ""
    paths = [p for p in listed.split("\x00") if p]
    files: list[dict[str, Any]] = []
    for path in paths[:MAX_UNTRACKED_FILES]:
        file: dict[str, Any] = {
            "path": path,
            "status": "added",
            "additions": 0,
            "deletions": 0,
            "untracked": True,
        }
        files.append(file)
        if not _patchable(real_root, path):
            file["truncated"] = True
            continue
        patch = await _git(
            root, "diff", *_PATCH_ARGS, "--no-index", "--", "/dev/null", path, ok=(0, 1)
        )
        if patch is None or not patch.startswith("diff --git "):
            file["truncated"] = True
            continue
        added, binary = _header(patch)
        file["additions"] = added or 0
        if binary:
            file["binary"] = True
        else:
            budget.take(file, patch)
    return files, len(paths) > MAX_UNTRACKED_FILES


async def checkout_diff(cwd: str, scope: str, commit: str | None) -> dict[str, Any]:
    """OpenClaw's `collectCheckoutDiff` of the checkout `cwd` is in."""
    found = await _checkout(cwd)
    if found is None:
        return {"files": [], "additions": 0, "deletions": 0, "unavailableReason": "not_git"}
    root, head, branch, fmt = found
    base, base_ref = await _base(root, head, branch) if head else (_EMPTY_TREES.get(fmt, ""), "")
    fields: dict[str, Any] = {"root": root}
    if branch:
        fields["branch"] = branch
    if base_ref:
        fields["baseRef"] = base_ref
    if head and base:
        fields.update(await _metadata(root, base, head))
    unknown = {**fields, "files": [], "additions": 0, "deletions": 0}
    unknown["unavailableReason"] = "unknown_commit"
    revisions: list[str]
    if scope == "commit":
        if not head or base in ("HEAD", head) or commit is None:
            return unknown
        sha = (
            await _git(
                root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^{{commit}}"
            )
            or ""
        ).strip()
        if not sha:
            return unknown
        in_head = await _git(root, "merge-base", "--is-ancestor", sha, head) is not None
        in_base = await _git(root, "merge-base", "--is-ancestor", sha, base) is not None
        if not in_head or in_base:
            return unknown
        parent = (await _git(root, "rev-parse", "--verify", "--quiet", f"{sha}^") or "").strip()
        revisions = [parent or _EMPTY_TREES.get(fmt, ""), sha]
    elif scope == "uncommitted":
        revisions = [head] if head else [base]
    else:
        revisions = [base]
    real_root = await trio.to_thread.run_sync(os.path.realpath, root)
    budget = _Budget()
    tracked, cut = await _tracked(root, real_root, [r for r in revisions if r], budget)
    untracked: list[dict[str, Any]] = []
    cut_untracked = False
    if scope != "commit":
        untracked, cut_untracked = await _untracked(root, real_root, budget)
    files = sorted([*tracked, *untracked], key=lambda f: f["path"])
    result = {
        **fields,
        "files": files,
        "additions": sum(f["additions"] for f in files),
        "deletions": sum(f["deletions"] for f in files),
    }
    if cut or cut_untracked or any(f.get("truncated") for f in files):
        result["truncated"] = True
    return result


async def sessions_diff(call: Call, params: SessionsDiffParams) -> dict[str, Any]:
    scope = opt(params.scope) or "all"
    if (scope == "commit") != (not isinstance(params.commit, UnsetType)):
        raise invalid_request(
            "invalid sessions.diff params: commit must be set if and only if scope is commit"
        )
    sup = call.gateway.actors.supervisor
    key = key_of(call, params.sessionKey, opt(params.agentId))
    if await sup.store.get_session(key) is None:
        raise invalid_request(f"session not found: {params.sessionKey}")
    agent = agent_spec(call, opt(params.agentId), key)
    workspace: Path = await sup.workspace_for(agent.id, agent.workspace)
    diff = await checkout_diff(str(workspace), scope, opt(params.commit))
    return {"sessionKey": params.sessionKey, **diff}
